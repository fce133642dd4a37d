"""Word, PowerPoint, OpenDocument and legacy Excel files: structure, exact
locators, and a reason for every hostile input. Fixtures are written in code (make.py)."""
import pytest

from citeline.extractors import calc, docx, pptx
from citeline.pipeline.chunk import chunk_document
from citeline.pipeline.locate import locators_for
from citeline.query.cite import locator_fragment, locator_label
from citeline.schemas.errors import Corrupt, Empty, Encrypted, NoText, TooLarge, UnsupportedType
from citeline.schemas.locator import Passage, SheetRange, Slide
from citeline.schemas.options import ExtractOptions


@pytest.fixture(scope="session")
def handbook(make):
    return docx.extract(make.handbook_docx(), "handbook.docx")


@pytest.fixture(scope="session")
def deck(make):
    return pptx.extract(make.deck_pptx(), "deck.pptx")


@pytest.fixture(scope="session")
def ports(make):
    return calc.extract(make.services_ods(), "services.ods")


def _cite(canonical, phrase):
    """(section, fragment, label) of the E chunk quoting ``phrase``; its quote is exact."""
    chunks = [c for c in chunk_document(canonical.text, canonical.title, "d", "E") if phrase in c.content]
    assert len(chunks) == 1, phrase
    c = chunks[0]
    assert canonical.text[c.start:c.end] == c.content
    locators = locators_for(c.start, c.end, canonical.segments)
    return c.section, locator_fragment(locators, c.start, c.end), locator_label(canonical.title, c.section, locators)


# ------------------------------------------------------------------------------ docx


def test_docx_headings_become_sections_with_their_path(handbook, h):
    h.check_segments(handbook)
    assert handbook.title == "Harbour Handbook" and handbook.text.startswith("# Harbour Handbook\n\n")
    assert h.locators_of(handbook, "Use the package manager") == [Passage("Install > Linux")]
    assert h.locators_of(handbook, "mooring fee is 12 euros") == [Passage("Services")]
    section, fragment, label = _cite(handbook, "Run the installer twice")
    assert section == "Install" and label == "Harbour Handbook > Install" and fragment.startswith("#char=")


def test_docx_lists_and_tables(handbook):
    # a bullet, then a "List Number" item with the number Word draws for it
    assert "## Linux\n\n- Use the package manager of the distribution.\n1. Reboot the terminal afterwards." in handbook.text
    blocks = [b for b in handbook.text.split("\n\n") if b.startswith("service | port | protocol\n")]
    assert len(blocks) == 3 and "ssh | 22 | tcp" in blocks[-1]  # the header above every block of rows


# ------------------------------------------------------------------------------ pptx


def test_pptx_one_segment_per_slide_with_notes(deck, h):
    h.check_segments(deck)
    assert [s.locator for s in deck.segments] == [Slide(1), Slide(2)]  # slide 3 has no text
    assert h.locators_of(deck, "auditors signed off on 2 April") == [Slide(1)]
    assert "- The northern region led the growth" in deck.text
    assert _cite(deck, "ssh | 22") == ("Ports", "#slide=2", "Quarterly review, slide 2")


def test_a_slide_whose_text_is_all_in_its_title_is_quoted():
    """The slide's words went to the section path and no chunk quoted them."""
    import io

    import pptx as python_pptx

    deck = python_pptx.Presentation()
    words = "X-Library The fully customisable and copyright-free standard content template collection"
    deck.slides.add_slide(deck.slide_layouts[5]).shapes.title.text = words
    buffer = io.BytesIO()
    deck.save(buffer)
    canonical = pptx.extract(buffer.getvalue(), "library.pptx")
    assert _cite(canonical, words) == (words, "#slide=1", "library, slide 1")


# ------------------------------------------------------------------------------ ods / xls


def test_ods_sheet_ranges_as_in_xlsx(ports, h):
    h.check_segments(ports)
    assert ports.text.startswith("## Ports\n\nservice | port | protocol\nsvc00 | 1000 | udp")
    assert h.locators_of(ports, "ssh | 22 | tcp") == [SheetRange("Ports", "B43:D44")]
    assert h.locators_of(ports, "Audit | Signed off on 2024-04-02.") == [SheetRange("Notes", "A2:B2")]
    # The last two rows share a chunk with the block before them: the fragment spans both.
    assert _cite(ports, "ssh | 22 | tcp") == ("Ports", "Ports!B23:D44", "services, Ports!B23:D42, Ports!B43:D44")
    assert "Empty" not in ports.text


def test_no_xls_writer_is_installed_so_xls_is_checked_by_its_container_only(make):
    """No .xls writer is available offline (no xlwt, no LibreOffice): a BIFF file cannot be
    generated here, so .xls is covered by routing and by calamine's reason for a bad one."""
    # This hand-made container (a directory, no FAT) made calamine allocate until killed.
    with pytest.raises(Corrupt, match="damaged OLE2 container, not a readable .xls: 0 FAT sectors"):
        calc.extract(make.legacy_xls(), "old.xls")


# ------------------------------------------------------------------------------ hostile


@pytest.mark.parametrize(
    ("module", "data", "options", "error", "reason"),
    [
        (docx, lambda m: b"", None, Empty, "0 bytes"),
        (docx, lambda m: m.handbook_docx()[:3000], None, Corrupt, "damaged or truncated zip"),
        (docx, lambda m: m.ooxml_zip("word/document.xml"), None, Corrupt, "python-docx cannot read"),
        (docx, lambda m: m.encrypted_xlsx(), None, Encrypted, "password-protected file"),
        (docx, lambda m: m._ole2(["WordDocument", "1Table"]), None, UnsupportedType, "legacy Word 97-2003"),
        (docx, lambda m: m.deck_pptx(), None, UnsupportedType, "a PowerPoint file .*, not a Word document"),
        (docx, lambda m: m.zip_bomb(64 << 20), ExtractOptions(max_unpacked_bytes=32 << 20), TooLarge, "zip bomb"),
        (pptx, lambda m: b"", None, Empty, "0 bytes"),
        (pptx, lambda m: m.deck_pptx()[:3000], None, Corrupt, "damaged or truncated zip"),
        (pptx, lambda m: m.ooxml_zip("ppt/presentation.xml"), None, Corrupt, "python-pptx cannot read"),
        (pptx, lambda m: m.encrypted_xlsx(), None, Encrypted, "password-protected"),
        (pptx, lambda m: m._ole2(["PowerPoint Document"]), None, UnsupportedType, "legacy PowerPoint"),
        (pptx, lambda m: m.zip_bomb(64 << 20), ExtractOptions(max_unpacked_bytes=32 << 20), TooLarge, "zip bomb"),
        (calc, lambda m: b"", None, Empty, "0 bytes"),
        (calc, lambda m: m.encrypted_xlsx(), None, Encrypted, "password-protected workbook"),
        (calc, lambda m: m._ole2(["WordDocument", "1Table"]), None, UnsupportedType, "legacy Word"),
        (calc, lambda m: m.ods({"S": [["a"]]}, encrypted=True), None, Encrypted, "password-protected OpenDocument"),
        (calc, lambda m: m.services_ods()[:700], None, Corrupt, "damaged or truncated zip"),
        (calc, lambda m: m.ods({"Empty": [], "Blank": [[None, None]]}), None, Empty, "all 2 sheets are empty"),
        (calc, lambda m: m.zip_bomb(64 << 20), ExtractOptions(max_unpacked_bytes=32 << 20), TooLarge, "zip bomb"),
    ],
    ids=["docx-empty", "docx-cut", "docx-bad-xml", "docx-encrypted", "docx-legacy", "docx-is-pptx", "docx-bomb",
         "pptx-empty", "pptx-cut", "pptx-bad-xml", "pptx-encrypted", "pptx-legacy", "pptx-bomb",
         "ods-empty", "xls-encrypted", "xls-is-doc", "ods-encrypted", "ods-cut", "ods-no-text", "ods-bomb"],
)
def test_hostile_office_files_fail_with_their_reason(make, module, data, options, error, reason):
    with pytest.raises(error, match=reason):
        module.extract(data(make), "bad", options)


def test_a_document_without_text_is_no_text():
    import io

    import docx as python_docx

    buf = io.BytesIO()
    python_docx.Document().save(buf)
    with pytest.raises(NoText, match="holds no text"):
        docx.extract(buf.getvalue(), "blank.docx")


def test_a_deck_of_nothing_is_empty_and_one_of_pictures_is_no_document(make):
    """Reasons a person agrees with: unstructured's picture.pptx holds a
    logo and no word, as a photo with no text does: set aside, not failed 'no-text'."""
    import io

    import pptx as python_pptx
    from PIL import Image

    from citeline.schemas.errors import NotADocument

    deck = python_pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    buf = io.BytesIO()
    deck.save(buf)
    with pytest.raises(Empty, match="no slide holds text or a picture"):
        pptx.extract(buf.getvalue(), "blank.pptx")
    logo = io.BytesIO()
    Image.new("RGB", (40, 20), "navy").save(logo, "PNG")
    logo.seek(0)
    slide.shapes.add_picture(logo, 0, 0)
    buf = io.BytesIO()
    deck.save(buf)
    with pytest.raises(NotADocument, match="slides of pictures with no text"):
        pptx.extract(buf.getvalue(), "picture.pptx")


def test_a_huge_table_is_blocked_with_its_header_and_stays_exact(make):
    import io

    import docx as python_docx

    d = python_docx.Document()
    table = d.add_table(rows=2001, cols=2)
    for r, row in enumerate(table.rows):  # table.cell(r, c) walks the table each time: quadratic
        key, value = row.cells
        key.text, value.text = ("key", "value") if r == 0 else (f"k{r}", f"v{r}")
    buf = io.BytesIO()
    d.save(buf)
    canonical = docx.extract(buf.getvalue(), "big.docx")
    blocks = canonical.text.split("\n\n")
    assert len(blocks) == 100 and all(b.startswith("key | value\n") for b in blocks)
    for c in chunk_document(canonical.text, canonical.title, "d", "E"):
        assert canonical.text[c.start:c.end] == c.content


def test_a_merge_continuing_under_a_short_row_is_read(make):
    """grid_offset_error.docx's shape: failed "corrupt" through python-docx's
    row.cells; the merged cell is now said on each row it spans, the short row read as it is."""
    canonical = docx.extract(make.grid_offset_docx(), "grid.docx")
    assert canonical.text.split("\n")[-2:] == ["Alder | Merged over three rows", "Cedar | Merged over three rows"]


def test_page_headers_and_footers_are_read_once_after_the_body():
    """unstructured's docx-hdrftr.docx: the body says "Main document", the header and footer
    hold paragraphs and tables (peers read them; citeline read the body alone). The footer's
    nested table has a cell merged down whose XML still holds "I should not be included":
    Word never shows it, and neither does citeline."""
    from pathlib import Path

    data = (Path(__file__).resolve().parents[2] / "fixtures" / "unstructured" / "docx-hdrftr.docx").read_bytes()
    canonical = docx.extract(data, "docx-hdrftr.docx")
    text = canonical.text
    assert text.startswith("Main document")
    header, footer = text.split("## Page header")[1].split("## Page footer")
    assert "First header para" in header and "Table cell1 | Table cell2" in header and "Last header para" in header
    assert "para1" in footer and "para2" in footer and "cell1 |" in footer
    assert "I should not be included" not in text
    chunks = chunk_document(text, canonical.title, "d", "E")
    assert {c.section for c in chunks if "First header para" in c.content} == {"Page header"}
    for c in chunks:
        assert text[c.start:c.end] == c.content
