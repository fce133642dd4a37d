"""With the real model: a period question about a report-like workbook is
answered from the chunk whose quote shows that period's value under that period's header."""
import pytest

from citeline import Index

QUESTION = "What was the trading operating profit in the first half of 2023?"


@pytest.mark.model
def test_the_period_question_cites_2023s_value_under_the_2023_header(make, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "half-year.xlsx").write_bytes(make.report_workbook())
    index = Index.create(str(tmp_path / "db"), model="all-MiniLM-L6-v2")
    assert index.sync(str(folder)).indexed == 1
    answer = index.ask(QUESTION)
    assert not answer.refused, answer.refusal.message()
    top = answer.citations[0]
    lines = top.quote.split("\n")
    # Read as a person reads it: the period row names the columns, the row its label.
    header = next((line for line in lines if "30 06 2023" in line), None)
    row = next((line for line in lines if line.startswith("Trading operating profit | ")), None)
    assert header and row, f"the top source does not show the row under its period header:\n{top.quote}"
    column = (" " + header).split(" | ").index("30 06 2023")
    assert row.split(" | ")[column] == "7,351"
    assert all(line in lines for line in make.REPORT_TITLE)  # the title block, units included
    assert index.canonical(top.document_id)[top.start:top.end] == top.quote
    assert "3.4 Reconciliation" in top.label and top.uri.endswith(top.fragment.replace(" ", "%20"))
    # The label names the one cell that answers: sheet and address, row label, period.
    assert top.label.endswith("!B25 — Trading operating profit · 30 06 2023"), top.label


RESULTS_QUESTION = "What was the trading operating profit in the first half of 2023?"


@pytest.mark.model
def test_the_figures_outrank_their_headers_and_footnotes(make, tmp_path):
    """On a results sheet split by columns, with footnotes under its tables, the
    first two sources were the header row and the footnotes, repeated in blocks of their own with
    no number; the block holding the figure came third. Now the notes are shown once, after the
    table, every block under the headers holds figures, and the 2023 block holding the trading
    operating profit ranks first."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "results.xlsx").write_bytes(make.results_workbook())
    index = Index.create(str(tmp_path / "db"), model="all-MiniLM-L6-v2")
    assert index.sync(str(folder)).indexed == 1

    chunks = index.chunks("results.xlsx")
    canonical = index.canonical(chunks[0].document_id)
    for note in make.RESULT_NOTES:
        assert canonical.count(note) == 1
    headed = [c for c in chunks if "In millions of CHF | " in c.content]
    assert headed and all(any(row in c.content for row in make.RESULT_SEGMENTS) for c in headed)
    assert not any(note in c.content for c in headed for note in make.RESULT_NOTES)

    answer = index.ask(RESULTS_QUESTION)
    assert not answer.refused, answer.refusal.message()
    top = answer.citations[0]
    lines = top.quote.split("\n")
    assert make.HALF_YEARS[0][0] in lines, top.quote  # the 2023 block, not 2022's
    header = next(line for line in lines if line.startswith("In millions of CHF | "))
    column = header.split(" | ").index("Trading operating profit")
    total = next(line for line in lines if line.startswith("Total Group | "))
    measure = make.RESULT_MEASURES.index("Trading operating profit")
    expected = make.result_value(make.HALF_YEARS[0][1], make.RESULT_SEGMENTS.index("Total Group"), measure)
    assert total.split(" | ")[column] == f"{expected:,}"
    assert canonical[top.start:top.end] == top.quote
