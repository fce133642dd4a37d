"""CSV and TSV: records as pipe rows in blocks, the header line repeated above every block
(as the spreadsheet extractor does), each block located by its RFC 7111 records
(``#row=12-30``, the header line being record 1)."""
from __future__ import annotations

import csv
import io
from pathlib import PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, NoText
from citeline.schemas.locator import RowRange
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, pipe_row, row_blocks
from citeline.extractors.clean import Deadline
from citeline.extractors.text import decode, normalise

NAME = "csv"
VERSION = "1"
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
    records = _records(text, _delimiter(text, name), deadline)
    numbered = [(k, row) for k, row in enumerate(records, start=1) if row]
    if not numbered:
        raise NoText("the file holds no values")
    (head_no, header), body = numbered[0], numbered[1:]
    writer = Writer()
    if not body:  # a header alone is the data
        writer.add(header, RowRange(head_no, head_no))
    head_loc = RowRange(head_no, head_no, header=True)
    for first, stop in row_blocks([row for _, row in body], header, options.sheet_block_chars, options.sheet_block_rows):
        writer.add(header, head_loc)
        rows = body[first:stop]
        writer.add("\n".join(row for _, row in rows), RowRange(rows[0][0], rows[-1][0]), sep="\n")
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


def _records(text: str, delimiter: str, deadline: Deadline) -> list[str]:
    """Every record as one pipe row ("" for a blank record, kept so numbers stay RFC 7111's)."""
    rows: list[str] = []
    try:
        for k, cells in enumerate(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)):
            if k % 5000 == 0:
                deadline.check(f"record {k + 1}")
            rows.append(pipe_row(cells))
    except csv.Error as exc:
        kind = "TSV" if delimiter == "\t" else "CSV"
        raise Corrupt(f"not a readable {kind} file at record {len(rows) + 1}: {exc}") from None
    return rows
