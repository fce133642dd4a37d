import io
import zipfile
from datetime import date, datetime, time

import openpyxl
import pytest
from openpyxl.utils import range_boundaries

from citeline.extractors import sheet
from citeline.pipeline.chunk import chunk_document
from citeline.pipeline.locate import locators_for
from citeline.query.cite import locator_fragment, locator_label
from citeline.extractors.sheet import display
from citeline.schemas.errors import Corrupt, Empty, NoText, TooLarge, UnsupportedType
from citeline.schemas.locator import SheetRange
from citeline.schemas.options import ExtractOptions


@pytest.fixture(scope="session")
def book(make):
    return sheet.extract(make.workbook(), "sales.xlsx")


def _pairs(canonical):
    """(header segment, rows segment) for every block of rows: the rows' segment and the
    context segment just above it (the title's, when the block has no header row)."""
    segs = canonical.segments
    return [(a, b) for a, b in zip(segs, segs[1:])
            if canonical.text[a.end:b.start] == "\n" and a.locator.header and not b.locator.header]


def test_every_block_of_rows_repeats_the_header(book, h, make):
    h.check_segments(book)
    sales = [(a, b) for a, b in _pairs(book) if a.locator.sheet == "Q1 sales"]
    assert len(sales) >= 3  # 40 rows do not fit one block
    for head, rows in sales:
        # The merged title (its value at A1) and the header row, each located exactly.
        title = next(s for s in book.segments if s.end == head.start - 1)
        assert title.locator == SheetRange("Q1 sales", "A1", header=True)
        assert head.locator == SheetRange("Q1 sales", "A2:D2", header=True)
        assert book.text[title.start:head.end] == "Quarterly sales 2024\nRegion | Share | Revenue | Closed on"
        assert len(book.text[title.start:rows.end]) <= ExtractOptions().sheet_block_chars
    covered = [rows.locator.cells for _, rows in sales]
    assert covered[0] == "A3:D13" and covered[-1].endswith(f"D{make.SALES_ROWS + 2}")


def test_a_chunk_of_rows_cites_the_rows_it_quotes_not_the_header(book):
    """The fragment was the header row (A1:D2) while the rows were only in the label."""
    chunks = chunk_document(book.text, book.title, "d", "E")
    rows = [c for c in chunks if "Region 36 | 33.6%" in c.content]
    assert len(rows) == 1 and rows[0].content.startswith("Quarterly sales 2024\nRegion | Share")
    locators = locators_for(rows[0].start, rows[0].end, book.segments)
    assert locator_fragment(locators, rows[0].start, rows[0].end) == "'Q1 sales'!A36:D42"
    assert locator_label(book.title, "", locators) == "sales, 'Q1 sales'!A36:D42"


def test_rows_segments_hold_exactly_their_cells(make, book):
    """Check each rows segment against openpyxl reading the same range independently."""
    wb = openpyxl.load_workbook(io.BytesIO(make.workbook()), data_only=True)
    for _, rows in _pairs(book):
        ws = wb[rows.locator.sheet]
        min_col, min_row, max_col, max_row = range_boundaries(rows.locator.cells)
        lines = book.text[rows.start:rows.end].split("\n")
        expected = [
            [c.value for c in row if c.value is not None]
            for row in ws.iter_rows(min_row=min_row, max_row=max_row, min_col=min_col, max_col=max_col)
        ]
        expected = [r for r in expected if r]
        assert len(lines) == len(expected)
        for line, values in zip(lines, expected):
            assert line.split(" | ")[0] == display(values[0]) or line.startswith("|")


@pytest.mark.parametrize(
    ("phrase", "sheet_name", "cells"),
    [
        ("Region 01 | 30.1% | 301 | 2024-01-02", "Q1 sales", "A3:D13"),
        ("Region 36 | 33.6% | 336 | 2024-01-09", "Q1 sales", "A36:D42"),
        ("Audit | The auditors signed off on 2024-04-02.", "Notes ", "A2:B3"),
        ("2024-05-06 14:30", "Sparse", "C3"),  # the one cell quoted: column B is empty in the whole sheet
    ],
)
def test_values_as_displayed_at_their_range(book, h, phrase, sheet_name, cells):
    assert h.locators_of(book, phrase) == [SheetRange(sheet_name, cells)]


def test_sheet_names_are_quoted_by_excels_rules(book):
    fragments = {s.locator.fragment() for s in book.segments}
    assert "'Q1 sales'!A2:D2" in fragments
    assert "'Notes '!A1:B1" in fragments  # the trailing space is part of the name
    assert "Sparse!A1" in fragments  # its title cell, exactly


@pytest.mark.parametrize("name", ["R1C1", "RC", "R", "C", "R12C3", "rc2", "A1", "XFD9"])
def test_sheet_names_that_read_as_cell_references_are_quoted(name):
    """Unquoted, 'R1C1!A1:B2' would read as a reference in R1C1 notation, not a sheet."""
    wb = openpyxl.Workbook()
    wb.active.title = name
    wb.active.append(["Item", "Count"])
    wb.active.append(["walrus", 3])
    data = io.BytesIO()
    wb.save(data)
    canonical = sheet.extract(data.getvalue(), "refs.xlsx")
    assert f"'{name}'!A2:B2" in {s.locator.fragment() for s in canonical.segments}


def test_sheets_become_sections_and_empty_sheets_vanish(book):
    assert "## Q1 sales\n\n" in book.text and "## Notes\n\n" in book.text
    assert "Empty" not in book.text
    assert "\n\n\n" not in book.text


def test_sparse_used_range_costs_nothing(book):
    sparse = book.text[book.text.index("## Sparse"):]
    # Column B is empty in the whole sheet: not rendered; the row, without
    # a label of its own, starts with the empty label cell.
    assert sparse == "## Sparse\n\nLonely value\n| 2024-05-06 14:30"


def test_formula_without_cached_value_is_flagged_not_printed(book):
    assert "=1+1" not in book.text and "1+1" not in book.text
    (note,) = book.notes
    assert "without a cached value" in note and "'Notes '!B3" in note
    assert "Check" in book.text  # the row's other cell is still there


def test_merged_title_appears_once_per_block(book):
    blocks = book.text.count("Quarterly sales 2024")
    assert blocks == len([p for p in _pairs(book) if p[0].locator.sheet == "Q1 sales"])
    assert "Quarterly sales 2024 | Quarterly sales 2024" not in book.text


@pytest.mark.parametrize(
    ("value", "fmt", "shown"),
    [
        (0.336, "0.0%", "33.6%"),
        (0.5, "0%", "50%"),
        (1234.5, "#,##0.00", "1,234.50"),
        (1234.5, '"$"#,##0.00', "$1,234.50"),
        (1234.5, "[$€-407] #,##0.00", "€1,234.50"),
        (3.0, "General", "3"),
        (0.1 + 0.2, "General", "0.3"),
        (12345, "0.00E+00", "1.23E+04"),
        (datetime(2024, 3, 31), "yyyy-mm-dd", "2024-03-31"),
        (datetime(2024, 3, 31, 9, 5), "yyyy-mm-dd hh:mm", "2024-03-31 09:05"),
        (date(2024, 3, 31), "General", "2024-03-31"),
        (time(14, 30), "hh:mm", "14:30:00"),
        (True, "General", "TRUE"),
        ("two\nlines", "General", "two lines"),
    ],
)
def test_display(value, fmt, shown):
    assert display(value, fmt) == shown


def _docx_like() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", "<document/>")
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "options", "error", "reason"),
    [
        (lambda m: b"", None, Empty, "empty"),
        (lambda m: m.workbook_without_sheets(), None, NoText, "no worksheets"),
        (lambda m: m.workbook()[:4000], None, Corrupt, "damaged or truncated zip"),
        (lambda m: b"Region,Share\nNorth,0.3\n", None, Corrupt, "not an xlsx"),
        (lambda m: _docx_like(), None, UnsupportedType, "Word document"),
        (lambda m: m.zip_bomb(64 << 20), ExtractOptions(max_unpacked_bytes=32 << 20), TooLarge, "zip bomb"),
    ],
    ids=["empty", "no-sheets", "bad-zip", "csv", "docx", "zip-bomb"],
)
def test_bad_workbooks(make, data, options, error, reason):
    with pytest.raises(error, match=reason):
        sheet.extract(data(make), "bad.xlsx", options)


def test_zip_bomb_refused_by_the_default_limit(make):
    # 600 MiB of zeros in ~1 MB: refused from the zip directory, never inflated.
    bomb = make.zip_bomb(600 << 20)
    assert len(bomb) < 1 << 20
    with pytest.raises(TooLarge):
        sheet.extract(bomb, "bomb.xlsx")
