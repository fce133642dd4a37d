"""The checks every Office Open XML package (docx, pptx) passes before its parser sees it:
empty, an OLE2 container (encrypted package or a legacy binary file), not a zip, a damaged
zip, a zip bomb, more XML than its parser can hold in memory, or a zip without the part that
makes it this kind of file."""
from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import PurePath

from citeline.schemas.errors import Corrupt, Empty, Encrypted, TooLarge, UnsupportedType
from citeline.schemas.options import ExtractOptions

ZIP = b"PK\x03\x04"
# Bytes of memory lxml takes per byte of XML parsed whole: python-docx opening a document.xml
# of tiny paragraphs measured 14.5 (10 MB: +139 MiB RSS; 40 MB: +541 MiB); 16 leaves a margin.
XML_MEMORY_PER_BYTE = 16
OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# The part that makes a zip each kind of package, and the kind's name for a reason.
_KINDS = {"word/document.xml": "a Word document (.docx)", "ppt/presentation.xml": "a PowerPoint file (.pptx)",
          "xl/workbook.xml": "an Excel workbook (.xlsx)", "content.xml": "an OpenDocument file (.ods)"}
_LEGACY = {"WordDocument": "a legacy Word 97-2003 document (.doc, OLE2): save it as .docx",
           "PowerPoint Document": "a legacy PowerPoint 97-2003 file (.ppt, OLE2): save it as .pptx",
           "Workbook": "a legacy Excel 97-2003 workbook (.xls, OLE2)"}


def claims_part(head: bytes, folder: bytes) -> bool:
    """A zip whose first entries name a part under ``folder`` (``word/``, ``ppt/``)."""
    return head.startswith(ZIP) and folder in head


def open_package(data: bytes, name: str, options: ExtractOptions, part: str) -> zipfile.ZipFile:
    """The package as a zip, once it is known to hold ``part`` and not to be a bomb.

    Raises:
        Empty, Encrypted (a password-protected package), UnsupportedType (a legacy
        binary file, or another kind of package), Corrupt (not a zip, damaged), TooLarge.
    """
    if not data:
        raise Empty("empty file (0 bytes)")
    if data.startswith(OLE2):
        raise ole2_reason(data, name, part)
    if not data.startswith(ZIP):
        raise Corrupt(f"not {_KINDS[part]} (a zip file): the file starts with {data[:12]!r}")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise Corrupt(f"damaged or truncated zip, not readable as {_KINDS[part]}: {exc}") from None
    unpacked = sum(info.file_size for info in infos)
    if unpacked > options.max_unpacked_bytes:
        raise TooLarge(f"the package would unpack to {unpacked:,} bytes from {len(data):,} (limit "
                       f"{options.max_unpacked_bytes:,}, max_unpacked_bytes): refused as a zip bomb")
    check_xml_memory(infos, options)
    names = set(archive.namelist())
    if part not in names:
        other = next((kind for p, kind in _KINDS.items() if p in names), "a zip file")
        raise UnsupportedType(f"{other}, not {_KINDS[part]} (no {part})")
    return archive


def check_xml_memory(infos: list[zipfile.ZipInfo], options: ExtractOptions,
                     streamed: Callable[[str], bool] = lambda name: False) -> None:
    """Refuse a package whose XML parts, parsed whole, would take more than the memory budget.

    Decided from the zip directory before anything is inflated: the sizes it declares bound
    what Python's zipfile hands the parser (a part that inflates past its size fails its CRC).

    Args:
        streamed: parts the parser reads as a stream (openpyxl's read-only worksheets), not counted.

    Raises:
        TooLarge: over ``options.max_parse_memory_bytes`` at ``XML_MEMORY_PER_BYTE``.
    """
    parts = [i for i in infos if i.filename.endswith((".xml", ".rels")) and not streamed(i.filename)]
    xml = sum(i.file_size for i in parts)
    limit = options.max_parse_memory_bytes // XML_MEMORY_PER_BYTE
    if xml > limit:
        largest = max(parts, key=lambda i: i.file_size)
        raise TooLarge(f"{xml:,} bytes of XML to parse whole ({largest.filename}: {largest.file_size:,}), "
                       f"about {xml * XML_MEMORY_PER_BYTE / 2**30:.1f} GiB of memory; the limit is {limit:,} "
                       f"bytes of XML (max_parse_memory_bytes {options.max_parse_memory_bytes:,})")


def ole2_reason(data: bytes, name: str, part: str) -> Exception:
    """OLE2 directories store stream names in UTF-16LE, NUL-terminated: a byte search finds them."""
    def has(stream: str) -> bool:
        return (stream + "\0").encode("utf-16-le") in data

    named = f" (named {PurePath(name).suffix})" if PurePath(name).suffix else ""
    if has("EncryptedPackage"):
        kind = "workbook" if part in ("Workbook", "xl/workbook.xml") else "file"
        return Encrypted(f"password-protected {kind}{named}: Office encrypts it inside an OLE2 container; "
                         "it cannot be read without the password")
    for stream, reason in _LEGACY.items():
        if has(stream):
            return UnsupportedType(reason + named)
    return UnsupportedType(f"an OLE2 compound file (legacy Office format){named}, not {_KINDS[part]}")
