"""The one cell of a table chunk that answers a question, for its citation label.

A table chunk quotes a block of rows under its title block and header rows; the reader of a
citation should not have to find the number in it. So when the question names one row and
one column of the quoted table, the label says so:
``half-year, '3.4 Reconciliation'!C25 — Trading operating profit · 30 06 2023``.

How the cell is chosen (principled, and refusing to guess):

- The quote is read back into rows exactly as ``extractors.tables`` laid it out (cells
  :data:`CELL_SEPARATOR` apart, a row without a label starting "| ") and the same rules that
  laid it out (``layout``: title block, header rows, row-label columns) tell its parts apart,
  so the query side reads a table as the extractor wrote it, with no second heuristic.
- A data row is named by its row labels and the group row it falls under ("Europe"), a value
  column by its header cells top to bottom ("France / H1 2023 / €m"). Each is scored by the
  question's words it contains (prefix stems, numbers kept: a year is what tells two
  periods apart); the row with most shared words wins, then the one with fewest words left
  over ("Operating profit" over "Trading operating profit" for "operating profit?"). A tie
  or no shared word names nothing, unless the table has only that one row or column.
- The label is added only for a non-empty cell where both are chosen; otherwise the citation
  keeps its range label. Locators and the quote are untouched: the quote is still exactly
  the canonical slice, and the fragment still opens every cell quoted.
- The cell's address is given only where it is certain: the chunk's data locators are one
  rectangle (runs of columns over the same rows) whose rows are exactly the quoted data
  lines, in order, after as many context lines as its header locators name. Otherwise the
  label names the sheet (or table), the row label and the column header without an address.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from citeline.extractors.tables import cell_kind, layout, split_tables
from citeline.query.words import STOPWORDS
from citeline.schemas.document import CELL_SEPARATOR, tabular
from citeline.schemas.grid import GridRow
from citeline.schemas.locator import Locator, RowRange, SheetRange, quote_sheet

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# Phrases a question uses for the short period names header rows use.
_PERIOD_WORDS = (
    (re.compile(r"\bfirst[\s-]+half\b|\bhalf[\s-]+year\b"), "h1"), (re.compile(r"\bsecond[\s-]+half\b"), "h2"),
    (re.compile(r"\bfirst[\s-]+quarter\b"), "q1"), (re.compile(r"\bsecond[\s-]+quarter\b"), "q2"),
    (re.compile(r"\bthird[\s-]+quarter\b"), "q3"), (re.compile(r"\bfourth[\s-]+quarter\b"), "q4"),
    (re.compile(r"\bfull[\s-]+year\b"), "fy"),
)
SEPARATOR = " — "  # between the range part of a label and the cell's names
BETWEEN = " · "  # between the row label and the column header


@dataclass(frozen=True)
class AnswerCell:
    """The cell a question asks for: its row label, its column header and, where certain, its
    address (``'Sheet'!C25`` or a CSV ``row 26``)."""

    row: str
    column: str
    value: str
    address: str = ""

    def label(self) -> str:
        return f"{self.row}{BETWEEN}{self.column}"


def _terms(text: str) -> set[str]:
    """Lower-cased words (5-letter prefixes) and numbers of ``text``, stopwords dropped.

    >>> sorted(_terms("What was the trading operating profit in the first half of 2023?"))
    ['2023', 'first', 'h1', 'half', 'opera', 'profi', 'tradi']
    """
    lowered = text.lower()
    out = {w[:5] if not w.isdigit() else w.lstrip("0") or "0" for w in _TOKEN.findall(lowered) if w not in STOPWORDS}
    out |= {short for pattern, short in _PERIOD_WORDS if pattern.search(lowered)}
    return out


def _cells(line: str) -> list[str]:
    """A rendered row's cells; one laid out without a label starts "| " (first cell empty)."""
    if line.startswith("|"):
        line = " " + line
    return [c.strip() for c in line.split(CELL_SEPARATOR)]


def _best(scored: Sequence[tuple[int, int, int]]) -> int | None:
    """Index of the unique best (shared words, then fewest words left over); None on a tie
    or when nothing is shared."""
    if not scored:
        return None
    top = max(scored, key=lambda s: (s[0], -s[1]))
    if top[0] == 0 or sum((s[0], s[1]) == (top[0], top[1]) for s in scored) > 1:
        return None
    return top[2]


def answer_cell(quote: str, locators: Sequence[Locator], question: str) -> AnswerCell | None:
    """The one cell of ``quote`` that ``question`` names by its row label and column header,
    or None (not a table, or no single row and column named)."""
    if not question or CELL_SEPARATOR not in quote or not tabular(quote):
        return None
    lines = quote.split("\n")
    grid = [GridRow(k, {c: t for c, t in enumerate(_cells(line), start=1) if t}) for k, line in enumerate(lines, 1)]
    grid = [r for r in grid if r.cells]
    asked = _terms(question)
    best: tuple[tuple[int, int], AnswerCell, int, int] | None = None  # score, cell, line, column position
    tie = False
    for table in split_tables(grid):
        found = _in_table(table, asked)
        if found is None:
            continue
        if best is None or found[0] > best[0]:
            best, tie = found, False
        elif found[0] == best[0]:
            tie = True
    if best is None or tie:
        return None
    _, cell, line, column = best
    return AnswerCell(cell.row, cell.column, cell.value, _address(lines, locators, line, column))


def _in_table(rows: list[GridRow], asked: set[str]) -> tuple[tuple[int, int], AnswerCell, int, int] | None:
    table = layout(rows)
    if not table.values:
        return None
    headers = [rows[k] for k in table.headers]
    body = rows[table.body_start:]
    group = ""
    named: list[tuple[str, str, GridRow]] = []  # (group, own label, row)
    for row in body:
        words = [row.cells[c] for c in table.labels if c in row.cells]
        if not any(cell_kind(t) == "number" for t in row.cells.values()):
            if row.cells.keys() <= set(table.labels):
                group = " / ".join(words)  # a group row: the rows below fall under it
            continue
        named.append((group, " / ".join(words), row))
    if not named:
        return None
    paths: list[list[str]] = []
    for c in table.values:
        path: list[str] = []
        for h in headers:
            t = h.cells.get(c, "")
            if t and (not path or path[-1] != t):
                path.append(t)
        paths.append(path)
    # The header rows that tell the value columns apart (segments, periods; not a units row
    # that says "€m" over every column): the chosen column must be named in each of them.
    telling = [h for h in headers if len({h.cells.get(c, "") for c in table.values}) > 1]

    # Rows under two or more groups ("France", "Europe" above the same metrics): the chosen
    # row's group must be asked for, as a column must be named in every header row telling
    # the columns apart.
    groups = len({group for group, _, _ in named}) > 1
    rows_scored = []
    for k, (group, own, _) in enumerate(named):
        mine, theirs = _terms(own), _terms(group)
        shared = len(mine & asked)
        if 2 * shared <= len(mine) or (groups and not theirs & asked):
            continue  # the question does not name this row: most of its label is not asked
        rows_scored.append((shared + len(theirs & asked), len(mine - asked) + len(theirs - asked), k))
    cols_scored = []
    for k, c in enumerate(table.values):
        if len(table.values) > 1 and not all(_terms(h.cells.get(c, "")) & asked for h in telling):
            continue
        terms = _terms(" ".join(paths[k]))
        cols_scored.append((len(terms & asked), len(terms - asked), k))
    r = 0 if len(named) == 1 else _best(rows_scored)
    c = 0 if len(table.values) == 1 else _best(cols_scored)
    if r is None or c is None:
        return None
    group, own, row = named[r]
    label = " / ".join(w for w in (group, own) if w)
    header = " / ".join(paths[c])
    column = table.values[c]
    value = row.cells.get(column, "")
    if not value or not label or not header:
        return None
    # Every asked word that names some row, group or column of this table names this cell:
    # a question about Europe does not get a cell of Africa from a table that has Europe.
    vocabulary = set().union(*(_terms(t) for h in headers for t in h.cells.values()),
                             *(_terms(t) for r_ in body for c_, t in r_.cells.items() if c_ in table.labels))
    names = _terms(label) | _terms(header)
    if (asked & vocabulary) - names:
        return None
    return (len(names & asked), 0), AnswerCell(label, header, value), row.number, column


def _address(lines: list[str], locators: Sequence[Locator], line: int, position: int) -> str:
    """``'Sheet'!C25`` (or ``row 26`` of a CSV) for the cell at ``position`` of quote line
    ``line`` (1-based), when the locators map the quoted lines to the source without doubt."""
    from openpyxl.utils import get_column_letter, range_boundaries  # sheet ranges only: openpyxl is heavy

    sheets = [loc for loc in locators if isinstance(loc, SheetRange)]
    records = [loc for loc in locators if isinstance(loc, RowRange)]
    if sheets and len(sheets) == len(locators):
        header = [loc for loc in sheets if loc.header]
        data = [loc for loc in sheets if not loc.header]
        if not data or len({loc.sheet for loc in sheets}) > 1:
            return ""
        try:
            boxes = [range_boundaries(loc.cells) for loc in data]
            context = sum(b[3] - b[1] + 1 for b in (range_boundaries(loc.cells) for loc in header))
        except (ValueError, TypeError):
            return ""
        if len({(b[1], b[3]) for b in boxes}) > 1:
            return ""  # rows of two blocks: which line is which row is not certain
        first, last = boxes[0][1], boxes[0][3]
        columns = sorted({c for b in boxes for c in range(b[0], b[2] + 1)})
        if context + (last - first + 1) != len(lines) or line <= context or position > len(columns):
            return ""
        return f"{quote_sheet(data[0].sheet)}!{get_column_letter(columns[position - 1])}{first + line - context - 1}"
    if records and len(records) == len(locators):
        header = [loc for loc in records if loc.header]
        data = [loc for loc in records if not loc.header]
        if len(data) != 1:
            return ""
        context = sum(loc.last - loc.first + 1 for loc in header)
        if context + (data[0].last - data[0].first + 1) != len(lines) or line <= context:
            return ""
        return RowRange(data[0].first + line - context - 1, data[0].first + line - context - 1).label()
    return ""
