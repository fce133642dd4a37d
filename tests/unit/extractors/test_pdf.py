import pymupdf
import pytest

from citeline.extractors import pdf
from citeline.extractors.headings import reads_as_heading
from citeline.pipeline.chunk import chunk_document
from citeline.pipeline.locate import locators_for
from citeline.schemas.errors import Corrupt, Empty, Encrypted, NoText, Timeout, TooLarge, Truncated
from citeline.schemas.locator import Page
from citeline.schemas.options import ExtractOptions


@pytest.fixture(scope="session")
def report(make):
    return pdf.extract(make.two_column_pdf(), "report.pdf")


@pytest.fixture(scope="session")
def scan(make):
    # A threshold above any real confidence, so the low-confidence note must appear.
    return pdf.extract(make.image_only_pdf(), "scan.pdf", ExtractOptions(ocr_min_confidence=99.5))


@pytest.mark.parametrize(
    ("phrase", "page", "label"),
    [
        ("Annual Report on Fixture Quality", 1, "i"),
        ("Section 1: Column Order", 2, "1"),
        ("The alpha paragraph opens the left column", 2, "1"),
        ("The charlie paragraph sits in the right column", 2, "1"),
        ("The delta paragraph spans the full width", 2, "1"),
        ("the turbine inspection interval is 450 hours.", 3, "2"),
        ("Warranty claims must be filed within 30 days of delivery.", 4, "3"),
    ],
)
def test_phrases_are_on_their_pages(report, h, phrase, page, label):
    assert h.locators_of(report, phrase) == [Page(page, label)]


def test_segments_are_the_pages(report, h):
    h.check_segments(report)
    assert [s.locator.page for s in report.segments] == [1, 2, 3, 4]
    assert report.text == "\n\n".join(report.text[s.start:s.end] for s in report.segments)
    third = report.segments[2].locator
    assert (third.fragment(), third.label()) == ("#page=3", "p. 2 (page 3)")
    assert report.extractor == "pdf" and report.extractor_version == pdf.VERSION


def test_columns_are_read_in_order(report, h):
    two_columns = ["alpha paragraph", "bravo paragraph", "postpone the vote", "charlie paragraph", "delta paragraph"]
    three_columns = ["echo paragraph", "foxtrot paragraph", "golf paragraph"]
    for order in (two_columns, three_columns):
        starts = [h.find(report, phrase)[0] for phrase in order]
        assert starts == sorted(starts), order


def test_a_sentence_broken_by_the_column_stays_one_paragraph(report):
    assert "the committee decided to\npostpone the vote" in report.text


def test_running_headers_and_footers_are_removed(report):
    for gone in ("Reproducible Fixtures", "Reproducable Fixtures", "Page i of 4", "of 4"):
        assert gone not in report.text
    assert any("running header/footer lines removed" in note for note in report.notes)


def test_text_is_clean(report, h, make):
    assert "\ufb01" not in report.text and "\ufb02" not in report.text
    if make.HAS_LIGATURE_FONT:  # the PDF really holds the ligature glyphs
        h.find(report, "reviewed the final budget for the offline archive")
    h.find(report, "received detailed information about the harbour")
    assert "infor-" not in report.text


def test_image_only_page_is_ocrd_with_columns_apart(scan, h):
    h.check_segments(scan)
    assert [s.locator.page for s in scan.segments] == [1]
    assert scan.segments[0].locator.ocr_confidence > 80
    left, right = h.find(scan, "maintenance of the pumps"), h.find(scan, "The right column covers")
    assert left[0] < right[0]
    h.find(scan, "Scanned reports arrive as images. The left column talks about maintenance of the pumps.")
    h.find(scan, "The right column covers the budget for the bridge. It was approved in March.")
    assert "OCR used on 1 page (no text layer: 1)" in scan.notes
    conf = scan.segments[0].locator.ocr_confidence
    assert f"low OCR confidence on page 1: {conf:.0f}" in scan.notes


def test_garbage_text_layer_is_ocrd_again(make, h):
    canonical = pdf.extract(make.garbage_layer_pdf(), "garbage.pdf")
    h.find(canonical, "Quarterly maintenance was completed on all seven water pumps.")
    assert any("garbled text layer" in note and note.endswith(": 1)") for note in canonical.notes)
    assert canonical.segments[0].locator.ocr_confidence is not None


def test_encrypted_with_a_password_fails(make):
    with pytest.raises(Encrypted, match="user password"):
        pdf.extract(make.encrypted_pdf("secret"), "locked.pdf")


def test_encrypted_with_an_empty_user_password_opens(make, report):
    canonical = pdf.extract(make.encrypted_pdf(""), "owner-only.pdf")
    assert canonical.text == report.text


@pytest.mark.parametrize(
    ("fixture", "error", "reason"),
    [
        (lambda m: b"", Empty, "empty"),
        (lambda m: b"<!DOCTYPE html><html><body>404</body></html>", Corrupt, "not a PDF"),
        (lambda m: b"%PDF-1.7\n" + bytes(range(256)) * 8, Corrupt, "corrupt PDF"),
        (lambda m: m.truncated_pdf(), Truncated, "cut off"),
        (lambda m: m.blank_pdf(), NoText, "no text on any page"),
    ],
    ids=["empty", "html", "garbage", "truncated", "blank"],
)
def test_bad_pdfs_fail_with_a_reason(make, fixture, error, reason):
    with pytest.raises(error, match=reason):
        pdf.extract(fixture(make), "bad.pdf")


def test_limits(make):
    with pytest.raises(TooLarge, match="max_pages"):
        pdf.extract(make.two_column_pdf(), "big.pdf", ExtractOptions(max_pages=3))
    with pytest.raises(Timeout):
        pdf.extract(make.two_column_pdf(), "slow.pdf", ExtractOptions(time_limit_s=1e-9))


def test_junk_before_the_header_is_accepted(make, report):
    assert pdf.extract(b"junk\n" + make.two_column_pdf(), "report.pdf").text == report.text


def test_text_pdf_runs_fast_and_keeps_every_page(make):
    canonical = pdf.extract(make.text_pdf(12), "speed.pdf")
    assert [s.locator.page for s in canonical.segments] == list(range(1, 13))
    assert "Speed Test Journal" not in canonical.text  # the running header


def test_a_chapter_header_on_two_pages_is_removed_a_heading_stays(make, h):
    canonical = pdf.extract(make.chapters_pdf(), "chapters.pdf")
    assert canonical.text.count("Chapter 1: Scope") == 0
    assert canonical.text.count("Chapter 3: Results") == 0
    # The body heading on page 3 stays; the running copies are gone.
    assert canonical.text.count("Chapter 2: Methods") == 1
    assert h.locators_of(canonical, "Chapter 2: Methods")[0].page == 3
    for number in range(1, 7):
        assert h.locators_of(canonical, f"talks about topic number {number}.")[0].page == number
    assert not any(line.strip().isdigit() for line in canonical.text.splitlines())


def test_running_headers_are_removed_from_ocr_output(make, h):
    canonical = pdf.extract(make.scanned_notices_pdf(), "notices.pdf")
    assert "Water Board" not in canonical.text and "Page 2" not in canonical.text
    for page, topic in enumerate(("the reservoir level", "the pipe repairs", "the new tariff"), start=1):
        assert h.locators_of(canonical, f"This notice concerns {topic}.")[0].page == page


def test_hex_encoded_page_labels_are_decoded():
    assert pdf.page_label("<FEFF0031>") == "1"
    assert pdf.page_label("<FEFF0041002D0031>") == "A-1"


def test_a_scan_with_a_text_stamp_is_still_ocrd(make, h):
    canonical = pdf.extract(make.stamped_scan_pdf(), "stamped.pdf")
    h.find(canonical, "The right column covers the budget for the bridge.")
    assert any("scanned page with little text layer: 1" in note for note in canonical.notes)


def _slides(titles: list[str]) -> bytes:
    """A deck exported as PDF: each page holds one line at the top, "Slide N: title"."""
    doc = pymupdf.open()
    for n, title in enumerate(titles, 1):
        page = doc.new_page(width=720, height=405)
        page.insert_text((36, 40), f"Slide {n}: {title}", fontsize=20)
    return doc.tobytes()


def test_a_page_whose_only_line_repeats_keeps_it():
    """The line matches its neighbours like a running header, but it is all the page says."""
    titles = ["Quarterly review", "Quarterly results", "Quarterly outlook", "Quarterly risks", "Quarterly plans"]
    canonical = pdf.extract(_slides(titles), "deck.pdf")
    for n, title in enumerate(titles, 1):
        assert f"Slide {n}: {title}" in canonical.text
    assert [s.locator.page for s in canonical.segments] == [1, 2, 3, 4, 5]


# ------------------------------------------------------------------ sections from fonts


@pytest.fixture(scope="session")
def manual(make):
    return pdf.extract(make.manual_pdf(), "manual.pdf")


def test_headings_set_large_bold_or_numbered_become_sections(manual):
    heads = [line[3:] for line in manual.text.splitlines() if line.startswith("## ")]
    assert heads == ["GNU Libtasn1 Manual", "Table of Contents", "1 Introduction", "2 Structure handling",
                     "2.1 Limitations", "asn1 print structure"]


def test_chunks_are_labelled_doc_and_section_and_none_is_a_heading_or_toc_line_alone(manual, make):
    chunks = chunk_document(manual.text, manual.title, "d", "E")
    answer = [c for c in chunks if make.MANUAL_ANSWER in c.content]
    assert len(answer) == 1 and answer[0].section == "2.1 Limitations"
    assert answer[0].text.startswith(f"[{make.MANUAL_TITLE} > 2.1 Limitations]\n")
    assert locators_for(answer[0].start, answer[0].end, manual.segments) == [Page(3)]
    for c in chunks:
        assert manual.text[c.start:c.end] == c.content
        assert "\n" in c.content or len(c.content) > 80, f"a lone line: {c.content!r}"


def test_capitals_hyphenated_at_a_line_end_are_rejoined(manual):
    assert "SEQUENCE ELEMENT may be marked OPTIONAL or given" in manual.text


def test_body_lines_and_page_numbers_are_not_headings(report, make):
    heads = [line[3:] for line in report.text.splitlines() if line.startswith("## ")]
    assert heads == ["Annual Report on Fixture Quality", "Section 1: Column Order"]
    chapters = pdf.extract(make.chapters_pdf(), "chapters.pdf")
    assert "## " not in chapters.text  # one font throughout: nothing stands out


def test_reading_as_a_heading():
    assert reads_as_heading("asn1 print structure") and reads_as_heading("2.1 Scope")
    for text in ("It ends with a full stop.", "1 Introduction . . . . . . 2", "iv", "12", "Note:", "x" * 121):
        assert not reads_as_heading(text), text


# ------------------------------------------------------------------ a sentence over a page break


def _pages(*pages: list[str]) -> bytes:
    """A PDF of one column per page, each page's lines as given."""
    doc = pymupdf.open()
    for lines in pages:
        page = doc.new_page(width=420, height=300)
        for n, line in enumerate(lines):
            page.insert_text((36, 50 + 14 * n), line, fontsize=11)
    return doc.tobytes()


def test_a_sentence_over_a_page_break_is_one_paragraph_citing_both_pages():
    """Two-column chapters broke dev needles in two chunks at the page break (q27, q32)."""
    filler = [f"Line {n} of the setting explains the model in plain words." for n in range(8)]
    canonical = pdf.extract(_pages([*filler, "In this case we cannot use an optimizer over"],
                                   ['"mini-batches" of data when the kernel is exact.', *filler]), "gp.pdf")
    sentence = 'we cannot use an optimizer over\n"mini-batches" of data'
    assert sentence in canonical.text
    chunks = chunk_document(canonical.text, canonical.title, "d", "E")
    holding = [c for c in chunks if sentence in c.content]
    assert len(holding) == 1
    assert locators_for(holding[0].start, holding[0].end, canonical.segments) == [Page(1), Page(2)]


@pytest.mark.parametrize("end, start", [
    ("The previous page ends its sentence.", "the next one starts in lower case."),
    ("A closing quote ends it too.\"", "and lower case still starts a paragraph."),
    ("This line is followed by a capital", "The next page starts a new thought."),
])
def test_a_page_that_ends_its_sentence_starts_a_new_paragraph(end, start):
    canonical = pdf.extract(_pages(["First page text.", end], [start, "More text."]), "p.pdf")
    assert f"{end}\n\n{start}" in canonical.text
