"""OpenDocument text (.odt) and EPUB e-books are indexed, and other zip-based formats fail naming
themselves: all failed before as "a zip archive". The files are written here as LibreOffice lays them out:
a stored ``mimetype`` entry first, then ``content.xml``."""
import io
import shutil
import subprocess
import zipfile

import pytest

from citeline import extractors
from citeline.extractors import epub, odt
from citeline.schemas.errors import Corrupt, NoText, UnsupportedType
from citeline.schemas.locator import Passage

_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
       'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
       'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
       'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"')
_STYLE_NS = 'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"'
BODY = """
<text:h text:outline-level="1">Harbour report</text:h>
<text:p>The harbour<text:s/>opened in <text:span>1887</text:span>.<text:note><text:note-citation>1</text:note-citation>
<text:note-body><text:p>Dates follow the port ledger.</text:p></text:note-body></text:note></text:p>
<text:list><text:list-item><text:p>cranes were added</text:p></text:list-item>
<text:list-item><text:p>the quay was widened</text:p></text:list-item></text:list>
<text:h text:outline-level="2">Tonnage</text:h>
<table:table><table:table-row><table:table-cell table:number-columns-spanned="2"><text:p>Cargo by year</text:p>
</table:table-cell><table:covered-table-cell/></table:table-row>
<table:table-row><table:table-cell><text:p>Year</text:p></table:table-cell><table:table-cell><text:p>Tonnes</text:p>
</table:table-cell></table:table-row>
<table:table-row><table:table-cell><text:p>1900</text:p></table:table-cell><table:table-cell><text:p>4200</text:p>
</table:table-cell></table:table-row></table:table>
<text:p>See the map.<draw:frame><draw:text-box><text:p>Pier four holds the grain silo.</text:p></draw:text-box>
</draw:frame></text:p>
<office:annotation><text:p>a reviewer comment</text:p></office:annotation>
"""


def package(body: str, mimetype: str = "application/vnd.oasis.opendocument.text", content: str | None = None,
            master_pages: str = "") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), mimetype)  # stored, first, as ODF requires
        z.writestr("content.xml", content if content is not None else
                   f'<?xml version="1.0"?><office:document-content {_NS}><office:body><office:text>{body}'
                   f"</office:text></office:body></office:document-content>", compress_type=zipfile.ZIP_DEFLATED)
        if master_pages:
            z.writestr("styles.xml", f'<?xml version="1.0"?><office:document-styles {_NS} {_STYLE_NS}>'
                                     f"<office:master-styles>{master_pages}</office:master-styles></office:document-styles>")
    return buf.getvalue()


def test_an_odt_is_read_in_document_order_with_its_sections(h):
    data = package(BODY)
    assert extractors.for_bytes(data[:4096], "report.odt") is odt
    assert extractors.for_bytes(data[:4096], "no-suffix") is odt  # by its mimetype, not its name
    doc = odt.extract(data, "report.odt")
    h.check_segments(doc)
    words = ["Harbour report", "The harbour opened in 1887.", "Dates follow the port ledger.",
             "- cranes were added\n- the quay was widened", "Tonnage", "Cargo by year", "1900 | 4200",
             "See the map.", "Pier four holds the grain silo."]
    starts = [h.find(doc, w)[0] for w in words]
    assert starts == sorted(starts)
    assert "## Harbour report" in doc.text and "## Tonnage" in doc.text
    assert h.locators_of(doc, "4200") == [Passage("Harbour report > Tonnage")]
    assert "reviewer comment" not in doc.text and "1887.1" not in doc.text  # no comment, no footnote mark
    assert doc.title == "report"


def test_page_headers_and_footers_are_read_once_each_after_the_body(h):
    """styles.xml's master pages: a header on the first page and the others, the same footer on
    two page styles, and a header switched off. LibreOffice writes them so (checked below)."""
    pages = """
    <style:master-page style:name="Standard">
      <style:header><text:p>Harbour Authority, 12 Quay Street</text:p></style:header>
      <style:header-first><text:p>Annual report <text:span>1900</text:span></text:p></style:header-first>
      <style:footer><text:p>Confidential: port ledger extract</text:p></style:footer>
    </style:master-page>
    <style:master-page style:name="Landscape">
      <style:header style:display="false"><text:p>switched-off header</text:p></style:header>
      <style:footer><text:p>Confidential: port ledger extract</text:p></style:footer>
    </style:master-page>"""
    doc = odt.extract(package("<text:h>Report</text:h><text:p>The harbour opened in 1887.</text:p>",
                              master_pages=pages), "letter.odt")
    h.check_segments(doc)
    assert h.locators_of(doc, "12 Quay Street") == [Passage("Page header")]
    assert h.locators_of(doc, "Annual report 1900") == [Passage("Page header")]
    assert h.locators_of(doc, "port ledger extract") == [Passage("Page footer")]
    assert doc.text.count("port ledger extract") == 1 and "switched-off" not in doc.text
    assert h.find(doc, "opened in 1887")[0] < h.find(doc, "12 Quay Street")[0]  # the body first
    assert odt.extract(package("<text:p>No styles part.</text:p>"), "plain.odt").text == "No styles part."


@pytest.mark.skipif(not shutil.which("soffice"), reason="LibreOffice is not installed (make setup installs it)")
def test_a_libreoffice_odt_keeps_its_letterhead_and_footer(tmp_path, h):
    """A Word file with a page header and footer, saved as .odt by LibreOffice itself."""
    import docx

    word = docx.Document()
    word.sections[0].header.paragraphs[0].text = "Harbour Authority, 12 Quay Street"
    word.sections[0].footer.paragraphs[0].text = "Confidential: port ledger extract"
    word.add_heading("Report", 1)
    word.add_paragraph("The harbour opened in 1887.")
    word.save(tmp_path / "letter.docx")
    subprocess.run(["soffice", "--headless", f"-env:UserInstallation=file://{tmp_path}/profile", "--convert-to", "odt",
                    "--outdir", str(tmp_path), str(tmp_path / "letter.docx")], check=True, capture_output=True, timeout=120)
    doc = odt.extract((tmp_path / "letter.odt").read_bytes(), "letter.odt")
    h.check_segments(doc)
    assert h.locators_of(doc, "The harbour opened in 1887.") == [Passage("Report")]
    assert h.locators_of(doc, "Harbour Authority, 12 Quay Street") == [Passage("Page header")]
    assert h.locators_of(doc, "Confidential: port ledger extract") == [Passage("Page footer")]


def test_broken_or_empty_odt_fail_with_their_reason():
    with pytest.raises(Corrupt, match="XML"):
        odt.extract(package("", content="<office:document-content"), "bad.odt")
    with pytest.raises(NoText):
        odt.extract(package("<text:p>   </text:p>"), "blank.odt")


def test_an_epub_is_read_chapter_by_chapter_in_spine_order(h):
    from ebooklib import epub as ebook

    book = ebook.EpubBook()
    book.set_identifier("harbour-1")
    book.set_title("Harbour Book")
    chapters = []
    for k, (title, body) in enumerate([("Tides", "<p>The tide rose over the quay at dawn.</p>"),
                                       ("Cargo", "<p>Grain was unloaded by the cranes.</p><table><tr><th>Year</th>"
                                                 "<th>Tonnes</th></tr><tr><td>1900</td><td>4200</td></tr></table>")]):
        chapter = ebook.EpubHtml(title=title, file_name=f"c{k}.xhtml")
        chapter.content = f"<h1>{title}</h1>{body}"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = tuple(chapters)
    book.add_item(ebook.EpubNcx())
    book.add_item(ebook.EpubNav())
    book.spine = ["nav", chapters[1], chapters[0]]  # the spine, not the file names, sets the order
    out = io.BytesIO()
    ebook.write_epub(out, book)
    data = out.getvalue()
    assert extractors.for_bytes(data[:4096], "book.epub") is epub
    doc = epub.extract(data, "book.epub")
    h.check_segments(doc)
    assert h.find(doc, "Grain was unloaded")[0] < h.find(doc, "The tide rose")[0]
    assert h.locators_of(doc, "4200") == [Passage("Cargo")] and doc.title == "Harbour Book"
    assert "Table of contents" not in doc.text and doc.text.count("Tides") == 1  # the nav page is no chapter
    with pytest.raises(Corrupt):
        epub.extract(data[: len(data) // 2], "cut.epub")


def test_another_opendocument_fails_naming_its_format():
    data = package("", mimetype="application/vnd.oasis.opendocument.presentation", content="<x/>")
    with pytest.raises(UnsupportedType, match=r"an OpenDocument presentation \(\.odp\)"):
        extractors.for_bytes(data[:4096], "slides.odp")
