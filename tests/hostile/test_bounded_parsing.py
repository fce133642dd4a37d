"""Every byte a document contributes is parsed in bounded time and memory.

Each test shows the growth with two small inputs (see tests/fixtures/growth.py) and failed on
the code before its fix.
"""
from __future__ import annotations

import re

import growth
import pytest
from fakes import HashEmbedder

from citeline import extractors
from citeline.extractors import html, text
from citeline.pipeline import sentences
from citeline.pipeline.chunk import chunk_document
from citeline.pipeline.prepare import prepare
from citeline.pipeline.walk import SourceFile
from citeline.schemas.errors import Timeout
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp


def _sniff_many(head: bytes, times: int = 10) -> None:
    for _ in range(times):
        extractors.for_bytes(head, "notes.md")


def test_the_html_sniff_is_linear_in_a_run_of_empty_comments():
    # Before: each extra '<!---->' doubled the time (16 comments: 10 ms, 40: never ends),
    # and the sniff runs on every file in the flow's own process.
    small, large = (b"<!---->" * k + b"\nplain notes\n" for k in (8, 16))
    assert extractors.for_bytes(large, "notes.md") is text
    assert growth.ratio(_sniff_many, small, large) < 8  # was ~250 (2 ** 8)


def test_the_html_sniff_still_reads_comments_and_a_bom_before_the_tag():
    assert html.claims(b"\xef\xbb\xbf\n<!-- generated -->\n<!---->\n<!DOCTYPE html><html>")
    assert html.claims(b"<HTML lang=en>")
    assert not html.claims(b"<!-- never closed <html>")
    assert not html.claims(b"<!-- a --> text <html>")
    assert not html.claims(b"<htmlx>")


# --- Major 3: text paths linear in a long line ------------------------------------------
# Each ratio is for an input 8 (or 4) times larger: linear stays near 8 (4), quadratic
# goes past 50. Before the fix each was over the bound (measured in the comments).


def test_the_abbreviation_check_is_linear_in_one_long_line():
    # It copied the line up to every candidate period: 34x for 8x the line.
    small, large = ("Ab. Cd. " * n for n in (5_000, 40_000))
    assert growth.ratio(sentences.sentence_spans, small, large, repeat=3) < 20


def test_sentence_candidates_are_linear_in_a_run_of_dots():
    # Every dot of the run restarted the candidate pattern over the rest of it: 12x for 4x.
    small, large = ("." * n + "x" for n in (1_000, 8_000))
    assert sentences.sentence_spans(large) == [(0, 8_001)]
    assert growth.ratio(sentences.sentence_spans, small, large, repeat=3) < 20


def _chunk(text: str) -> list:
    return chunk_document(text, "t", "d")


def test_the_whitespace_cutter_is_linear_in_one_long_line():
    # Trimming each piece copied the rest of the line: 36x for 8x.
    small, large = ("abcdefg " * n for n in (25_000, 200_000))
    assert growth.ratio(_chunk, small, large, repeat=3) < 20


def _dot_leaders(width: int) -> list:
    """32 KB of paragraphs, each a run of ``width`` dots and a word: one chunk each."""
    unit = "." * width + " abcdefghijk\n\n"
    return chunk_document(unit * (32_768 // len(unit)), "t", "d", "C", len(unit), 0)


def test_the_table_of_contents_check_is_linear_in_the_chunk():
    # The dot-leader pattern was searched from every dot: per chunk quadratic in the
    # budget, so the same 32 KB took 12x longer in chunks 8x wider (4.1 s at 1,024).
    assert len(_dot_leaders(1024)) == 31
    assert growth.ratio(_dot_leaders, 128, 1024, repeat=3) < 4


def _title(blanks: int) -> str:
    return text.extract(b"# a" + b" " * blanks + b"b\n", "notes.md").title


def test_the_markdown_title_is_linear_in_a_run_of_blanks():
    # The lazy title before "\s*#*\s*$" was cubic: 64x for 4x the blanks (6,000: minutes).
    assert _title(3) == "a   b"
    assert growth.ratio(_title, 200, 800, repeat=3) < 10


class _CountingEmbedder(HashEmbedder):
    """The shared fake, counting what it is asked to encode."""

    embedded = 0

    def embed_counted(self, texts):
        self.embedded += len(texts)
        return super().embed_counted(texts)


def test_chunking_is_stopped_by_the_document_time_limit_as_it_goes(tmp_path):
    # Before: the limit was looked at only once the whole text was cut ("stopped at the end of
    # chunking"), so a long text ran its full chunking time past --timeout in the flow's process.
    # 3 MB of short sentences on one line take seconds to chunk; the limit is a fraction of that.
    path = tmp_path / "one-line.md"
    path.write_text("Ab. Cd. " * 375_000)
    embedder = _CountingEmbedder()
    settings = IndexSettings(db=str(tmp_path / "index"), timeout_s=0.3)
    with pytest.raises(Timeout, match=r"0.3 s limit \(--timeout\); stopped at chunking, ") as caught:
        prepare(SourceFile(str(path), str(tmp_path), "one-line.md"), embedder, IndexStamp("fake", 8), settings)
    reached, size = (int(n.replace(",", "")) for n in re.findall(r"([\d,]+) of ([\d,]+) characters", str(caught.value))[0])
    assert caught.value.stage == "chunk" and size == 3_000_000 and reached < size
    assert embedder.embedded == 0


def test_a_chunking_told_to_stop_stops_where_it_is():
    reached = []

    def stop_at_a_third(at: int) -> None:
        reached.append(at)
        if at > 1_000_000:
            raise Timeout("stopped")

    with pytest.raises(Timeout):
        chunk_document("Ab. Cd. " * 375_000, "t", "d", progress=stop_at_a_third)
    assert max(reached) < 1_100_000  # it told where it was every few characters, not at the end


def test_a_table_is_laid_out_in_time_linear_in_its_width():
    # The header's distinct cells were counted again for every column, so a
    # header and one record of 2,500 / 10,000 fields took 0.12 / 2.3 s (19x for 4x).
    from citeline.extractors import delimited
    from citeline.schemas.options import ExtractOptions

    def record(n: int) -> bytes:
        return (",".join(f"h{i}" for i in range(n)) + "\n" + ",".join(str(i) for i in range(n)) + "\n").encode()

    small, large = record(2_500), record(10_000)
    doc = delimited.extract(large, "wide.csv", ExtractOptions())
    assert "h9999" in doc.text and "9999" in doc.text
    assert growth.ratio(lambda data: delimited.extract(data, "wide.csv", ExtractOptions()), small, large, repeat=3) < 8


def test_html_is_walked_in_time_linear_in_its_nesting():
    # Whether an element held a block was asked by rescanning its subtree at
    # every nesting level: 10 / 160 spans around 20,000 empty <b>s took 0.24 / 5.3 s (22x).
    from citeline.schemas.options import ExtractOptions

    def page(depth: int) -> bytes:
        return ("<html><body>" + "<span>" * depth + "<b></b>" * 20_000 + "<p>the one paragraph</p>"
                + "</span>" * depth + "</body></html>").encode()

    assert "the one paragraph" in html.extract(page(160), "deep.html", ExtractOptions()).text
    assert growth.ratio(lambda data: html.extract(data, "deep.html", ExtractOptions()), page(10), page(160),
                        repeat=3) < 4


def _book(spine_repeats: int) -> bytes:
    import io

    from ebooklib import epub as ebook

    book = ebook.EpubBook()
    book.set_identifier("echo-1")
    book.set_title("Echo")
    chapter = ebook.EpubHtml(title="Echo", file_name="c0.xhtml")
    chapter.content = "<h1>Echo</h1><p>" + "The same chapter again and again. " * 20 + "</p>"
    book.add_item(chapter)
    book.add_item(ebook.EpubNcx())
    book.add_item(ebook.EpubNav())
    book.spine = [chapter] * spine_repeats
    out = io.BytesIO()
    ebook.write_epub(out, book)
    return out.getvalue()


def test_a_chapter_the_spine_lists_many_times_is_read_once():
    # A spine naming one chapter 600 times made ~24,000 characters per byte
    # of a 4 KB file until the time limit.
    from citeline.extractors import epub

    doc = epub.extract(_book(600), "echo.epub")
    assert doc.text.count("The same chapter again and again.") == 20


@pytest.mark.parametrize("kind", ["html", "docx", "odt", "pptx", "epub"])
def test_every_extractor_refuses_text_far_beyond_its_file(kind, make):
    # The amplification bound tables had (max_text_ratio characters per byte)
    # holds for every extractor that builds its text block by block.
    from citeline.extractors import docx, epub, odt, pptx
    from citeline.schemas.errors import TooLarge
    from citeline.schemas.options import ExtractOptions

    module, data = {"html": (html, make.guide_html), "docx": (docx, make.handbook_docx),
                    "odt": (odt, lambda: _odt_with_text("A paragraph of honest text. " * 40)),
                    "pptx": (pptx, make.deck_pptx), "epub": (epub, lambda: _book(1))}[kind]
    data = data()
    assert len(module.extract(data, f"doc.{kind}").text) > 32  # read whole with the defaults
    tight = ExtractOptions(max_text_ratio=1e-6, min_text_chars=32)
    with pytest.raises(TooLarge, match="refused as an amplification"):
        module.extract(data, f"doc.{kind}", tight)


def _odt_with_text(text: str) -> bytes:
    import io
    import zipfile

    content = ('<?xml version="1.0" encoding="UTF-8"?><office:document-content '
               'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
               'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>'
               f'<text:p>{text}</text:p></office:text></office:body></office:document-content>')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED)
        z.writestr("content.xml", content)
    return out.getvalue()


def _giant_page_pdf(side_pt: float, ink: bool) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=side_pt, height=side_pt)
    if ink:
        page.draw_rect(pymupdf.Rect(10, 10, side_pt / 2, side_pt / 2), color=(0, 0, 0), fill=(0, 0, 0))
    return doc.tobytes()


def test_a_giant_pdf_page_fails_too_large_not_as_a_parser_error():
    # MuPDF refused to render a 100,000-point page ("FzErrorLimit: Overly
    # large image"), and the document failed parser-error.
    from citeline.extractors import pdf
    from citeline.schemas.errors import NoText, TooLarge

    with pytest.raises(TooLarge, match=r"page 1 is 1,389 x 1,389 inches: too large to render for OCR"):
        pdf.extract(_giant_page_pdf(100_000, ink=True), "poster.pdf")
    with pytest.raises(NoText):  # a blank giant page is looked at coarser, and is blank
        pdf.extract(_giant_page_pdf(100_000, ink=False), "blank-poster.pdf")
