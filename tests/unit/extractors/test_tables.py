"""Tables that can be read alone and empty cells that cost nothing,
on workbooks and CSV laid out like real half-year reports.

Each quote is read the way a person reads it: find the row by its label, the column by the
header lines above it, and the value where they cross. A question about one period or one
segment must find that cell, with its header and label, inside the chunk it would cite.
"""
import io

import openpyxl
import pytest
from growth import ratio
from openpyxl.utils import range_boundaries

from citeline.extractors import delimited, sheet
from citeline.extractors.sheet import display
from citeline.extractors.tables import cell_kind
from citeline.pipeline.chunk import chunk_document
from citeline.pipeline.locate import locators_for
from citeline.query.cite import locator_fragment
from citeline.schemas.errors import TooLarge
from citeline.schemas.locator import RowRange, SheetRange
from citeline.schemas.options import ExtractOptions

BUDGET = 512


@pytest.fixture(scope="module")
def report(make):
    return sheet.extract(make.report_workbook(), "half-year.xlsx")


@pytest.fixture(scope="module")
def report_csv(make):
    return delimited.extract(make.report_csv(), "half-year.csv")


def _cells(line: str) -> list[str]:
    """A rendered row's cells; a row without a label starts "| " (its first cell empty)."""
    return ("" + line if not line.startswith("|") else " " + line).split(" | ") if line else []


def read(quote: str, label: str, *headers: str, row_at: int | None = None) -> str:
    """The value a reader finds in ``quote`` on the row labelled ``label`` (the first such
    row, or line ``row_at``) under the column whose header lines above that row say each of
    ``headers``; fails unless exactly one column matches."""
    lines = quote.split("\n")
    if row_at is None:
        row_at = next((k for k, line in enumerate(lines) if (_cells(line) or [""])[0].strip() == label), None)
    assert row_at is not None, f"no row labelled {label!r} in:\n{quote}"
    row = _cells(lines[row_at])
    above = [_cells(line) for line in lines[:row_at]]
    columns = [k for k in range(1, len(row))
               if all(any(k < len(cells) and cells[k] == h for cells in above) for h in headers)]
    assert len(columns) == 1, f"{headers} name columns {columns} above {label!r} in:\n{quote}"
    return row[columns[0]]


def _chunks(canonical):
    chunks = chunk_document(canonical.text, canonical.title, "d", "E", BUDGET)
    for c in chunks:
        assert canonical.text[c.start:c.end] == c.content  # the quote is exact
        assert all(line in c.text for line in c.content.splitlines())  # and embedded whole (a heading in the header)
    return chunks


def _holding(canonical, line: str):
    found = [c for c in _chunks(canonical) if any(row.startswith(line) for row in c.content.split("\n"))]
    assert found, f"no chunk holds a row starting {line!r}"
    return found


# ------------------------------------------------------------------------ one period


@pytest.mark.parametrize("kind", ["xlsx", "csv"])
def test_a_period_question_finds_that_periods_cell_under_its_header(kind, report, report_csv, make):
    """The issue's failure: the block of 'Trading operating profit' repeated only the first
    header row, so neither text nor quote said which column was 2023."""
    canonical = report if kind == "xlsx" else report_csv
    (chunk,) = _holding(canonical, "Trading operating profit |")
    assert read(chunk.content, "Trading operating profit", "30 06 2023") == "7,351"
    assert read(chunk.content, "Trading operating profit", "30 06 2022") == "6,684"
    for title in make.REPORT_TITLE:  # the title block, units included, above the rows
        assert title in chunk.content.split("\n")[:3]
    assert chunk.text.endswith(chunk.content)  # the embedded text carries all of it too


def test_the_locators_name_the_title_block_the_period_row_and_the_rows(report, make):
    (chunk,) = _holding(report, "Trading operating profit |")
    locators = locators_for(chunk.start, chunk.end, report.segments)
    sheet_name = "3.4 Reconciliation"
    assert locators[:2] == [SheetRange(sheet_name, "A1:A3", header=True), SheetRange(sheet_name, "A4:C4", header=True)]
    (rows,) = locators[2:]
    c0, r0, c1, r1 = range_boundaries(rows.cells)
    top = 5 + [name for name, *_ in make.REPORT_ITEMS].index("Trading operating profit")
    assert not rows.header and (c0, c1) == (1, 3) and r0 <= top <= r1
    assert locator_fragment(locators, chunk.start, chunk.end) == f"'{sheet_name}'!{rows.cells}"
    _quotes_exactly_its_cells(make, report)


def test_csv_locators_name_the_title_and_header_records(report_csv):
    (chunk,) = _holding(report_csv, "Trading operating profit |")
    locators = locators_for(chunk.start, chunk.end, report_csv.segments)
    assert locators[:2] == [RowRange(1, 3, header=True), RowRange(4, 4, header=True)]
    assert locator_fragment(locators, chunk.start, chunk.end).startswith("#row=")


# ------------------------------------------------------------------------ periods over ranges


def test_each_half_years_blocks_name_their_own_period(make):
    """A results workbook with one half-year's block under the other (period alone in column A,
    no empty row): 2022's blocks repeated 2023's period above them, so a question about 2023's
    figures cited 2022's blocks. Each block now names its period, and only its own."""
    canonical = sheet.extract(make.periods_down_workbook(), "half-year.xlsx")
    chunks = [c for c in _chunks(canonical) if "Line item" in c.content]
    assert len(chunks) > 4  # split into blocks: the period must travel with each
    for (period, base), other in zip(make.HALF_YEARS, reversed(make.HALF_YEARS)):
        mine = [c for c in chunks if f"| {make.half_year_line(0, base, 0) + 1}" in c.content
                or any(f"| {make.half_year_line(k, base, 0)} |" in c.content for k in range(40))]
        assert mine
        for chunk in mine:
            assert period in chunk.content.split("\n")[:3] and other[0] not in chunk.content, chunk.content
    # A total asked about by period: its row, read under its zone, in a block naming that period.
    (chunk,) = [c for c in chunks if "January–June 2023" in c.content and "Line item 21 |" in c.content]
    assert read(chunk.content, "Line item 21", "Total Group") == str(make.half_year_line(21, 4000, 3))


def test_footnotes_are_shown_once_after_the_table_and_every_block_holds_figures(make):
    """Footnotes under a table split by columns were laid out as group rows,
    repeated under the headers in blocks of their own per part: pieces of labels and notes with
    no number that outranked the figures. Now each block under the headers holds figures, and
    the notes follow the table once, each in the quote of one chunk, located at its own cell."""
    canonical = sheet.extract(make.results_workbook(), "results.xlsx")
    chunks = _chunks(canonical)
    headed = [c for c in chunks if "In millions of CHF | " in c.content]
    headers = {next(line for line in c.content.split("\n") if line.startswith("In millions of CHF | ")) for c in headed}
    assert len(headers) > 1  # the table is split by columns
    for chunk in headed:
        rows = [_cells(line) for line in chunk.content.split("\n") if (_cells(line) or [""])[0] in make.RESULT_SEGMENTS]
        assert rows and all(cell_kind(cell) == "number" for row in rows for cell in row[1:]), chunk.content
        assert not any(note in chunk.content for note in make.RESULT_NOTES)
    first = len(make.HALF_YEARS) * (3 + len(make.RESULT_SEGMENTS)) + 1  # period, header, rows, a blank each
    notes = SheetRange("Operating segments", f"A{first}:A{first + len(make.RESULT_NOTES) - 1}")
    for note in make.RESULT_NOTES:
        assert canonical.text.count(note) == 1 and sum(note in c.content for c in chunks) == 1
        at = canonical.text.index(note)
        assert [s.locator for s in canonical.segments if s.start <= at < s.end] == [notes]
    # Every cell of the sheet is in the text: the notes left the blocks, not the document.
    for k in range(len(make.RESULT_SEGMENTS)):
        for m in range(len(make.RESULT_MEASURES)):
            for _, base in make.HALF_YEARS:
                assert f"{make.result_value(base, k, m):,}" in canonical.text


def test_a_period_centred_across_its_columns_heads_each_of_them(make):
    """"Centre across selection" puts one label over several columns without merging them:
    each column under it is that period's (the growth column too), in the quote."""
    canonical = sheet.extract(make.centred_periods_workbook(), "half-year.xlsx")
    (chunk,) = _chunks(canonical)
    header = next(line for line in chunk.content.split("\n") if line.startswith("In millions of CHF"))
    assert _cells(header)[1:] == ["January–June 2023"] * 2 + ["January–June 2022"] * 2, header
    rows = [_cells(line) for line in chunk.content.split("\n") if line and _cells(line)[0] in make.ZONES]
    assert [row[1:] for row in rows] == [[str(make.half_year_line(k, 4000, 0)), f"+{k + 1}.5%",
                                          str(make.half_year_line(k, 3000, 0)), f"-{k}.2%"] for k in range(4)]


def test_a_group_label_without_a_header_of_its_own_stays_a_group(make):
    """Years as groups under one header ("2022" alone, its rows, "2023" alone, its rows) are
    not new tables: both groups keep the shared quarter header."""
    rows = [["Country", "Q1", "Q2"], ["2022"], ["France", 1, 2], ["Spain", 3, 4], ["2023"], ["France", 5, 6]]
    wb = openpyxl.Workbook()
    for row in rows:
        wb.active.append(row)
    buffer = io.BytesIO()
    wb.save(buffer)
    text = sheet.extract(buffer.getvalue(), "groups.xlsx").text
    assert text.count("Country | Q1 | Q2") == 1, text
    assert read(text, "France", "Q2", row_at=text.split("\n").index("France | 5 | 6")) == "6"


# ------------------------------------------------------------------------ tables as the peers read them


def _workbook(rows: dict[str, object]) -> bytes:
    wb = openpyxl.Workbook()
    for ref, value in rows.items():
        wb.active[ref] = value
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def test_a_table_to_the_right_of_another_is_read_as_its_own(make):
    """Two tables on one sheet, the second placed right of the first and lower (docling's
    xlsx_01): each row of the first was fused with a row of the second."""
    cells = {"A1": "col-1", "B1": "col-2"}
    cells.update({f"{c}{r}": r * k for r in range(2, 9) for c, k in (("A", 1), ("B", 2))})
    cells.update({"D4": "name", "E4": "score"})
    cells.update({f"{c}{r}": v for r, (name, score) in enumerate([("ann", 7), ("bob", 9)], start=5)
                  for c, v in (("D", name), ("E", score))})
    text = sheet.extract(_workbook(cells), "two.xlsx").text
    assert "col-1 | col-2\n2 | 4\n3 | 6\n4 | 8\n5 | 10" in text, text
    assert "name | score\nann | 7\nbob | 9" in text, text


def test_a_spacer_column_inside_a_report_parts_nothing(make):
    """A report's empty column between its labels and its figures is one table still."""
    cells = {"A1": "In CHF m", "C1": "2023", "D1": "2022", "A2": "Sales", "C2": 45, "D2": 47,
             "A3": "Profit", "C3": 7, "D3": 6}
    text = sheet.extract(_workbook(cells), "report.xlsx").text
    assert "In CHF m | 2023 | 2022\nSales | 45 | 47\nProfit | 7 | 6" in text, text


def test_a_table_of_records_keeps_each_row_whole(make):
    """A wide CSV of records (docling's csv-semicolon): every row keeps all its fields in one
    line under the header, where it was cut into column groups before."""
    header = ["Index", "Customer Id", "First Name", "Last Name", "Company", "City", "Country", "Phone 1",
              "Phone 2", "Email", "Subscription Date", "Website"]
    records = [[str(k), f"{k:015X}", "Sheryl", "Baxter", "Rasmussen Group", "East Leonard", "Chile",
                "229.077.5154", "397.884.0519x718", f"person{k}@example.info", "2020-08-24",
                f"http://www.site{k}.example.com/"] for k in range(1, 30)]
    data = "\n".join(";".join(r) for r in [header, *records]).encode()
    canonical = delimited.extract(data, "customers.csv")
    lines = canonical.text.split("\n")
    for record in records:
        assert " | ".join(record) in lines
    chunks = _chunks(canonical)
    for record in records:
        (holding,) = [c for c in chunks if " | ".join(record) in c.content.split("\n")]
        assert " | ".join(header) in holding.content.split("\n")


# ------------------------------------------------------------------------ one segment


@pytest.mark.parametrize(("segment", "period", "value"), [
    ("France", "H1 2022", "37.9%"), ("Europe", "H1 2022", "33.0%"), ("Africa & Middle East", "H1 2022", "29.0%"),
])
def test_a_segment_question_finds_the_cell_under_its_merged_group_header(report, segment, period, value):
    """The telecom failure: margins quoted without the segment names above them. A merged
    group header is spread over the columns it spans, so each column names its segment."""
    found = [read(c.content, "Adjusted EBITDAaL margin", segment, period)
             for c in _holding(report, "Adjusted EBITDAaL margin |")
             if c.section == "Segments" and segment in c.content]
    assert found == [value]


def test_a_table_too_wide_is_split_by_columns_each_part_keeping_the_row_labels(report, make):
    chunks = [c for c in _chunks(report) if c.section == "Segments"]
    assert len(chunks) >= 2
    read_back = {}
    for c in chunks:
        assert len(c.content) <= BUDGET
        assert "Operating segments, first half\nIn millions of euros" in c.content
        for name, _ in make.SEGMENT_ROWS:
            for s, segment in enumerate(make.SEGMENTS):
                for p, period in enumerate(("H1 2023", "H1 2022")):
                    if f"\n{name} | " in c.content and segment in c.content:
                        read_back[name, s, p] = read(c.content, name, segment, period)
    expected = {}
    for name, values in make.SEGMENT_ROWS:
        for k, v in enumerate(values):
            fmt = "0.0%" if name.endswith("margin") else "#,##0" if isinstance(v, int) else "0.0"
            expected[name, k // 2, k % 2] = display(v, fmt)
    assert read_back == expected  # every cell, once readable, under the right segment and period


def test_a_block_under_a_group_row_repeats_it(report, make):
    """KPIs listed per segment: a block that starts inside Europe's rows says Europe."""
    for s, segment in enumerate(make.SEGMENTS):
        for m, metric in enumerate(make.KPI_METRICS):
            for c in _holding(report, f"{metric} | {make.kpi_value(s, m, 0)} |"):
                if c.section != "KPIs":
                    continue
                lines = c.content.split("\n")
                at = lines.index(f"{metric} | {make.kpi_value(s, m, 0)} | {make.kpi_value(s, m, 1)}")
                group = next(line for line in reversed(lines[:at]) if line in make.SEGMENTS)
                assert group == segment
                assert read(c.content, metric, "H1 2023", row_at=at) == make.kpi_value(s, m, 0)


# ------------------------------------------------------------------------ every number, every locator


@pytest.mark.parametrize("kind", ["xlsx", "csv"])
def test_no_quoted_number_without_its_row_label_and_column_header(kind, report, report_csv):
    canonical = report if kind == "xlsx" else report_csv
    for c in _chunks(canonical):
        lines = c.content.split("\n")
        for at, line in enumerate(lines):
            cells = _cells(line)
            for k, value in enumerate(cells[1:], start=1):
                if cell_kind(value) != "number":
                    continue
                assert cells[0].strip(), f"{value} without a row label in:\n{c.content}"
                assert any(k < len(_cells(h)) and _cells(h)[k] and cell_kind(_cells(h)[k]) != "number"
                           for h in lines[:at]), f"{value} without a column header in:\n{c.content}"


def _quotes_exactly_its_cells(make, report):
    """Read independently by openpyxl: every value a segment shows lies in its range (a
    header may show a merged cell's value over its span), every data cell of the range is shown."""
    wb = openpyxl.load_workbook(io.BytesIO(make.report_workbook()))
    shown_by: dict = {}  # a table split by columns quotes a range one line at a time
    for seg in report.segments:
        for line in report.text[seg.start:seg.end].split("\n"):
            shown_by.setdefault(seg.locator, set()).update(v for v in _cells(line) if v.strip())
    for locator, shown in shown_by.items():
        ws = wb[locator.sheet]
        c0, r0, c1, r1 = range_boundaries(locator.cells)
        values = {display(cell.value, cell.number_format)
                  for row in ws.iter_rows(min_row=r0, max_row=r1, min_col=c0, max_col=c1)
                  for cell in row if cell.value is not None}
        assert shown <= values, (locator, shown, values)
        if not locator.header:
            assert shown == values, (locator, shown, values)


# ------------------------------------------------------------------------ bounded tables


def test_a_value_in_column_xfd_costs_its_own_width_not_16k_empty_cells(make):
    """~49 KB of ' | ' per row before: 8,000 times the file. Now the text grows with the rows
    and stays under the file's own size, and so does the time it takes."""
    small, large = make.xfd_workbook(500), make.xfd_workbook(1000)
    texts = [sheet.extract(data, "xfd.xlsx").text for data in (small, large)]
    for data, text in zip((small, large), texts):
        assert len(text) < 2 * len(data), (len(text), len(data))
        assert " |  | " not in text
    assert 1.5 < len(texts[1]) / len(texts[0]) < 2.5
    assert ratio(lambda data: sheet.extract(data, "xfd.xlsx"), small, large, repeat=3) < 4
    first = sheet.extract(small, "xfd.xlsx")
    assert [s.locator.cells for s in first.segments[:2]] == ["A1", "XFD2:XFD21"]


@pytest.mark.parametrize("kind", ["xlsx", "csv"])
def test_a_canonical_text_past_its_bound_fails_too_large(make, kind):
    data = make.report_workbook() if kind == "xlsx" else make.report_csv()
    extract = sheet.extract if kind == "xlsx" else delimited.extract
    tight = ExtractOptions(max_text_ratio=0.05, min_text_chars=200)
    with pytest.raises(TooLarge, match="max_text_chars") as caught:
        extract(data, f"report.{kind}", tight)
    assert caught.value.kind == "too-large"
    capped = ExtractOptions(max_text_chars=300)  # the absolute cap wins over the floor
    with pytest.raises(TooLarge):
        extract(data, f"report.{kind}", capped)
    assert extract(data, f"report.{kind}").text  # the defaults leave room for a real report


# ------------------------------------------------------------------------ Word, HTML, slides


def _document(make, kind):
    from citeline.extractors import docx, html, pptx

    module, data = {"docx": (docx, make.report_docx), "html": (html, make.report_html),
                    "pptx": (pptx, make.report_pptx)}[kind]
    return module.extract(data(), f"half-year.{kind}")


@pytest.mark.parametrize("kind", ["docx", "html"])
def test_a_documents_table_repeats_its_caption_and_period_row(make, kind):
    canonical = _document(make, kind)
    (chunk,) = _holding(canonical, "Trading operating profit |")
    assert chunk.content.startswith(f"{make.REPORT_TITLE[1]} (in millions of CHF)\n")
    assert read(chunk.content, "Trading operating profit", "30 06 2023") == "7,351"
    assert canonical.text.count(make.REPORT_TITLE[1]) == len(
        [c for c in _chunks(canonical) if "| 30 06 2023 |" in c.content])  # said once per block, not twice


@pytest.mark.parametrize("kind", ["docx", "html", "pptx"])
@pytest.mark.parametrize(("segment", "value"), [("France", "37.9%"), ("Europe", "33.0%"), ("Africa & Middle East", "29.0%")])
def test_a_documents_merged_group_header_names_each_of_its_columns(make, kind, segment, value):
    canonical = _document(make, kind)
    found = {read(c.content, "Adjusted EBITDAaL margin", segment, "H1 2022")
             for c in _holding(canonical, "Adjusted EBITDAaL margin |") if f"| {segment}" in c.content}
    assert found == {value}


def test_no_block_is_group_rows_alone_under_the_headers():
    """A run of group rows longer than a block was cut into a block of headers
    and labels with no figure under them; the block now runs on to its first row of figures."""
    from citeline.extractors.tables import table_blocks
    from citeline.schemas.grid import GridRow

    groups = [f"Group heading number {k} of the segment reporting structure" for k in range(12)]
    rows = [GridRow(1, {1: "In millions of CHF", 2: "2023", 3: "2022"})]
    rows += [GridRow(2 + k, {1: g}) for k, g in enumerate(groups)]
    rows += [GridRow(20 + k, {1: f"Line {k}", 2: f"{100 + k}", 3: f"{200 + k}"}) for k in range(3)]
    blocks = [b.text for b in table_blocks(rows, lambda *_: None, 480, 20)]
    assert all(any(f"Line {k} |" in text for k in range(3)) for text in blocks), blocks
    assert all(g in "\n".join(blocks) for g in groups)
