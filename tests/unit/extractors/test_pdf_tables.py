"""PDF tables where PyMuPDF detects them, laid out like a sheet's.

A PDF made here with PyMuPDF: a ruled table with two periods side by side under its caption,
on page 2 between two paragraphs. Its chunk's quote must show the caption, the period header
and the row labels; the table's raw lines must not be said twice; the page locator stays 2.
"""
import pymupdf
import pytest

from citeline.extractors import pdf, pdf_tables
from citeline.pipeline.chunk import chunk_document
from citeline.pipeline.locate import locators_for
from citeline.schemas.locator import Page

CAPTION = "Table 3: Reconciliation of operating profit (CHF m)"
HEADER = ["", "30 06 2023", "30 06 2022"]
ROWS = [["Sales", "20,000", "19,000"], ["Trading operating profit", "7,351", "6,684"],
        ["Operating profit", "6,299", "5,686"], ["Profit for the period", "4,493", "4,132"]]
BEFORE = "The group reports its half-year results below, with the prior period beside them."
AFTER = "Profit rose on higher volumes and lower restructuring costs in the period."


def report_pdf(ruled: bool = True) -> bytes:
    doc = pymupdf.open()
    first = doc.new_page()
    first.insert_text((72, 100), "Half-year report 2023", fontsize=16)
    first.insert_text((72, 140), "This report covers the first six months of the year.", fontsize=10)
    page = doc.new_page()
    page.insert_text((72, 90), BEFORE, fontsize=10)
    page.insert_text((72, 130), CAPTION, fontsize=10)
    xs, top, height = [72, 260, 360, 460], 140, 20
    for r, row in enumerate([HEADER, *ROWS]):
        for c, cell in enumerate(row):
            if cell:
                page.insert_text((xs[c] + 4, top + r * height + 14), cell, fontsize=10)
    bottom = top + height * (len(ROWS) + 1)
    if ruled:
        for r in range(len(ROWS) + 2):
            page.draw_line((xs[0], top + r * height), (xs[-1], top + r * height))
        for x in xs:
            page.draw_line((x, top), (x, bottom))
    page.insert_text((72, bottom + 30), AFTER, fontsize=10)
    data = doc.tobytes()
    doc.close()
    return data


@pytest.fixture(scope="module")
def canonical():
    return pdf.extract(report_pdf(), "report.pdf")


def test_the_tables_chunk_quotes_caption_period_header_and_row_labels(canonical):
    chunks = chunk_document(canonical.text, canonical.title, "d", "E", 512)
    (chunk,) = [c for c in chunks if "Trading operating profit" in c.content]
    lines = chunk.content.split("\n")
    assert CAPTION in lines  # the caption above, as the table's title
    assert "| 30 06 2023 | 30 06 2022" in lines  # the period row names the columns
    assert "Trading operating profit | 7,351 | 6,684" in lines  # every row starts with its label
    assert lines.index(CAPTION) < lines.index("| 30 06 2023 | 30 06 2022") < lines.index(
        "Trading operating profit | 7,351 | 6,684")
    assert canonical.text[chunk.start:chunk.end] == chunk.content  # the quote is exact
    # The table's text lies on page 2's segment: its page locator is right.
    at = canonical.text.index("Trading operating profit | 7,351")
    assert Page(2) in locators_for(chunk.start, chunk.end, canonical.segments)
    assert [s.locator.page for s in canonical.segments if s.start <= at < s.end] == [2]


def test_the_raw_lines_are_replaced_not_repeated(canonical):
    text = canonical.text
    for label, *values in ROWS:
        assert text.count(label) == 1, label
        assert text.count(values[0]) == 1
    assert text.count(CAPTION) == 1 and text.count("30 06 2023") == 1
    # In reading order: the paragraph before, the table, the paragraph after, all on page 2.
    assert text.index(BEFORE) < text.index(CAPTION) < text.index("Sales | 20,000") < text.index(AFTER)
    (page2,) = [s for s in canonical.segments if s.locator.page == 2]
    assert page2.start <= text.index(BEFORE) and text.index(AFTER) < page2.end
    (page1,) = [s for s in canonical.segments if s.locator.page == 1]
    assert "Sales" not in text[page1.start:page1.end]


def test_an_unruled_page_is_not_searched_and_keeps_its_lines():
    data = report_pdf(ruled=False)
    doc = pymupdf.open(stream=data, filetype="pdf")
    assert not pdf_tables._ruled(doc[1])  # no rules: find_tables is never called for it
    assert pdf_tables.find(doc, [1, 2], pdf.Deadline(None), 0, []) == {}
    text = pdf.extract(data, "plain.pdf").text
    assert " | " not in text and "Trading operating profit" in text and "7,351" in text


def test_the_citation_label_names_the_pdf_tables_cell(canonical):
    from citeline.query.cite import cell_label

    chunks = chunk_document(canonical.text, canonical.title, "d", "E", 512)
    (chunk,) = [c for c in chunks if "Trading operating profit" in c.content]
    label = cell_label("report", chunk.section, locators_for(chunk.start, chunk.end, canonical.segments),
                       chunk.content, "What was the trading operating profit in the first half of 2023?")
    assert label.endswith(" — Trading operating profit · 30 06 2023") and "p" in label.split(" — ")[0]
