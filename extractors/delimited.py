"""CSV and TSV: records as pipe rows in blocks laid out as the spreadsheet extractor lays out
a sheet (extractors.tables: the title lines, every header record and the group record
repeated above every block, row labels first, split by columns when too wide), each piece
located by its RFC 7111 records (``#row=12-30``, the first line being record 1)."""
from __future__ import annotations

import csv
import io
from pathlib import PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, NoText
from citeline.schemas.grid import GridRow
from citeline.schemas.locator import RowRange
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, one_line, text_limit
from citeline.extractors.clean import Deadline
from citeline.extractors.tables import DATA, table_blocks
from citeline.extractors.text import decode, normalise

NAME = "csv"
# 2: tables that can be read alone: title lines, every header record and group
#    records repeated per block, split by columns when too wide; the text bounded.
# 3: a label alone over a header row of its own starts a new table
#    (extractors.tables.split_tables).
# 4: a table's notes (rows of labels alone after its last figures) shown once after it, not
#    repeated under its headers in pieces without a number (extractors.tables).
VERSION = "4"
SUFFIXES = (".csv", ".tsv", ".tab")
MAGIC: tuple[bytes, ...] = ()
_DELIMITERS = ",;\t|"


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of a delimited file.

    Raises:
        Empty, Undecodable (not text), Corrupt (a field over the csv module's 128 KiB
        limit, or a record it rejects), NoText (no values), Timeout.
    """
    options = options or ExtractOptions()
    deadline = Deadline(options.time_limit_s)
    if not data:
        raise Empty("empty file (0 bytes)")
    text = normalise(decode(data))
    if not text.strip():
        raise Empty(f"empty file (only whitespace, {len(data):,} bytes)")
    records = _records(text, _delimiter(text, name), deadline)
    rows = [GridRow(k, cells) for k, cells in enumerate(records, start=1) if cells]
    if not rows:
        raise NoText("the file holds no values")

    def locate(kind: str, numbers: tuple[int, int], cols: tuple[int, int]) -> RowRange:
        return RowRange(numbers[0], numbers[1], header=kind != DATA)

    writer = Writer(text_limit(options, len(data)))
    for block in table_blocks(rows, locate, options.sheet_block_chars, options.sheet_block_rows):
        writer.add_block(block)
    return Canonical(text=writer.text, title=PurePath(name).stem, extractor=NAME, extractor_version=VERSION,
                     segments=writer.segments)


def _delimiter(text: str, name: str) -> str:
    """Tab for .tsv/.tab; otherwise what csv.Sniffer finds among , ; tab |, else a comma."""
    if PurePath(name).suffix.lower() in (".tsv", ".tab"):
        return "\t"
    try:
        return csv.Sniffer().sniff(text[:8192], delimiters=_DELIMITERS).delimiter
    except csv.Error:
        return ","


def _records(text: str, delimiter: str, deadline: Deadline) -> list[dict[int, str]]:
    """Every record's non-empty cells by column (1-based; ``{}`` for a blank record, kept so
    numbers stay RFC 7111's)."""
    rows: list[dict[int, str]] = []
    try:
        for k, cells in enumerate(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)):
            if k % 5000 == 0:
                deadline.check(f"record {k + 1}")
            shown = {c: v for c, v in ((c, one_line(v)) for c, v in enumerate(cells, start=1)) if v}
            rows.append(shown)
    except csv.Error as exc:
        kind = "TSV" if delimiter == "\t" else "CSV"
        raise Corrupt(f"not a readable {kind} file at record {len(rows) + 1}: {exc}") from None
    return rows
