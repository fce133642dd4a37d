"""Spreadsheets (xlsx) with openpyxl in read-only mode, cached values only.

Each sheet becomes a ``## <sheet name>`` heading and blocks of rows in a pipe table, laid
out by extractors.tables: every block repeats the table's title block, all its header rows
(merged group headers spread over their columns, period and units rows) and the group row
it falls under, every row starts with its row labels, and a table too wide for a block is
split by columns, each part keeping the labels. Titles, header rows and data rows are
separate segments, each with the exact ``SheetRange`` of the cells it quotes
(``'Q1 sales'!A1``, ``'Q1 sales'!A2:D2`` and ``'Q1 sales'!A22:D41``); columns empty in the
whole table are not rendered.

Values read as Excel shows them: percentages as 33.6%, dates as ISO dates, formulas as
their cached result. A formula saved without a cached result is left blank and listed
in the notes; it is never printed as a formula.
"""
from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import PurePath
from xml.etree.ElementTree import ParseError

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, NoText, TooLarge, UnsupportedType
from citeline.schemas.grid import GridRow, Merge
from citeline.schemas.locator import SheetRange
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, amplified, text_limit
from citeline.extractors.clean import Deadline, clean
from citeline.extractors.ooxml import chart_rows, check_xml_memory, is_strict, transitional
from citeline.extractors.tables import DATA, table_blocks

NAME = "xlsx"
# 2: the repeated header rows' locator says it is a header (citations open at the data rows).
# 3: tables that can be read alone: title block, every header row, group rows and
#    row labels repeated per block, split by columns when too wide; empty columns not rendered
#    and the text bounded.
# 4: charts' data as tables, under the sheet that shows them; Strict OOXML.
# 5: labels centred across a selection head every column they span; a label alone over a
#    header row of its own starts a new table.
# 6: a table's notes (rows of labels alone after its last figures) shown once after it, not
#    repeated under its headers in pieces without a number (extractors.tables).
VERSION = "6"
# Parses untrusted binary input in C: run in a killable worker process (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".xlsx", ".xlsm", ".xltx", ".xltm")
# OLE2 containers (legacy .xls, a password-protected xlsx) go to extractors.calc by magic.
MAGIC: tuple[bytes, ...] = ()
_ZIP = b"PK\x03\x04"
_ACROSS = "centerContinuous"  # Excel's "Centre across selection"


def claims(head: bytes) -> bool:
    """An OOXML zip with a workbook part (``xl/``) in its first entries."""
    return head.startswith(_ZIP) and b"xl/" in head


Row = GridRow  # a sheet row: its number and displayed cells by column (1-based), non-empty only


@dataclass
class SheetFacts:
    """What openpyxl's read-only mode does not give: merges and uncached formulas."""

    merges: list[tuple[int, int, int, int]] = field(default_factory=list)  # min_col, min_row, max_col, max_row
    uncached: list[str] = field(default_factory=list)


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of a workbook: every non-empty worksheet, in tab order.

    Raises:
        Empty, UnsupportedType (other zip files),
        Corrupt (bad zip, unreadable workbook), TooLarge (zip bomb), NoText, Timeout.
    """
    options = options or ExtractOptions()
    deadline = Deadline(options.time_limit_s)
    archive = _open_zip(data, name, options)
    if is_strict(archive):  # openpyxl finds no worksheet in a Strict OOXML workbook
        data = transitional(archive)
        archive = zipfile.ZipFile(io.BytesIO(data))
    import openpyxl  # here, not at the top: the registry imports this module for its SUFFIXES
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
    except (InvalidFileException, KeyError, ValueError, TypeError, IndexError, ParseError, zipfile.BadZipFile) as exc:
        raise Corrupt(f"openpyxl cannot read the workbook: {type(exc).__name__}: {exc}") from None
    try:
        return _workbook(wb, archive, name, options, deadline, text_limit(options, len(data)))
    finally:
        wb.close()


def _open_zip(data: bytes, name: str, options: ExtractOptions) -> zipfile.ZipFile:
    if not data:
        raise Empty("empty file (0 bytes)")
    if not data.startswith(_ZIP):
        raise Corrupt(f"not an xlsx workbook (a zip file): the file starts with {data[:12]!r}")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise Corrupt(f"damaged or truncated zip, not a readable xlsx: {exc}") from None
    unpacked = sum(info.file_size for info in infos)
    if unpacked > options.max_unpacked_bytes:
        raise TooLarge(
            f"the xlsx would unpack to {unpacked:,} bytes from {len(data):,} (limit "
            f"{options.max_unpacked_bytes:,}, max_unpacked_bytes): refused as a zip bomb"
        )
    # Read-only openpyxl streams the worksheets; shared strings, styles and the rest it parses whole.
    check_xml_memory(infos, options, streamed=lambda part: part.startswith("xl/worksheets/"))
    names = set(archive.namelist())
    if not any(n.startswith("xl/") and n.endswith("workbook.xml") for n in names):
        kind = "a Word document" if "word/document.xml" in names else (
            "a PowerPoint file" if "ppt/presentation.xml" in names else "a zip file")
        raise UnsupportedType(f"{kind}, not an xlsx workbook (no xl/workbook.xml)")
    return archive


def _workbook(wb, archive: zipfile.ZipFile, name: str, options: ExtractOptions, deadline: Deadline,
              limit: int) -> Canonical:
    sheets = wb.worksheets
    if not sheets:
        raise NoText("the workbook has no worksheets")
    writer = Writer(limit)
    notes: list[str] = []
    # A workbook with charts is read whole first: a chart may draw cells of any sheet.
    with_charts = any(n.startswith("xl/charts/") for n in archive.namelist())
    read: list[tuple[object, SheetFacts, list[Row]]] = []
    held = 0
    for ws in sheets:
        deadline.check(f"sheet {ws.title!r}")
        facts = _facts(archive, getattr(ws, "_worksheet_path", ""))
        rows, centred = _rows(ws, deadline)
        facts.merges.extend(centred)
        if facts.uncached:
            shown = ", ".join(facts.uncached[:10]) + (f" (+{len(facts.uncached) - 10} more)" if len(facts.uncached) > 10 else "")
            notes.append(f"formulas without a cached value, left blank (recalculate and save the "
                         f"workbook in Excel or LibreOffice): {SheetRange(ws.title, '').fragment()}{shown}")
        if with_charts:
            read.append((ws, facts, rows))
            held += sum(len(text) + 3 for row in rows for text in row.cells.values())
            if held > limit:  # what add_sheet's writer would refuse, refused before it is all held
                raise amplified(limit)
        elif rows:
            add_sheet(writer, ws.title, rows, facts, options)
    if read:
        cells = {ws.title: {(r.number, c): t for r in rows for c, t in r.cells.items()} for ws, _, rows in read}
        for ws, facts, rows in read:
            charts = _charts(archive, getattr(ws, "_worksheet_path", ""), cells, ws.title)
            if rows or charts:
                add_sheet(writer, ws.title, rows, facts, options, charts)
    if not writer.segments:
        raise Empty(f"no cell holds a value: all {len(sheets)} worksheets are empty")
    title = (wb.properties.title or "").strip() if wb.properties else ""
    return Canonical(
        text=writer.text,
        title=title or PurePath(name).stem,
        extractor=NAME,
        extractor_version=VERSION,
        segments=writer.segments,
        notes=tuple(notes),
    )


# ------------------------------------------------------------------------ reading


def _facts(archive: zipfile.ZipFile, path: str) -> SheetFacts:
    """Merged ranges and formula cells with no cached value, from the sheet's XML,
    read in chunks so a large sheet never sits in memory twice."""
    facts = SheetFacts()
    path = path.lstrip("/")
    if not path or path not in archive.namelist():
        return facts
    merges: set[str] = set()
    uncached: dict[str, None] = {}
    tail = b""
    with archive.open(path) as src:
        while True:
            chunk = src.read(4 << 20)
            buf = tail + chunk
            merges.update(m.decode() for m in re.findall(rb'<mergeCell\s+ref="([A-Z]+[0-9]+:[A-Z]+[0-9]+)"', buf))
            if b"<f" in buf:
                for m in _UNCACHED.finditer(buf):
                    uncached[m.group(1).decode()] = None
            if not chunk:
                break
            tail = buf[-65536:]
    from openpyxl.utils import range_boundaries

    for ref in merges:
        facts.merges.append(range_boundaries(ref))
    facts.uncached = sorted(uncached, key=_cell_key)
    return facts


# A formula cell whose value is missing or empty: <c r="C5"><f>A5*B5</f><v/></c>
_UNCACHED = re.compile(rb'<c\b[^>]*?\br="([A-Z]+[0-9]+)"[^>]*>\s*(?:<f\b[^>]*/>|<f\b[^>]*>[^<]*</f>)\s*(?:<v\s*/>|<v>\s*</v>)?\s*</c>')


def _cell_key(ref: str) -> tuple[int, str]:
    m = re.match(r"([A-Z]+)([0-9]+)", ref)
    return (int(m.group(2)), m.group(1).rjust(3)) if m else (0, ref)


def _rows(ws, deadline: Deadline) -> tuple[list[Row], list[Merge]]:
    """Non-empty rows with their displayed values, and the labels centred across a selection.

    The stored used range is ignored: a sheet claiming A1:XFD1048576 costs only the rows that
    really hold values, and a row costs only the cells it stores (``iter_rows`` pads each row
    with empty cells up to its last value: 16,383 of them before a value in column XFD, issue
    32 item 4).

    "Centre across selection" spans a label over the empty cells after it that share the
    alignment, as a merge does without merging (a period over its block of columns): each such run is returned as a merge of one row.
    """
    rows: list[Row] = []
    centred: list[Merge] = []
    try:
        for k, (number, cells) in enumerate(_stored_cells(ws)):
            if k % 5000 == 0:
                deadline.check(f"sheet {ws.title!r} row {k + 1}")
            shown = {}
            run: list[int] = []  # first and last column of the centred label being followed
            for cell in cells:
                across = cell.has_style and cell.alignment.horizontal == _ACROSS
                if cell.value is None:
                    if across and run and cell.column == run[1] + 1:
                        run[1] = cell.column
                        continue
                    text = ""
                else:
                    text = display(cell.value, cell.number_format)
                if run and run[1] > run[0]:
                    centred.append((run[0], number, run[1], number))
                run = [cell.column, cell.column] if across and text else []
                if text:
                    shown[cell.column] = text
            if run and run[1] > run[0]:
                centred.append((run[0], number, run[1], number))
            if shown:
                rows.append(Row(number, shown))
    except (ValueError, TypeError, KeyError, ParseError, zipfile.BadZipFile) as exc:
        raise Corrupt(f"sheet {ws.title!r} cannot be read: {type(exc).__name__}: {exc}") from None
    return rows, centred


def _stored_cells(ws):
    """``(row number, cells)`` for every row the sheet's XML stores, its cells as stored (no
    padding): the parser openpyxl's read-only ``iter_rows`` runs, without its padding."""
    from openpyxl.cell.read_only import ReadOnlyCell
    from openpyxl.worksheet._reader import WorkSheetParser

    with ws._get_source() as src:
        parser = WorkSheetParser(src, ws._shared_strings, data_only=ws.parent.data_only, epoch=ws.parent.epoch,
                                 date_formats=ws.parent._date_formats,
                                 timedelta_formats=ws.parent._timedelta_formats)
        for number, cells in parser.parse():
            yield number, [ReadOnlyCell(ws, **cell) for cell in cells]


# ------------------------------------------------------------------------ values


def display(value, number_format: str = "General") -> str:
    """A cell value as Excel shows it, within reason.

    >>> display(0.336, "0.0%"), display(datetime(2024, 3, 31), "yyyy-mm-dd"), display(1234.5, "#,##0.00")
    ('33.6%', '2024-03-31', '1,234.50')
    """
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime):
        if value.time() == time(0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds" if value.second else "minutes")
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return str(value)
    if isinstance(value, (int, float)):
        return _number(value, number_format or "General")
    text = str(value)
    if not (text.isascii() and text.isprintable()):
        text = clean(text).replace("\n", " ")
    return text.strip()


def _number(value: float, fmt: str) -> str:
    fmt = fmt.split(";")[0]
    plain = re.sub(r'"[^"]*"|\[[^\]]*\]|\\.', "", fmt)  # quoted text, [colour]/[$€-407], escapes
    decimals = re.search(r"\.([0#?]+)", plain)
    places = len(decimals.group(1)) if decimals else 0
    if "%" in plain:
        return f"{value * 100:.{places}f}%"
    if re.search(r"[0#?]", plain) is None:  # General, @, or no digit placeholders
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.10g}" if isinstance(value, float) else str(value)
    if re.search(r"E[+-]", plain, re.IGNORECASE):
        return f"{value:.{places}E}"
    body = f"{value:,.{places}f}" if "," in plain.split(".")[0] else f"{value:.{places}f}"
    symbol = re.search(r"\[\$([^\]-]+)|([$€£¥])", fmt)
    if symbol:
        sign = symbol.group(1) or symbol.group(2)
        digit = re.search(r"[0#?]", fmt)
        return f"{sign}{body}" if digit and symbol.start() < digit.start() else f"{body} {sign}"
    return body


# ------------------------------------------------------------------------ layout


def add_sheet(writer: Writer, title: str, rows: list[Row], facts: SheetFacts, options: ExtractOptions,
              charts: list[tuple[str, list[list[str]], SheetRange]] = ()) -> None:
    """Append one sheet: the ``## title`` heading (a section for the chunker, no locator),
    then its tables block by block (extractors.tables), each cell run located as a range,
    then the data of the charts it shows, each located at the cells it draws."""
    def locate(kind: str, rows_: tuple[int, int], cols: tuple[int, int]) -> SheetRange:
        return SheetRange(title, _a1(cols[0], rows_[0], cols[1], rows_[1]), header=kind != DATA)

    writer.add(f"## {title.strip()}", None)
    for block in table_blocks(rows, locate, options.sheet_block_chars, options.sheet_block_rows, facts.merges):
        writer.add_block(block)
    for caption, table, where in charts:
        matrix = [Row(1, {1: caption})] + [Row(k, {c: v for c, v in enumerate(line, start=1) if v})
                                           for k, line in enumerate(table, start=2)]
        for block in table_blocks([r for r in matrix if r.cells], lambda *_: where, options.sheet_block_chars,
                                  options.sheet_block_rows):
            writer.add_block(block)


_REF = re.compile(r"^(?:'((?:[^']|'')+)'|([^'!]+))!(\$?[A-Z]{1,3}\$?\d+(?::\$?[A-Z]{1,3}\$?\d+)?)$")


def _charts(archive: zipfile.ZipFile, sheet_path: str, cells: dict, title: str
            ) -> list[tuple[str, list[list[str]], SheetRange]]:
    """The charts a worksheet's drawings hold: caption, rows and the range they draw (the
    first series' cells, else the sheet's A1), their values the charts' caches or the cells."""
    from lxml.etree import XMLSyntaxError

    def resolve(formula: str) -> list[str]:
        ref = _parse_ref(formula)
        if ref is None:
            return []
        sheet, (c0, r0, c1, r1) = ref
        known = cells.get(sheet, {})
        if (c1 - c0 + 1) * (r1 - r0 + 1) > 100_000:  # a hostile chart may name a whole sheet
            return []
        return [known.get((r, c), "") for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]

    out = []
    for drawing in _related(archive, sheet_path.lstrip("/"), "/drawing"):
        for part in _related(archive, drawing, "/chart"):
            refs: list[str] = []
            try:
                caption, table = chart_rows(archive.read(part), resolve, refs)
            except (KeyError, XMLSyntaxError):
                continue
            where = _drawn(refs) or SheetRange(title, "A1")
            if table:
                out.append((caption, table, where))
    return out


def _drawn(refs: list[str]) -> SheetRange | None:
    """The range a chart draws: the box around its formulas' cells on the sheet of the first."""
    parsed = [r for r in map(_parse_ref, refs) if r is not None]
    if not parsed:
        return None
    sheet = parsed[0][0]
    boxes = [box for s, box in parsed if s == sheet]
    return SheetRange(sheet, _a1(min(b[0] for b in boxes), min(b[1] for b in boxes),
                                 max(b[2] for b in boxes), max(b[3] for b in boxes)))


def _parse_ref(formula: str) -> tuple[str, tuple[int, int, int, int]] | None:
    """``'Duck data'!$B$2:$B$7`` as (sheet, (min_col, min_row, max_col, max_row))."""
    match = _REF.match(formula.strip())
    if not match:
        return None
    from openpyxl.utils import range_boundaries

    sheet = match.group(1).replace("''", "'") if match.group(1) is not None else match.group(2)
    c0, r0, c1, r1 = range_boundaries(match.group(3).replace("$", ""))
    return sheet, (c0, r0, c1, r1)


def _related(archive: zipfile.ZipFile, part: str, kind: str) -> list[str]:
    """The parts ``part``'s relationships name with a type ending in ``kind``, inside the package."""
    import posixpath

    from lxml import etree

    folder, base = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", base + ".rels")
    try:
        root = etree.fromstring(archive.read(rels), parser=etree.XMLParser(resolve_entities=False, no_network=True))
    except (KeyError, etree.XMLSyntaxError):
        return []
    names = set(archive.namelist())
    out = []
    for rel in root:
        target = rel.get("Target") or ""
        if not (rel.get("Type") or "").endswith(kind) or rel.get("TargetMode") == "External":
            continue
        path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
        if path in names:
            out.append(path)
    return out


def _a1(c0: int, r0: int, c1: int, r1: int) -> str:
    from openpyxl.utils import get_column_letter

    start, end = f"{get_column_letter(c0)}{r0}", f"{get_column_letter(c1)}{r1}"
    return start if start == end else f"{start}:{end}"
