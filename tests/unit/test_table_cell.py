"""The citation label of a one-cell answer names the sheet (or table), the
row label and the column header, on the report-like workbook and CSV of tests/fixtures/make.py.

Real code end to end: the extractor lays the tables out, the chunker cuts them, the
locators come from the segments, and the citation is built from a hit on that chunk.
"""
import pytest

from citeline.extractors import delimited, sheet
from citeline.pipeline.chunk import chunk_document
from citeline.pipeline.locate import locators_for, locators_json
from citeline.query.cite import build_citations, citation_from_hit
from citeline.schemas.retrieval import ChunkRow, Hit

PROFIT = "What was the trading operating profit in the first half of 2023?"


def _hits(canonical, path):
    hits = []
    for k, c in enumerate(chunk_document(canonical.text, canonical.title, "d", "E", 512), 1):
        row = {"chunk_id": f"c{k}", "doc_id": "d", "path": path, "title": canonical.title, "section": c.section,
               "start": c.start, "end": c.end, "content": c.content,
               "locators": locators_json(locators_for(c.start, c.end, canonical.segments))}
        hits.append(Hit(row["chunk_id"], k, 0.3, "dense", ChunkRow.from_row(row), distance=0.3))
    return hits


@pytest.fixture(scope="module")
def book(make):
    canonical = sheet.extract(make.report_workbook(), "half-year.xlsx")
    return canonical, _hits(canonical, "half-year.xlsx")


@pytest.fixture(scope="module")
def csv_hits(make):
    canonical = delimited.extract(make.report_csv(), "half-year.csv")
    return canonical, _hits(canonical, "half-year.csv")


def _holding(hits, line):
    (hit,) = [h for h in hits if any(r.startswith(line) for r in h.chunk.content.split("\n"))]
    return hit


def test_a_period_question_labels_the_cell_by_sheet_row_label_and_period(book, make):
    canonical, hits = book
    hit = _holding(hits, "Trading operating profit |")
    c = citation_from_hit(1, hit, PROFIT)
    row = 5 + [name for name, *_ in make.REPORT_ITEMS].index("Trading operating profit")
    assert c.label == f"half-year, '3.4 Reconciliation'!B{row} — Trading operating profit · 30 06 2023"
    # The label names the cell; the locator still opens every cell quoted, the quote is exact.
    assert c.fragment.startswith("'3.4 Reconciliation'!A") and c.fragment != f"'3.4 Reconciliation'!B{row}"
    assert canonical.text[c.start:c.end] == c.quote
    # The address is the cell holding the number the label's names find in the quote.
    assert "Trading operating profit | 7,351 | 6,684" in c.quote.split("\n")
    other = citation_from_hit(1, hit, "Trading operating profit in the first half of 2022?")
    assert other.label.endswith(f"!C{row} — Trading operating profit · 30 06 2022")
    assert citation_from_hit(1, hit).label == f"half-year, '3.4 Reconciliation'!{c.fragment.split('!')[1]}"


def test_a_segment_question_names_the_merged_group_header_and_period(book):
    _, hits = book
    segments = [h for h in hits if h.chunk.section == "Segments" and "Adjusted EBITDAaL margin |" in h.chunk.content]
    (c,) = [citation_from_hit(1, h, "What was the adjusted EBITDAaL margin of Europe in H1 2022?") for h in segments]
    assert c.label == "half-year, Segments!E8 — Adjusted EBITDAaL margin · Europe / H1 2022 / €m"
    kpis = [citation_from_hit(1, h, "What was the adjusted EBITDAaL margin of Europe in H1 2022?")
            for h in hits if h.chunk.section == "KPIs"]
    labelled = [k.label for k in kpis if " — " in k.label]
    # The group row above the metric names the segment; no other segment's margin is named.
    assert labelled == ["half-year, KPIs!C15 — Europe / Adjusted EBITDAaL margin · H1 2022"]


def test_a_csv_answer_names_its_record(csv_hits, make):
    canonical, hits = csv_hits
    c = citation_from_hit(1, _holding(hits, "Trading operating profit |"), PROFIT)
    record = 5 + [name for name, *_ in make.REPORT_ITEMS].index("Trading operating profit")
    assert c.label == f"half-year, row {record} — Trading operating profit · 30 06 2023"
    assert canonical.text[c.start:c.end] == c.quote


def test_no_cell_is_named_when_the_question_names_no_single_row_and_column(book):
    _, hits = book
    hit = _holding(hits, "Trading operating profit |")
    plain = citation_from_hit(1, hit).label
    for question in ("What was the trading operating profit?",  # two periods: which one is not asked
                     "How much did the company earn in 2023?",  # no row named
                     "What was the operating result?"):  # "Operating profit" and others share one word
        assert citation_from_hit(1, hit, question).label == plain, question
    # A chunk whose rows share one word with the question does not get a half-matching row.
    other = _holding(hits, "Net other operating items |")
    assert " — " not in citation_from_hit(1, other, PROFIT).label


def test_ask_passes_the_question_to_the_labels(book):
    _, hits = book
    labels = [c.label for c in build_citations(hits, PROFIT)]
    assert [label for label in labels if " — " in label] == [
        "half-year, '3.4 Reconciliation'!B25 — Trading operating profit · 30 06 2023"]


def test_text_chunks_keep_their_label():
    row = {"chunk_id": "c", "doc_id": "d", "path": "a.md", "title": "Guide", "section": "Use",
           "start": 0, "end": 13, "content": "Open the app.", "locators": "[]"}
    c = citation_from_hit(1, Hit("c", 1, 0.2, "dense", ChunkRow.from_row(row), distance=0.2), "open the app in 2023")
    assert c.label == "Guide > Use"
