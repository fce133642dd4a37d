"""Legacy Excel 97-2003 workbooks (.xls, OLE2/BIFF) and OpenDocument spreadsheets (.ods)
with python-calamine, laid out as the xlsx extractor lays out a sheet: a ``## `` heading
per sheet, blocks of rows under the repeated header row, ``SheetRange`` locators.

calamine gives typed values, not number formats: numbers, dates and booleans are shown
as Excel's General format shows them (2024-03-31, 22, TRUE), not as a cell format would.
It also claims every OLE2 container, so a password-protected xlsx (which Excel wraps in
one) and a legacy .doc or .ppt fail here with their own reason.
"""
from __future__ import annotations

import io
from pathlib import PurePath

from citeline.schemas.document import Canonical, Segment
from citeline.schemas.errors import Corrupt, Empty, Encrypted
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, text_limit
from citeline.extractors.clean import Deadline
from citeline.extractors.ooxml import OLE2, ZIP, ole2_reason, open_package
from citeline.extractors.sheet import Row, SheetFacts, add_sheet, display

NAME = "calamine"
# 2: tables laid out as the xlsx extractor's version 3 lays them out.
# 3: a label alone over a header row of its own starts a new table
#    (extractors.tables.split_tables).
# 4: a table's notes (rows of labels alone after its last figures) shown once after it, not
#    repeated under its headers in pieces without a number (extractors.tables).
VERSION = "4"
# Parses untrusted binary input in Rust: run in a killable worker process (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".xls", ".ods")
MAGIC = (OLE2,)
_ODS = b"mimetypeapplication/vnd.oasis.opendocument.spreadsheet"


def claims(head: bytes) -> bool:
    """An OpenDocument spreadsheet: a zip whose first, stored entry is its mimetype."""
    return head.startswith(ZIP) and _ODS in head[:200]


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of a .xls or .ods workbook: every non-empty sheet, in tab order.

    Raises:
        Empty (no bytes, or no cell holds a value), Encrypted, UnsupportedType (another OLE2
        file), Corrupt, TooLarge (zip bomb), Timeout.
    """
    import python_calamine  # imported here so the registry loads without it

    options = options or ExtractOptions()
    deadline = Deadline(options.time_limit_s)
    _check(data, name, options)
    try:
        book = python_calamine.CalamineWorkbook.from_filelike(io.BytesIO(data))
    except python_calamine.PasswordError:
        raise Encrypted("password-protected workbook: it cannot be read without the password") from None
    except (python_calamine.CalamineError, ValueError, OSError) as exc:
        raise Corrupt(f"calamine cannot read the workbook: {type(exc).__name__}: {exc}") from None
    try:
        text, segments = _sheets(book, options, deadline, text_limit(options, len(data)))
    except (python_calamine.CalamineError, ValueError) as exc:
        raise Corrupt(f"calamine cannot read a sheet: {type(exc).__name__}: {exc}") from None
    finally:
        book.close()
    if not segments:
        raise Empty(f"no cell holds a value: all {len(book.sheet_names)} sheets are empty")
    return Canonical(text=text, title=PurePath(name).stem, extractor=NAME, extractor_version=VERSION,
                     segments=tuple(segments))


def _check(data: bytes, name: str, options: ExtractOptions) -> None:
    if not data:
        raise Empty("empty file (0 bytes)")
    if data.startswith(OLE2):
        def has(stream: str) -> bool:
            return (stream + "\0").encode("utf-16-le") in data

        if not (has("Workbook") or has("Book")) or has("EncryptedPackage"):
            raise ole2_reason(data, name, "Workbook")
        damage = ole2_damage(data)
        if damage:
            raise Corrupt(f"damaged OLE2 container, not a readable .xls: {damage}")
        return
    archive = open_package(data, name, options, "content.xml")
    manifest = archive.read("META-INF/manifest.xml") if "META-INF/manifest.xml" in archive.namelist() else b""
    if b"encryption-data" in manifest:
        raise Encrypted("password-protected OpenDocument spreadsheet: it cannot be read without the password")


def ole2_damage(data: bytes) -> str:
    """What is wrong with an OLE2 header, or "" when its tables fit the file. calamine
    trusts these counts: a header claiming no FAT or sectors past the end made it allocate
    until the kernel killed the process (found with a hand-made container).

    >>> ole2_damage(OLE2 + bytes(504))
    'sector size 2^0 (must be 2^9 or 2^12)'
    """
    if len(data) < 512:
        return f"{len(data)} bytes, shorter than the 512-byte header"
    shift = int.from_bytes(data[30:32], "little")
    if shift not in (9, 12):
        return f"sector size 2^{shift} (must be 2^9 or 2^12)"
    sectors = (len(data) - 512) // (1 << shift)
    fat_sectors = int.from_bytes(data[44:48], "little")
    directory = int.from_bytes(data[48:52], "little")
    first_fat = int.from_bytes(data[76:80], "little")
    if not 1 <= fat_sectors <= sectors:
        return f"{fat_sectors} FAT sectors in a file of {sectors} sectors"
    if directory >= sectors or first_fat >= sectors:
        return f"tables start past the end of the file (directory sector {directory}, FAT sector {first_fat}, {sectors} sectors)"
    return ""


def _sheets(book, options: ExtractOptions, deadline: Deadline, limit: int) -> tuple[str, tuple[Segment, ...]]:
    writer = Writer(limit)
    for title in book.sheet_names:
        deadline.check(f"sheet {title!r}")
        rows = _rows(book.get_sheet_by_name(title), deadline)
        if rows:
            # calamine does not report merged ranges: group headers spread by the empty-cell rule.
            add_sheet(writer, title, rows, SheetFacts(), options)
    return writer.text, writer.segments


def _rows(sheet, deadline: Deadline) -> list[Row]:
    """Non-empty rows with displayed values, numbered as the sheet numbers them."""
    if sheet.start is None:
        return []
    top, left = sheet.start
    rows: list[Row] = []
    # to_python() starts at sheet.start (iter_rows does not say where it starts).
    for k, values in enumerate(sheet.to_python(skip_empty_area=True)):
        if k % 5000 == 0:
            deadline.check(f"sheet {sheet.name!r} row {top + k + 1}")
        shown = {left + j + 1: display(v) for j, v in enumerate(values) if v not in ("", None)}
        shown = {c: t for c, t in shown.items() if t}
        if shown:
            rows.append(Row(top + k + 1, shown))
    return rows
