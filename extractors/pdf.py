"""PDF with PyMuPDF: per-page reading order, running headers and footers removed, OCR for
pages without a usable text layer, one ``Page`` locator (1-based, with its printed label)
per page.

Bad input fails with a specific reason: empty, not a PDF, corrupt, truncated (MuPDF
repairs a cut-off file silently, so the missing ``%%EOF`` is checked), encrypted with a
user password (an empty user password opens), too many pages, past the time limit.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from citeline.schemas.document import Canonical, Segment
from citeline.schemas.errors import Corrupt, Empty, Encrypted, NoText, TooLarge, Truncated
from citeline.schemas.locator import Page
from citeline.schemas.options import ExtractOptions

from citeline.extractors import garble, pdf_tables
from citeline.extractors.assemble import Assembler
from citeline.extractors.clean import Deadline, clean
from citeline.extractors.headings import Fonts, line_style, mark_headings
from citeline.extractors.ocr import (Block, Line, PageText, base_language, blocks_text, language_notes, ocr_image,
                                    reading_order, vocabulary)

if TYPE_CHECKING:
    import pymupdf

NAME = "pdf"
# 2: a page whose content stream MuPDF cannot decode is reported (a note, or "corrupt"
# when no page is readable) instead of silently coming back empty.
# 3: a page whose every line matches a running header keeps them (slides were left empty).
# 4: headings (larger or bold short lines, numbered titles) become "## " lines, so the
# chunker sees sections; capitals hyphenated at a line end are rejoined.
# 5: a compound broken at one of its own hyphens keeps it ("text-to-\nimage").
# 6: a sentence running over a page break stays one paragraph (it was split in two chunks).
# 7: OCR reads again the lines Tesseract's layout analysis dropped (ocr 4).
# 8: a text layer is judged garbled in its own script (extractors/garble.py): Arabic, Korean or
#    Chinese layers are kept, not OCR'd as English; junk-shaped Latin tokens make a layer garbled.
# 9: tables PyMuPDF finds (ruling lines) laid out as sheets are, in place of their lines.
# 10: columns found under a short line crossing their gutter (a centred running header, an author
#     line), blocks level with a spanning one read in its row; rotated margin text (vertical stamps)
#     removed with a note.
# 11: scanned pages OCR'd in the language they are in (ocr 6) and the language noted (item 3).
# 12: a line in a header zone is a running header only where its repeats are in a similar font size:
#     page 1's large title was removed with the small running heads that repeat it (item 6).
# 13: right-to-left spans rebuilt from their characters, an Arabic ligature's second letter put
#     after the glyph it belongs to (MuPDF gave "األ" for "الأ").
# 14: a label alone over a header row of its own starts a new table
#    (extractors.tables.split_tables).
# 15: OCR reads light text on a dark fill, a table image's header row (ocr 7).
# 16: a table's notes (rows of labels alone after its last figures) shown once after it, not
#    repeated under its headers in pieces without a number (extractors.tables).
VERSION = "16"
# Parses untrusted binary input in C: run in a killable worker process (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".pdf",)
MAGIC = (b"%PDF-",)

# PyMuPDF is imported where a PDF is read, not with this module: the registry imports every
# extractor in every indexing process, and a PDF is read in its isolated worker (it cost
# 0.4 s of a one-file sync of Markdown).
def _text_flags() -> int:
    """get_text's flags: whitespace as printed, text clipped to the media box, ligatures kept
    (``ligatures_in_order`` splits them)."""
    import pymupdf

    return pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP | pymupdf.TEXT_PRESERVE_LIGATURES


_ZONE = 0.12  # running headers/footers live in the top and bottom 12% of a page
_GIVE_UP_AFTER = 3  # re-OCRs that were no better before a text layer is trusted as is
_FEW_WORDS = 20  # a page this short that is mostly image is OCR'd
# MuPDF reports a damaged content stream as a warning and carries on with what it decoded.
_DAMAGE = re.compile(r"^(library error|format error|syntax error|read error)\b.*", re.MULTILINE)


@dataclass
class _Page:
    number: int
    label: str
    height: float
    text: PageText
    ocr: str = ""  # why it was OCR'd: "" (it wasn't), "no text layer", "garbled text layer"


@dataclass
class _Run:
    """State of one extraction: options, deadline, notes, the OCR give-up counter."""

    options: ExtractOptions
    deadline: Deadline
    vocab: frozenset[str] | None
    notes: list[str] = field(default_factory=list)
    ocr_no_better: int = 0
    unreadable: int = 0
    turned: list[tuple[int, int]] = field(default_factory=list)  # (page, rotated margin lines left out)
    last_lang: str = ""  # the OCR language of the page OCR'd last: the next one's first guess


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of a PDF, one segment per page that has text.

    Raises:
        Empty, Corrupt, Truncated, Encrypted, TooLarge, NoText, Timeout.
    """
    options = options or ExtractOptions()
    run = _Run(options, Deadline(options.time_limit_s), vocabulary(base_language(options.ocr_lang)))
    doc = _open(data, options)
    with doc:
        if doc.is_repaired:
            run.notes.append("MuPDF repaired the file's cross-reference table")
        pages = [_read(doc, i, run) for i in range(doc.page_count)]
        # Tables where PyMuPDF finds them, laid out as sheets are (extractors/pdf_tables.py).
        tables = pdf_tables.find(doc, [p.number for p in pages if not p.ocr and p.text.blocks], run.deadline,
                                 _text_flags(), run.notes)
        title = (doc.metadata or {}).get("title", "").strip() or PurePath(name).stem
    removed = remove_running_lines(pages)
    fonts = Fonts(line for page in pages if not page.ocr for block in page.text.blocks for line in block.lines)
    for page in pages:
        if not page.ocr:  # OCR output is in reading order already, and has no fonts
            page.text.blocks = mark_headings(order_blocks(page.text.blocks), fonts)
            pdf_tables.replace(page.text, tables.get(page.number, ()), run.options)
    text, segments = _assemble(pages, run)
    if not text and run.unreadable == len(pages):
        raise Corrupt(f"no page of the {len(pages)} can be read; {run.notes[-1]}")
    if not text:
        raise NoText(f"no text on any page ({len(pages)} page{'s' * (len(pages) > 1)}, OCR included)")
    _ocr_notes(pages, run)
    if removed:
        run.notes.append(f"{removed} running header/footer lines removed")
    if run.turned:
        lines = sum(n for _, n in run.turned)
        run.notes.append(f"{lines} rotated margin line{'s' * (lines > 1)} removed as boilerplate "
                         f"(page{'s' * (len(run.turned) > 1)} {_numbers([p for p, _ in run.turned])})")
    return Canonical(
        text=text,
        title=title,
        extractor=NAME,
        extractor_version=VERSION,
        segments=tuple(segments),
        notes=tuple(run.notes),
    )


def _open(data: bytes, options: ExtractOptions) -> pymupdf.Document:
    import pymupdf

    if not data:
        raise Empty("empty file (0 bytes)")
    # Readers accept up to 1 KB of junk before the header; sniffing does not (a Markdown
    # file may quote "%PDF-1.7"), so such a file reaches here by its .pdf suffix.
    if b"%PDF-" not in data[:1024]:
        raise Corrupt(f"not a PDF: the file starts with {data[:24]!r}, not %PDF-")
    pymupdf.TOOLS.mupdf_warnings(reset=True)
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except pymupdf.EmptyFileError:
        raise Empty("empty file") from None
    except (pymupdf.FileDataError, pymupdf.mupdf.FzErrorBase) as exc:
        raise Corrupt(f"corrupt PDF, MuPDF cannot open it: {exc}") from None
    try:
        _check(doc, data, options)
    except Exception:  # safe: re-raised at once; only closes the document it opened
        doc.close()
        raise
    return doc


def _check(doc: pymupdf.Document, data: bytes, options: ExtractOptions) -> None:
    import pymupdf

    if doc.needs_pass and not doc.authenticate(""):
        raise Encrypted("the PDF is encrypted with a user password; it cannot be read without it")
    if doc.is_repaired and b"%%EOF" not in data[-2048:]:
        warnings = pymupdf.TOOLS.mupdf_warnings().splitlines()
        raise Truncated(
            f"the PDF is cut off: it ends without %%EOF and MuPDF had to rebuild it "
            f"({doc.page_count} pages recovered from {len(data)} bytes"
            + (f"; MuPDF: {warnings[0]}" if warnings else "") + ")"
        )
    if doc.page_count == 0:
        raise Corrupt("the PDF has no pages")
    if doc.page_count > options.max_pages:
        raise TooLarge(f"{doc.page_count} pages, over the limit of {options.max_pages} (max_pages)")


# ------------------------------------------------------------------------ one page


def page_damage(warnings: str) -> str:
    """The first MuPDF warning that says a page's content could not be decoded, or ""."""
    found = _DAMAGE.search(warnings or "")
    return found.group(0).strip() if found else ""


def _read(doc: pymupdf.Document, index: int, run: _Run) -> _Page:
    import pymupdf

    number = index + 1
    run.deadline.check(f"page {number} of {doc.page_count}")
    pymupdf.TOOLS.mupdf_warnings(reset=True)
    try:
        page = doc.load_page(index)
        label = page_label(page.get_label()) if doc.is_pdf else ""
        layer, turned = _text_layer(page)
    except (pymupdf.mupdf.FzErrorBase, RuntimeError) as exc:
        run.notes.append(f"page {number} could not be read: {exc}")
        run.unreadable += 1
        return _Page(number, "", 0.0, PageText([]))
    result = _Page(number, label, page.rect.height, layer)
    if turned:
        run.turned.append((number, turned))
    raw = "\n".join(line.text for block in layer.blocks for line in block.lines)
    damage = page_damage(pymupdf.TOOLS.mupdf_warnings(reset=True))
    if not raw.strip() and not _has_ink(page, run.options.ocr_max_pixels):
        if damage:  # a blank page is fine; one blank because its content cannot be decoded is said so
            run.notes.append(f"page {number} could not be read: its content is damaged (MuPDF: {damage})")
            run.unreadable += 1
        return result
    if damage:
        run.notes.append(f"page {number} is damaged, its text may be incomplete (MuPDF: {damage})")
    if not raw.strip():
        result.text, result.ocr = _ocr(page, run), "no text layer"
        return result
    # Judged in the layer's own script (extractors/garble.py): one OCR cannot read is kept as it is.
    layer_says = garble.judge(raw, run.vocab, base_language(run.options.ocr_lang), run.options.ocr_min_word_ratio)
    tokens = layer_says.tokens
    if run.ocr_no_better >= _GIVE_UP_AFTER or not layer_says.readable:
        return result
    if layer_says.garbled:
        scanned = _ocr(page, run)
        if garble.better(garble.judge(_raw(scanned), run.vocab, base_language(run.options.ocr_lang)), layer_says):
            result.text, result.ocr = scanned, f"garbled text layer ({layer_says.why.split(':')[0]})"
        else:
            run.ocr_no_better += 1
    elif tokens < _FEW_WORDS and _image_cover(page) >= 0.5:
        # A scan carrying a stamp or a title as text ("Scanned by ..."): the words are
        # in the image.
        scanned = _ocr(page, run)
        if scanned.words >= 2 * max(tokens, 5):
            result.text, result.ocr = scanned, "scanned page with little text layer"
        else:
            run.ocr_no_better += 1
    return result


def _image_cover(page: pymupdf.Page) -> float:
    """Share of the page area under images (overlaps counted twice, capped at 1)."""
    import pymupdf

    area = abs(page.rect)
    if not area:
        return 0.0
    covered = sum(abs(pymupdf.Rect(info["bbox"]) & page.rect) for info in page.get_image_info())
    return min(1.0, covered / area)


def page_label(raw: str) -> str:
    """The printed label; PyMuPDF hands back UTF-16 label strings still hex-encoded.

    >>> page_label("<FEFF0031>"), page_label("A-<FEFF0069>"), page_label("iv")
    ('1', 'A-i', 'iv')
    """
    return _HEX_UTF16.sub(lambda m: bytes.fromhex(m.group(1)).decode("utf-16-be", "replace"), raw)


_HEX_UTF16 = re.compile(r"<FEFF((?:[0-9A-Fa-f]{4})*)>")


def _text_layer(page: pymupdf.Page) -> tuple[PageText, int]:
    """Blocks of the page's text layer, in MuPDF's order (see ``order_blocks``), less rotated
    margin text; and how many such lines were left out."""
    blocks, turned = [], []
    for raw in _rtl_in_order(page, page.get_text("dict", flags=_text_flags())["blocks"]):
        if raw.get("type") != 0:
            continue
        lines = []
        for line in raw["lines"]:
            made = Line("".join(span["text"] for span in line["spans"]), tuple(line["bbox"]), *line_style(line["spans"]))
            if made.text.strip():
                (lines if _horizontal(line.get("dir", (1.0, 0.0))) else turned).append(made)
        if lines:
            blocks.append(Block(lines))
    kept = [line for line in turned if not in_margin(line.box, [ln.box for b in blocks for ln in b.lines],
                                                      page.rect.width)]
    for line in kept:  # rotated text inside the body (a table's turned header) stays, as its own block
        blocks.append(Block([line]))
    return PageText(blocks), len(turned) - len(kept)


_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")  # Hebrew, Arabic and their presentation forms


def _rtl_in_order(page: pymupdf.Page, blocks: list[dict]) -> list[dict]:
    """The blocks, each right-to-left span's text rebuilt from its characters in logical order.

    MuPDF hands the second letter of an Arabic ligature glyph (lam-alef: "لأ") as a zero-width
    character at the glyph's right edge, *before* the glyph's first letter, so "الأ" reads "األ"
    (docling's right_to_left_02.pdf: 1 word in 5 broken). A zero-width character standing at the
    right edge of the glyph after it belongs after that glyph. Only pages holding such script pay
    for the character-level read (``rawdict``, same flags, so the same blocks, lines and spans).
    """
    if not any(_RTL.search(span["text"]) for block in blocks for line in block.get("lines", ())
               for span in line["spans"]):
        return blocks
    raw = page.get_text("rawdict", flags=_text_flags())["blocks"]
    for block, raw_block in zip(blocks, raw):
        for line, raw_line in zip(block.get("lines", ()), raw_block.get("lines", ())):
            for span, raw_span in zip(line["spans"], raw_line["spans"]):
                if _RTL.search(span["text"]):
                    span["text"] = ligatures_in_order(raw_span["chars"])
    return blocks


def ligatures_in_order(chars: list[dict]) -> str:
    """The characters' text, each zero-width one moved after the glyph whose right edge it marks.

    >>> box = lambda c, x0, x1: {"c": c, "origin": (x0, 0), "bbox": (x0, 0, x1, 10)}
    >>> ligatures_in_order([box("ا", 110.6, 113.8), box("أ", 110.6, 110.6), box("ل", 102.7, 110.6)])
    'الأ'
    >>> ligatures_in_order([box("a", 0, 5), box("b", 5, 9)])
    'ab'
    """
    out = [c["c"] for c in chars]
    i = 0
    while i < len(chars) - 1:
        here, after = chars[i]["bbox"], chars[i + 1]["bbox"]
        if here[2] - here[0] < 0.01 and after[2] - after[0] >= 0.01 and abs(after[2] - here[0]) < 0.01 \
                and _RTL.match(out[i]) and _RTL.match(out[i + 1]):
            out[i], out[i + 1] = out[i + 1], out[i]
            i += 2
        else:
            i += 1
    return "".join(out)


def _horizontal(direction) -> bool:
    return abs(direction[1]) < 0.1 and direction[0] > 0


def in_margin(box, body: list, width: float) -> bool:
    """Whether a rotated line lies beside the page's horizontal text, not among it: a vertical
    stamp ("jbell on DSKJLSW7X2PROD with PROPOSALS", arXiv's identifier) in the left or right
    margin. With no horizontal text the page is turned as a whole, and nothing is margin.

    >>> body = [(72, 100, 540, 110), (72, 120, 300, 130)]
    >>> in_margin((20, 200, 30, 600), body, 612), in_margin((300, 140, 310, 200), body, 612)
    (True, False)
    """
    if not body:
        return False
    left, right = min(b[0] for b in body), max(b[2] for b in body)
    return box[2] <= left + 2 or box[0] >= right - 2 or (box[0] + box[2]) / 2 < 0.06 * width \
        or (box[0] + box[2]) / 2 > 0.94 * width


def order_blocks(blocks: list[Block]) -> list[Block]:
    """Reading order: columns kept apart, bands between full-width blocks."""
    groups = reading_order([b.box for b in blocks], min_gap=6.0)
    return [blocks[i] for group in groups for i in group]


def _raw(text: PageText) -> str:
    return "\n".join(line.text for block in text.blocks for line in block.lines)


_INK_DPI = 24  # enough to tell a blank page from one with anything on it
_MIN_OCR_DPI = 36  # below this Tesseract reads no body text


def _dpi_within(page: pymupdf.Page, dpi: float, max_pixels: int) -> float:
    """``dpi``, or less where the page rendered at it would pass ``max_pixels``."""
    inches = (page.rect.width / 72) * (page.rect.height / 72)
    return min(dpi, (max_pixels / max(inches, 1e-6)) ** 0.5)


def _has_ink(page: pymupdf.Page, max_pixels: int) -> bool:
    """Anything visible at all: a blank page needs no OCR. A giant page is looked at coarser:
    MuPDF refuses to render one at 24 dpi ("Overly large image")."""
    import pymupdf

    zoom = _dpi_within(page, _INK_DPI, max_pixels) / 72
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, alpha=False)
    return bool(pix.samples) and min(pix.samples) < 200


def _ocr(page: pymupdf.Page, run: _Run) -> PageText:
    """Render at ocr_dpi (less if the page would exceed ocr_max_pixels) and OCR.

    Raises:
        TooLarge: the page is so large that even a render at the least legible resolution
            passes ocr_max_pixels.
    """
    import pymupdf

    dpi = _dpi_within(page, run.options.ocr_dpi, run.options.ocr_max_pixels)
    if dpi < _MIN_OCR_DPI:
        raise TooLarge(f"page {page.number + 1} is {page.rect.width / 72:,.0f} x {page.rect.height / 72:,.0f} inches: "
                       f"too large to render for OCR at {_MIN_OCR_DPI} dpi within {run.options.ocr_max_pixels:,} "
                       "pixels (ocr_max_pixels)")
    pix = page.get_pixmap(dpi=int(dpi), colorspace=pymupdf.csGRAY, alpha=False)
    pixels = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.stride)[:, : pix.width]
    image = Image.fromarray(pixels, "L")
    scale = page.rect.width / pix.width  # pixels to PDF points
    read = ocr_image(image, run.options.ocr_lang, scale=scale, deadline=run.deadline, guess=run.last_lang)
    run.last_lang = read.lang
    return read


# ------------------------------------------------------------ running headers/footers


def _norm(text: str) -> str:
    """Lower case, numbers (arabic or roman) as '#', letters only: 'Page 3 of 10' and
    'Page 4 of 10' compare equal."""
    text = re.sub(r"\d+", "#", text.lower())
    text = re.sub(r"\b[ivxlc]{1,7}\b", "#", text)
    return re.sub(r"[^a-z#]+", " ", text).strip()


def remove_running_lines(pages: list[_Page], window: int = 4) -> int:
    """Drop lines repeated in the top or bottom zone of nearby pages (±``window``:
    alternating odd/even headers still match), tolerant of page numbers and small
    differences (similarity ≥ 0.8). A page whose every line would go keeps them all:
    slides ("Slide 3: …" at the top, nothing else) would otherwise lose all their text.
    Returns how many lines were removed."""
    zones = [_zone_lines(p) for p in pages]
    drop: set[tuple[int, int]] = set()
    for p, lines in enumerate(zones):
        near = [q for q in range(max(0, p - window), min(len(pages), p + window + 1)) if q != p]
        edge = _edge_keys(lines)
        for key, (norm, y, size) in lines.items():
            # The outermost lines need one matching neighbour (a chapter header on its
            # chapter's two pages); lines further in need two.
            needed = 1 if key in edge or len(pages) <= 3 else 2
            hits = 0
            for q in near:
                hits += _matches(norm, y, size, zones[q])
                if hits >= needed:
                    drop.add((p, key))
                    break
    removed = 0
    for p, page in enumerate(pages):
        if _all_lines(page, p) <= drop:  # a slide's only line: the page's text, not its header
            continue
        for b, block in enumerate(page.text.blocks):
            kept = [line for k, line in enumerate(block.lines) if (p, (b, k)) not in drop]
            removed += len(block.lines) - len(kept)
            block.lines = kept
        page.text.blocks = [block for block in page.text.blocks if block.lines]
    return removed


def _all_lines(page: _Page, p: int) -> set[tuple[int, tuple[int, int]]]:
    return {(p, (b, k)) for b, block in enumerate(page.text.blocks) for k in range(len(block.lines))}


def _zone_lines(page: _Page) -> dict[tuple[int, int], tuple[str, float, float]]:
    """Lines in the header/footer zones: key (block, line) -> (normalised text, y as a
    fraction of the page height, font size)."""
    out = {}
    if page.height <= 0:
        return out
    for b, block in enumerate(page.text.blocks):
        for k, line in enumerate(block.lines):
            top, bottom = line.box[1] / page.height, line.box[3] / page.height
            if bottom <= _ZONE or top >= 1 - _ZONE:
                norm = _norm(line.text)
                if norm and len(norm) < 200:
                    out[(b, k)] = (norm, (top + bottom) / 2, line.size)
    return out


def _edge_keys(lines: dict[tuple[int, int], tuple[str, float, float]]) -> set[tuple[int, int]]:
    """The two outermost lines of the top zone and of the bottom zone."""
    top = sorted((y, key) for key, (_, y, _) in lines.items() if y < 0.5)
    bottom = sorted(((y, key) for key, (_, y, _) in lines.items() if y >= 0.5), reverse=True)
    return {key for _, key in top[:2] + bottom[:2]}


def _matches(norm: str, y: float, size: float, others: dict[tuple[int, int], tuple[str, float, float]]) -> bool:
    """Whether a zone line repeats one of ``others``: near the same height on the page, in a
    similar font size (page 1's title set large is not the running head that repeats it small:
    the title was removed with them), with (nearly) the same text."""
    for other, other_y, other_size in others.values():
        if abs(other_y - y) > 0.03:
            continue
        if size > 0 and other_size > 0 and max(size, other_size) > 1.25 * min(size, other_size):
            continue
        if other == norm:
            return True
        matcher = difflib.SequenceMatcher(None, norm, other, autojunk=False)
        if matcher.real_quick_ratio() >= 0.8 and matcher.quick_ratio() >= 0.8 and matcher.ratio() >= 0.8:
            return True
    return False


# ---------------------------------------------------------------------- assembly


def _assemble(pages: list[_Page], run: _Run) -> tuple[str, list[Segment]]:
    """Clean each page's text, then append it; offsets are recorded as it is appended.

    A page is a new paragraph unless its text carries on the previous page's sentence:
    then a line break joins them, so the chunker keeps the sentence whole and its chunk
    cites both pages.
    """
    built, last = Assembler(), ""
    for page in pages:
        text = clean(blocks_text(page.text.blocks), run.vocab)
        if text:
            sep = "\n" if continues(last, text) else "\n\n"
            built.add(text, Page(page.number, page.label, page.text.confidence), sep)
            last = text
    return built.text, list(built.segments)


# A sentence ends at . ! ? … or a colon, perhaps inside closing quotes or brackets.
_ENDS_SENTENCE = re.compile(r"[.!?…:][\"'”’)\]]*\s*\Z")
# The next page carries on when it starts in lower case, perhaps after an opening quote or bracket.
_CARRIES_ON = re.compile(r"\A[\"'“‘(\[]*[a-z]")


def continues(before: str, after: str) -> bool:
    """Whether ``after`` (a page's text) carries on the sentence ``before`` (the previous page's) left open.

    >>> continues("we cannot use an optimizer over", '"mini-batches" of data')
    True
    >>> continues("The page ends here.", "the next starts low")
    False
    >>> continues("## 2 Structure handling", "The next page")
    False
    """
    last_line = before.rsplit("\n", 1)[-1]
    if not before or last_line.startswith("#") or _ENDS_SENTENCE.search(before):
        return False
    return bool(_CARRIES_ON.match(after))


def _ocr_notes(pages: list[_Page], run: _Run) -> None:
    reasons: dict[str, list[int]] = {}
    for page in pages:
        if page.ocr:
            reasons.setdefault(page.ocr, []).append(page.number)
    if reasons:
        parts = [f"{why}: {_numbers(nums)}" for why, nums in reasons.items()]
        count = sum(map(len, reasons.values()))
        run.notes.append(f"OCR used on {count} page{'s' * (count > 1)} ({'; '.join(parts)})")
        run.notes.extend(language_notes([(page.number, page.text) for page in pages if page.ocr]))
    for page in pages:
        conf = page.text.confidence
        if page.ocr and conf is not None and conf < run.options.ocr_min_confidence:
            run.notes.append(f"low OCR confidence on page {page.number}: {conf:.0f}")


def _numbers(nums: list[int]) -> str:
    return ", ".join(map(str, nums[:20])) + (f" (+{len(nums) - 20} more)" if len(nums) > 20 else "")
