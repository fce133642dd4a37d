"""A file that has text never fails "no-text". A table whose columns are all labels
and whose cells are longer than a block (a page laid out in one table cell, a sheet of paragraphs)
was split into no part at all, its text lost: unstructured's ideas-page.html (an essay in a layout
table) failed ``no-text: the page holds no text outside navigation and boilerplate``.
"""
from __future__ import annotations

import io

from citeline.pipeline.prepare import extract_bytes
from citeline.schemas.options import ExtractOptions

OPTIONS = ExtractOptions(time_limit_s=60)
ESSAY = "The way to get new ideas is to notice anomalies: what seems strange, or missing, or broken? " * 8


def test_a_page_laid_out_in_one_table_cell_keeps_its_text():
    page = f"<html><body><table><tr valign=top><td><img src=logo.gif></td><td><font>{ESSAY}</font></td></tr>" \
           "</table></body></html>"
    canonical = extract_bytes(page.encode(), "essay.html", OPTIONS)
    assert " ".join(canonical.text.split()).count("notice anomalies") == 8


def test_a_workbook_of_two_sheets_of_paragraphs_keeps_them():
    from openpyxl import Workbook

    book = Workbook()
    book.active.title = "Notes"
    book.active["A1"] = ESSAY
    book.create_sheet("More")["A1"] = "Second sheet: " + ESSAY
    buffer = io.BytesIO()
    book.save(buffer)
    canonical = extract_bytes(buffer.getvalue(), "notes.xlsx", OPTIONS)
    assert "Second sheet: The way to get new ideas" in canonical.text
    assert " ".join(canonical.text.split()).count("notice anomalies") == 16


def test_a_workbook_with_no_value_in_any_cell_is_empty():
    from openpyxl import Workbook

    from citeline.schemas.errors import Empty

    buffer = io.BytesIO()
    Workbook().save(buffer)
    try:
        extract_bytes(buffer.getvalue(), "blank.xlsx", OPTIONS)
    except Empty as exc:
        assert str(exc) == "no cell holds a value: all 1 worksheets are empty"
    else:
        raise AssertionError("a workbook with no values was read")
