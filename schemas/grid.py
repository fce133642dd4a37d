"""Tables as the extractors read them, before they become canonical text.

Every table extractor (sheets, CSV/TSV, Word, HTML, slides) reads its table into rows of
:class:`GridRow` and hands them to ``extractors.tables``, which decides which rows are the
title block, which are header rows and which columns hold the row labels
(:class:`TableLayout`), and lays each block of rows out with all of them repeated above it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from citeline.schemas.document import Segment

# A merged range as openpyxl's ``range_boundaries`` gives it: min_col, min_row, max_col, max_row.
Merge = tuple[int, int, int, int]


@dataclass
class GridRow:
    """One non-empty row: its number in the source (sheet row, CSV record, table row, all
    1-based) and its displayed cells by column (1-based), non-empty cells only."""

    number: int
    cells: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TableLayout:
    """What makes a table readable, as indices into its rows and its column numbers.

    ``preamble``: leading one-cell rows too long (or too many) to repeat, shown once;
    ``titles``: the title/caption lines repeated above every block ("3.4 Reconciliation…",
    "In millions of CHF"); ``headers``: every header row (group headers, column names,
    periods, units); ``labels``: the row-label columns, kept in every part of a table
    split by columns; ``values``: the other columns in use, in order.
    """

    preamble: tuple[int, ...]
    titles: tuple[int, ...]
    headers: tuple[int, ...]
    labels: tuple[int, ...]
    values: tuple[int, ...]

    @property
    def body_start(self) -> int:
        """Index of the first row after the title block and the header rows."""
        return 1 + max((*self.preamble, *self.titles, *self.headers), default=-1)


@dataclass(frozen=True)
class Block:
    """One block of a table as canonical text: its context lines (titles, header rows, the
    group row it falls under) then its rows, and the segments of that text, offsets
    relative to the block's own start."""

    text: str
    segments: tuple[Segment, ...]
