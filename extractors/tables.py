"""Tables that can be read alone: every block of rows carries its context.

A number quoted without its row label and its column headers cannot be checked: in a
half-year report "7,351 | 6,684" is two periods, and only the period row above says which is
2023. So every table extractor lays its tables out here, the same way:

- the **title block** (one-cell rows above the table: "3.4 Reconciliation of trading
  operating profit", "In millions of CHF"), **every header row** (group headers, column
  names, a period row, a units row) and, inside the body, the **group row** a block falls
  under (a row with a label and no values, "Europe") are repeated above every block of rows;
- a merged header cell (or, where a format has no merges, a group header followed by empty
  cells that the row below fills) is spread to every column it spans, so each column reads
  as "Mobile / 2023" without counting cells; a cell merged down the label column is spread
  to every row it spans;
- the **row-label columns** (the leading columns whose cells are words, not numbers) start
  every row, and a table too wide for a block is split by columns into parts that each
  keep them;
- columns that are empty in the whole table are not rendered at all, so a value far to the
  right (column XFD) costs its own width, not 16,000 empty cells.

Which rows are which is read from the cells alone, the same for every format: a row with a
number (not a year or a date) is a data row; the rows above the first data row are headers;
a row of one word cell above them, in a table of several columns, is a title. A table of
words only (no data row found) keeps the old rule: its first row names the columns.

The text is built here, so the quote is exact: context and rows are one contiguous block of
the canonical text, and each line's cells carry segments naming exactly their cells
(the header rows flagged ``header``, the data rows not), through the ``locate`` callback of
the format (a sheet range, CSV records, a passage, a slide).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from citeline.schemas.document import CELL_SEPARATOR, Segment
from citeline.schemas.grid import Block, GridRow, Merge, TableLayout
from citeline.schemas.locator import Locator

# Kinds of rows a locator is asked for: title lines and header rows (repeated context) or data.
TITLE, HEADER, DATA = "title", "header", "data"
# locate(kind, (first row, last row), (first column, last column)) -> the locator of those cells.
Locate = Callable[[str, tuple[int, int], tuple[int, int]], Locator | None]

MAX_TITLES = 3  # title/caption lines repeated above each block; earlier ones are shown once
MAX_TITLE_CHARS = 160  # a longer one-cell row is a note: shown once, not repeated
MAX_HEADER_ROWS = 6  # header rows looked for above the first data row
MAX_LABEL_COLUMNS = 3
MIN_BLOCK_ROWS = 1  # a table is split by columns only when its context and one row overflow a block

# ------------------------------------------------------------------------ cells

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_YEAR = r"(?:19|20)\d\d"
_PERIOD = re.compile(
    rf"""(?ix)
    (?:(?:fy|cy|h[12]|[12]h|q[1-4]|[1-4]q|s[12]|[369]m|9m|ytd|ltm|ttm)\s*['’]?\s*(?:{_YEAR}|\d\d)(?:\s*[/-]\s*\d{{2,4}})?
      | (?:fy|cy|h[12]|q[1-4]|ytd)?\s*{_YEAR}(?:\s*[/-]\s*(?:{_YEAR}|\d\d))?(?:\s*(?:h[12]|q[1-4]))?
      | \d{{1,2}}[\s./-]\d{{1,2}}[\s./-](?:{_YEAR}|\d\d)
      | {_YEAR}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d)?)?
      | (?:\d{{1,2}}\s+)?{_MONTH},?\s+(?:\d{{1,2}},?\s+)?{_YEAR}
      | {_MONTH}\s*[-–]\s*{_MONTH}\s+{_YEAR}
      | \d\d:\d\d(?::\d\d)?
    )"""
)
_NUMBER = re.compile(
    r"""(?x)[-+−–(]?\s*[$€£¥₣₹]?\s*
    (?:\d{1,3}(?:[,.'’\u00a0\u202f ]\d{3})+|\d+)(?:[.,]\d+)?
    \s*[%‰]?\s*\)?\s*(?:[a-zA-Z]{1,3}\.?)?"""
)


def cell_kind(text: str) -> str:
    """``period`` (a year, a date, "H1 2023", "30 06 2023"), ``number`` or ``text``.

    Periods are told from numbers because a row of periods is a header row, a row with a
    number is a data row.

    >>> [cell_kind(t) for t in ("30 06 2023", "H1 2023", "2023", "FY23", "2024-03-31", "June 2023")]
    ['period', 'period', 'period', 'period', 'period', 'period']
    >>> [cell_kind(t) for t in ("7,351", "(1,234.5)", "33.6%", "€1,234.50", "-12", "4.6bn", "12")]
    ['number', 'number', 'number', 'number', 'number', 'number', 'number']
    >>> [cell_kind(t) for t in ("Trading operating profit", "CHF m", "Q1 sales", "2023 total")]
    ['text', 'text', 'text', 'text']
    """
    text = text.strip()
    if _PERIOD.fullmatch(text):
        return "period"
    if _NUMBER.fullmatch(text):
        return "number"
    return "text"


def _has_number(row: GridRow) -> bool:
    return any(cell_kind(t) == "number" for t in row.cells.values())


# ------------------------------------------------------------------------ documents' tables


def grid(matrix: Sequence[Sequence[tuple[object, str]]]) -> tuple[list[GridRow], list[Merge]]:
    """A document table (Word, HTML, slides) as grid rows and merges.

    Args:
        matrix: per table row, per column position, ``(key, text)``: a merged cell appears at
            every position it spans with the same key (python-docx repeats it so; HTML and
            slide spans are expanded so by their readers).

    Returns:
        Non-empty rows numbered from 1, each cell at its first position only, and the
        rectangle of every cell spanning more than one position.

    >>> rows, merges = grid([[("a", ""), ("b", "France"), ("b", "France")], [("c", "Revenue"), ("d", "1"), ("e", "2")]])
    >>> [r.cells for r in rows], merges
    ([{2: 'France'}, {1: 'Revenue', 2: '1', 3: '2'}], [(2, 1, 3, 1)])
    """
    where: dict[object, list[int]] = {}  # key -> [min_col, min_row, max_col, max_row]
    rows: list[GridRow] = []
    for r, line in enumerate(matrix, start=1):
        row = GridRow(r)
        for c, (key, text) in enumerate(line, start=1):
            box = where.get(key)
            if box is None:
                where[key] = [c, r, c, r]
                if text:
                    row.cells[c] = text
            else:
                box[2], box[3] = max(box[2], c), max(box[3], r)
        if row.cells:
            rows.append(row)
    merges = [tuple(b) for b in where.values() if (b[0], b[1]) != (b[2], b[3])]
    return rows, merges  # type: ignore[return-value]


# ------------------------------------------------------------------------ tables in a grid


def split_tables(rows: Sequence[GridRow]) -> list[list[GridRow]]:
    """The grid's tables, top to bottom: a new table starts, after data rows, at a row without
    numbers that follows an empty row or holds a period ("30 06 2023"), when a data row comes
    within the next rows: a second title and header, not a label row of the first table."""
    tables: list[list[GridRow]] = [[]]
    seen_data = False
    first_col = min((c for r in rows for c in r.cells), default=1)
    for k, row in enumerate(rows):
        numeric = _has_number(row)
        if seen_data and not numeric and tables[-1]:
            gap = row.number > tables[-1][-1].number + 1
            # A period row of its own ("| 30 06 2023 | 30 06 2022"): a labelled row of
            # year-like values ("Staff | 2010 | 2011") may well be data.
            period = first_col not in row.cells and any(cell_kind(t) == "period" for t in row.cells.values())
            # One label over a header row of its own ("January–June 2022" above "In millions
            # of CHF | Zone NA | …"): the next section's title, not a group of this table,
            # whose header would otherwise be repeated over it (and name the other period).
            retitled = len(row.cells) == 1 and _header_next(rows[k + 1:k + 1 + MAX_HEADER_ROWS])
            ahead = any(_has_number(r) for r in rows[k + 1:k + 1 + MAX_HEADER_ROWS])
            if (gap or period or retitled) and ahead:
                tables.append([])
                seen_data = False
        tables[-1].append(row)
        seen_data = seen_data or numeric
    return [t for t in tables if t]


def _header_next(rows: Sequence[GridRow]) -> bool:
    """Whether ``rows`` open with a header row (two or more cells, no number) before any data.

    >>> _header_next([GridRow(5, {1: "CHF m", 2: "Zone NA", 3: "Total"}), GridRow(6, {1: "Sales", 2: "4", 3: "9"})])
    True
    >>> _header_next([GridRow(5, {1: "France", 2: "4", 3: "9"})]), _header_next([GridRow(5, {1: "Notes"})])
    (False, False)
    """
    return bool(rows) and len(rows[0].cells) > 1 and not _has_number(rows[0])


def layout(rows: Sequence[GridRow], merges: Sequence[Merge] = ()) -> TableLayout:
    """Which rows are the title block and the headers, which columns the row labels."""
    used = sorted({c for r in rows for c in r.cells})
    lead = 0
    while lead < len(rows) - 1 and _title_like(rows[lead], merges, len(used)):
        lead += 1
    first = next((j for j in range(lead, min(len(rows), lead + MAX_HEADER_ROWS + 1)) if _has_number(rows[j])), None)
    if first is None:  # words only: the first row names the columns, as it always did
        headers = (lead,) if lead < len(rows) - 1 else ()
    else:
        headers = tuple(range(lead, first))
        # A row of one label right above the first data row names its group ("France"),
        # not a column: it stays in the body, where it is repeated as the group row.
        first_col = used[0] if used else 1
        while headers and rows[headers[-1]].cells.keys() == {first_col} and len(used) > 1:
            headers = headers[:-1]
    titles: list[int] = []
    for k in range(lead - 1, -1, -1):
        if len(titles) == MAX_TITLES or len(_only(rows[k])) > MAX_TITLE_CHARS:
            break
        titles.insert(0, k)
    preamble = tuple(range(0, lead - len(titles)))
    body = rows[1 + max((*preamble, *titles, *headers), default=-1):]
    labels = _label_columns(body, used)
    return TableLayout(preamble, tuple(titles), headers, labels, tuple(c for c in used if c not in labels))


def _only(row: GridRow) -> str:
    return next(iter(row.cells.values())) if len(row.cells) == 1 else ""


def _title_like(row: GridRow, merges: Sequence[Merge], width: int) -> bool:
    """One cell of words (or cells of one horizontal merge) in a table of several columns."""
    if width < 2:
        return False
    cols = sorted(row.cells)
    if len(cols) > 1:
        merge = next((m for m in merges if m[1] <= row.number <= m[3] and m[0] <= cols[0] <= m[2]), None)
        if merge is None or cols[-1] > merge[2]:
            return False
    return cell_kind(row.cells[cols[0]]) == "text"


def _label_columns(body: Sequence[GridRow], used: Sequence[int]) -> tuple[int, ...]:
    """The leading columns whose data cells are mostly words or dates, never every column:
    the first column always labels its row (in a table of numbers it is the key)."""
    data = [r for r in body if _has_number(r)] or list(body)
    labels: list[int] = []
    for c in used[:min(MAX_LABEL_COLUMNS, max(1, len(used) - 1))]:
        kinds = [cell_kind(r.cells[c]) for r in data if c in r.cells]
        words = sum(k != "number" for k in kinds)
        if labels and (not kinds or 2 * words <= len(kinds)):
            break
        labels.append(c)
    return tuple(labels or used[:1])


# ------------------------------------------------------------------------ spreading


def spread(rows: Sequence[GridRow], table: TableLayout, merges: Sequence[Merge]) -> list[GridRow]:
    """The rows with merged header cells spread to every column they span, group headers
    without a merge spread right over the columns the last header row fills, and cells
    merged down spread to every row they span."""
    out = [GridRow(r.number, dict(r.cells)) for r in rows]
    header_rows = {out[k].number: out[k] for k in table.headers}
    body = {r.number: r for r in out[table.body_start:]}
    used = set(table.labels) | set(table.values)
    merged_at: set[tuple[int, int]] = set()
    for c0, r0, c1, r1 in merges:
        anchor = header_rows.get(r0) or body.get(r0)
        value = anchor.cells.get(c0) if anchor else None
        for number in range(r0, r1 + 1):
            for c in range(c0, c1 + 1):
                merged_at.add((number, c))
        if not value:
            continue
        for number in range(r0, r1 + 1):
            if number in header_rows:
                for c in range(c0, c1 + 1):
                    if c in used:
                        header_rows[number].cells.setdefault(c, value)
            elif number in body and r1 > r0:
                # A cell spanning rows holds for each row it spans, in any column (an HTML
                # rowspan, a sheet's cells merged down): each row says it, as the peers read it.
                for c in range(c0, c1 + 1):
                    if c in used:
                        body[number].cells.setdefault(c, value)
            elif number in body and c0 in table.labels:
                body[number].cells.setdefault(c0, value)
    if len(table.headers) > 1:
        last = out[table.headers[-1]]
        for k in table.headers[:-1]:
            row, current = out[k], ""
            for c in table.values:
                if c in row.cells:
                    current = row.cells[c]
                elif current and c in last.cells and (row.number, c) not in merged_at:
                    row.cells[c] = current
    return out


# ------------------------------------------------------------------------ layout as text


def table_blocks(rows: Sequence[GridRow], locate: Locate, block_chars: int, block_rows: int,
                 merges: Sequence[Merge] = ()) -> Iterator[Block]:
    """Every table of the grid as blocks of canonical text, each readable alone.

    Args:
        rows: the grid's non-empty rows, top to bottom.
        locate: the format's locator for a kind of rows and a rectangle of cells.
        block_chars, block_rows: a block's size limits (context included).
        merges: merged ranges (sheets, Word, HTML spans).
    """
    for band in side_by_side(rows):
        for table in split_tables(band):
            yield from _table(table, locate, block_chars, block_rows, merges)


def side_by_side(rows: Sequence[GridRow]) -> list[list[GridRow]]:
    """The grid cut into bands of columns where tables stand side by side, left to right.

    Two tables stand side by side when an empty column parts them and the one that starts
    lower opens with a header row of its own (a second table placed to the right of the
    first, ``xlsx_01``): read as one, each row fused a row of one with a row of the other.
    An empty spacer column inside one table (a report's label column, a gap, its figures)
    parts nothing: both sides start on the same row, or the lower one opens with data.

    >>> band = lambda g: [(r.number, sorted(r.cells)) for r in g]
    >>> rows = [GridRow(1, {1: "a", 2: "b"}), GridRow(2, {1: "1", 2: "2", 4: "c", 5: "d"}), GridRow(3, {1: "3", 4: "5", 5: "6"})]
    >>> [band(g) for g in side_by_side(rows)]
    [[(1, [1, 2]), (2, [1, 2]), (3, [1])], [(2, [4, 5]), (3, [4, 5])]]
    >>> spacer = [GridRow(1, {1: "CHF m", 3: "2023"}), GridRow(2, {1: "Sales", 3: "4"})]
    >>> len(side_by_side(spacer))
    1
    """
    columns = sorted({c for r in rows for c in r.cells})
    runs: list[list[int]] = []  # runs of adjacent used columns
    for c in columns:
        if runs and c == runs[-1][-1] + 1:
            runs[-1].append(c)
        else:
            runs.append([c])
    if len(runs) < 2:
        return [list(rows)]
    first = {}  # column -> first row holding it
    for r in rows:
        for c in r.cells:
            first.setdefault(c, r)
    bands: list[list[int]] = [runs[0]]
    for run in runs[1:]:
        left, right = min((first[c] for c in bands[-1]), key=lambda r: r.number), \
            min((first[c] for c in run), key=lambda r: r.number)
        lower, span = (right, run) if right.number > left.number else (left, bands[-1])
        opening = {c: t for c, t in lower.cells.items() if c in span}
        if left.number != right.number and len(opening) > 1 and \
                not any(cell_kind(t) == "number" for t in opening.values()):
            bands.append(run)
        else:
            bands[-1] = bands[-1] + run
    if len(bands) == 1:
        return [list(rows)]
    out = []
    for band in bands:
        keep = set(band)
        out.append([GridRow(r.number, {c: t for c, t in r.cells.items() if c in keep}) for r in rows
                    if keep & r.cells.keys()])
    return out


def _table(rows: list[GridRow], locate: Locate, block_chars: int, block_rows: int,
           merges: Sequence[Merge]) -> Iterator[Block]:
    table = layout(rows, merges)
    rows = spread(rows, table, merges)
    every = list(table.labels + table.values)
    if table.preamble:
        yield _render([], [_Line(TITLE, rows[k], None) for k in table.preamble], locate)
    titles = [rows[k] for k in table.titles]
    headers = [rows[k] for k in table.headers]
    body = rows[table.body_start:]
    if not body:  # a table that is all heading: the heading is the data
        yield _render([], [_Line(TITLE, r, None) for r in titles] + [_Line(HEADER, r, every) for r in headers], locate)
        return
    group_rows = {r.number for r in body if r.cells.keys() <= set(table.labels) and not _has_number(r)}
    body, notes = _notes(body, group_rows)
    parts = _parts(table, titles, headers, body, block_chars)
    for columns in parts:
        values = set(columns) - set(table.labels)
        context = [_Line(TITLE, r, None) for r in titles] + [_Line(HEADER, r, columns) for r in headers]
        size = sum(len(_text(line)) + 1 for line in context)
        group: GridRow | None = None  # the last group row above the current row
        block: list[_Line] = []
        block_group: GridRow | None = None
        chars = 0
        for row in body:
            grouping = row.number in group_rows
            if len(parts) > 1 and not grouping and not values & row.cells.keys():
                continue  # nothing of this row in this part of a table split by columns
            line = _Line(DATA, row, columns)
            width = len(_text(line)) + 1
            # A block is cut only once it holds a row of its own: group rows alone under the
            # headers would be a piece of labels that no figure follows.
            if block and _rows_in(block, group_rows) and (chars + width > block_chars or len(block) >= block_rows):
                yield _render(_context(context, block_group, table), block, locate)
                block = []
            if not block:
                block_group = None if grouping else group
                chars = size + (len(_text(_Line(GROUP, group, list(table.labels)))) + 1 if block_group else 0)
            block.append(line)
            chars += width
            if grouping:
                group = row
        if block and (_rows_in(block, group_rows) or len(parts) == 1):
            yield _render(_context(context, block_group, table), block, locate)
        # else: group rows with no figure in this part of a table split by columns; another
        # part shows them over their figures.
    if notes:
        yield _render([], [_Line(TITLE, r, None) for r in notes], locate)


def _rows_in(block: list[_Line], group_rows: set[int]) -> bool:
    """Whether a block holds a row that is not a group row: the figures (or, in a table of
    words, the entries) the headers and group rows label."""
    return any(line.row.number not in group_rows for line in block)


def _notes(body: list[GridRow], group_rows: set[int]) -> tuple[list[GridRow], list[GridRow]]:
    """The body less its notes: the rows of labels alone after its last row of figures
    ("(b) Underlying trading operating profit is before …"). Laid out as group rows, they were
    repeated under the headers in a block of their own, per part of a table split by columns:
    pieces of labels and footnotes without a number, nearer a question than the figures they
    annotate because they repeat its words. They are shown once, after the
    table, without the repeated context. A table without figures keeps its rows."""
    last = max((k for k, r in enumerate(body) if _has_number(r)), default=None)
    if last is None or not all(r.number in group_rows for r in body[last + 1:]):
        return body, []
    return body[:last + 1], body[last + 1:]


def _context(context: list[_Line], group: GridRow | None, table: TableLayout) -> list[_Line]:
    """A block's context: titles, header rows, and the group row it falls under (when the
    block does not start with a group row of its own)."""
    return context + [_Line(GROUP, group, list(table.labels))] if group is not None else context


def _parts(table: TableLayout, titles: list[GridRow], headers: list[GridRow], body: list[GridRow],
           block_chars: int) -> list[list[int]]:
    """The label columns plus groups of value columns, each group as wide as lets the
    context and a typical row fit a block; one part when the whole table fits.

    A row is measured by its columns' typical widths (the upper quartile of their cells), the
    header rows by their own cells: measured by the widest cell of each column, a table of
    records (a customer list, twelve short fields and one long address) was cut into column
    groups no reader keeps apart, while every peer keeps such a row whole.
    A row wider than its block stays one line, which the chunker cuts.
    """
    lengths: dict[int, list[int]] = {}
    for row in body:
        for c, t in row.cells.items():
            lengths.setdefault(c, []).append(min(len(t), block_chars))
    typical = {c: sorted(found)[(3 * len(found)) // 4] for c, found in lengths.items()}
    heads: dict[int, int] = {}
    for row in headers:
        for c, t in row.cells.items():
            heads[c] = max(heads.get(c, 0), min(len(t), block_chars))
    sep = len(CELL_SEPARATOR)
    fixed = sum(len(_only(r)) + 1 for r in titles)

    def fits(columns: list[int]) -> bool:
        seps = sep * (len(columns) - 1) + 1
        header = sum(heads.get(c, 0) for c in columns) + seps
        row = sum(typical.get(c, 0) for c in columns) + seps
        return fixed + len(headers) * header + MIN_BLOCK_ROWS * row <= block_chars

    labels = list(table.labels)
    if fits(labels + list(table.values)):
        return [labels + list(table.values)]
    # Columns under one group header ("Europe" over its two periods) stay in one part when
    # they fit together: a part that cut a segment in two would quote half of it.
    units: list[list[int]] = []
    # The header rows that say more than one thing, found once: found per column, the table's
    # layout cost the square of its width (a 60,000-field record took minutes).
    varied = [h for h in headers if len(set(h.cells.values())) > 1]
    for c in table.values:
        top = next((h.cells.get(c) for h in varied), None)
        prev = units[-1][-1] if units else None
        if units and top and any(h.cells.get(prev) == top for h in headers[:1]) and fits(labels + units[-1] + [c]):
            units[-1].append(c)
        else:
            units.append([c])
    parts: list[list[int]] = []
    group: list[int] = []
    for unit in units:
        if group and not fits(labels + group + unit):
            parts.append(labels + group)
            group = []
        group += unit
    if group:
        parts.append(labels + group)
    # A table of label columns only whose cells are too long for a block (a page laid out in one
    # cell, a sheet of paragraphs) has no value columns to split: it is one part, over the block's
    # size, which the chunker cuts; it was no part at all, and its text was lost.
    return parts or [labels + list(table.values)]


GROUP = "group"  # a role of a line: the group row repeated above a block


class _Line:
    """One row to render and its role: a title (its one cell, ``columns`` None), a header
    row, a group row or a data row (the given columns)."""

    __slots__ = ("role", "row", "columns")

    def __init__(self, role: str, row: GridRow, columns: list[int] | None) -> None:
        self.role, self.row, self.columns = role, row, columns


def _cells(line: _Line) -> list[tuple[int, str]]:
    if line.columns is None:
        return sorted(line.row.cells.items())
    return [(c, line.row.cells.get(c, "")) for c in line.columns]


def _text(line: _Line) -> str:
    return _layout(line)[0]


def _layout(line: _Line) -> tuple[str, list[tuple[int, int, int]]]:
    """The line's text and, per non-empty cell, ``(start, end, column)`` within it: cells
    " | " apart, trailing empty cells dropped, leading whitespace stripped (a row without
    a label starts "| 2023")."""
    cells = _cells(line)
    while cells and not cells[-1][1]:
        cells.pop()
    pieces, spans, at = [], [], 0
    for k, (c, t) in enumerate(cells):
        if k:
            pieces.append(CELL_SEPARATOR)
            at += len(CELL_SEPARATOR)
        if t:
            spans.append((at, at + len(t), c))
        pieces.append(t)
        at += len(t)
    text = "".join(pieces)
    lead = len(text) - len(text.lstrip())
    return text[lead:], [(s - lead, e - lead, c) for s, e, c in spans]


def _runs(columns: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive source columns as (first, last) runs: [1, 2, 5] -> [(1, 2), (5, 5)]."""
    runs: list[tuple[int, int]] = []
    for c in sorted(columns):
        if runs and c == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    return runs


def _render(context: list[_Line], block: list[_Line], locate: Locate) -> Block:
    """Context lines, then the block's rows, one line each, as one contiguous text (so the
    quote of a chunk holding the block is exact). Each line gets a segment per run of
    adjacent columns; its locator names the rectangle that the lines of its role span in
    that run (context lines as ``header``: repeated above the rows), and adjacent equal
    locators merge, so a plain table is three segments: titles, headers, rows."""
    lines = [(line, HEADER) for line in context] + [(line, DATA) for line in block]
    rows: dict[tuple[str, str], tuple[int, int]] = {}
    spans_of: dict[tuple[str, str], tuple[int, int]] = {}
    laid = [(_layout(line), line, kind) for line, kind in lines]
    for (_, spans), line, kind in laid:
        key = (line.role, kind)
        lo, hi = rows.get(key, (line.row.number, line.row.number))
        rows[key] = (min(lo, line.row.number), max(hi, line.row.number))
        if line.columns is None and spans:
            c0, c1 = spans_of.get(key, (spans[0][2], spans[-1][2]))
            spans_of[key] = (min(c0, spans[0][2]), max(c1, spans[-1][2]))
    texts: list[str] = []
    segments: list[Segment] = []
    at = 0
    for (text, spans), line, kind in laid:
        key = (line.role, kind)
        runs = [spans_of[key]] if line.columns is None and spans else _runs(line.columns or [])
        for first, last in runs:
            inside = [(s, e) for s, e, c in spans if first <= c <= last]
            if not inside:
                continue
            locator = locate(kind, rows[key], (first, last))
            if locator is None:
                continue
            start, end = at + inside[0][0], at + inside[-1][1]
            if segments and segments[-1].locator == locator:
                segments[-1] = Segment(segments[-1].start, end, locator)
            else:
                segments.append(Segment(start, end, locator))
        texts.append(text)
        at += len(text) + 1
    return Block("\n".join(texts), tuple(segments))
