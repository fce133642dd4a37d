"""The checks every Office Open XML package (docx, pptx) passes before its parser sees it:
empty, an OLE2 container (encrypted package or a legacy binary file), not a zip, a damaged
zip, a zip bomb, more XML than its parser can hold in memory, or a zip without the part that
makes it this kind of file. Also what both read beyond their parsers: a Strict OOXML package
rewritten to the transitional namespaces python-docx and python-pptx know, and a chart part's
data as table rows."""
from __future__ import annotations

import io
import re
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
# Other OLE2 compound files people keep, by a stream only that kind holds: named in the reason, so
# an Outlook message is not called a damaged workbook.
_OTHER_OLE2 = {"__properties_version1.0": "an Outlook message (.msg, OLE2)",
               "VisioDocument": "a legacy Visio drawing (.vsd, OLE2)",
               "Quill": "a Publisher document (.pub, OLE2)",
               "HwpSummaryInformation": "a Hangul word processor document (.hwp, OLE2)"}


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
    other = next((kind for stream, kind in _OTHER_OLE2.items() if has(stream)), None)
    if other is not None:  # a kind of its own: what it is says enough (its suffix, when another)
        return UnsupportedType(other + ("" if f"({PurePath(name).suffix.lower()}," in other else named))
    wanted = _KINDS.get(part) or _LEGACY.get(part, part)
    return UnsupportedType(f"an OLE2 compound file (legacy Office format){named}, not {wanted}")


# ---- Strict OOXML ----------------------------------------------------------------------
# ISO/IEC 29500 Strict names the same elements under purl.oclc.org namespaces; python-docx and
# python-pptx look parts up by the transitional relationship types and fail with a KeyError on
# a valid Strict file. The mapping is one of names only (ECMA-376 Part 1 and its Strict schemas).
_STRICT = re.compile(rb"http://purl\.oclc\.org/ooxml/(wordprocessingml|presentationml|spreadsheetml|"
                     rb"schemaLibrary|drawingml|officeDocument)/(\w+)")
_STRICT_RENAMED = {b"extendedProperties": b"extended-properties", b"customProperties": b"custom-properties"}
_STRICT_REL_RENAMED = re.compile(rb"(/officeDocument/2006/relationships/)(extendedProperties|customProperties)")


def _transitional_uri(match: re.Match) -> bytes:
    family, name = match.group(1), match.group(2)
    if family == b"drawingml" or family == b"officeDocument":
        return b"http://schemas.openxmlformats.org/%s/2006/%s" % (family, _STRICT_RENAMED.get(name, name))
    return b"http://schemas.openxmlformats.org/%s/2006/%s" % (family, name)


def is_strict(archive: zipfile.ZipFile) -> bool:
    """The package's relationships name Strict OOXML types."""
    try:
        return b"purl.oclc.org/ooxml/" in archive.read("_rels/.rels")
    except KeyError:
        return False


def transitional(archive: zipfile.ZipFile) -> bytes:
    """The package with every XML part's Strict namespaces and relationship types renamed to
    their transitional names (the zip directory was checked by ``open_package``).

    >>> buf = io.BytesIO(); z = zipfile.ZipFile(buf, "w")
    >>> z.writestr("_rels/.rels", b'<r Type="http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument"/>')
    >>> z.close(); out = zipfile.ZipFile(io.BytesIO(transitional(zipfile.ZipFile(buf))))
    >>> out.read("_rels/.rels")
    b'<r Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"/>'
    """
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in archive.infolist():
            body = archive.read(info.filename)
            if info.filename.endswith((".xml", ".rels")):
                body = _STRICT.sub(_transitional_uri, body)
                body = _STRICT_REL_RENAMED.sub(lambda m: m.group(1) + _STRICT_RENAMED[m.group(2)], body)
            dst.writestr(info.filename, body)
    return out.getvalue()


# ---- charts ----------------------------------------------------------------------------
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"


def _points(ref, resolve: Callable[[str], list[str]] | None = None, refs: list[str] | None = None) -> dict[int, str]:
    """A series' cached values by point index (strCache, numCache, multiLvlStrCache's first level);
    without a cache, the cells its formula names, through ``resolve`` (a workbook's charts)."""
    out: dict[int, str] = {}
    if ref is None:
        return out
    formula = (ref.findtext(f".//{_C}f") or "").strip()
    if formula and refs is not None:
        refs.append(formula)
    if resolve is not None and formula and ref.find(f".//{_C}pt") is None:
        return {k: _number(v) for k, v in enumerate(resolve(formula))}
    for pt in ref.iter(f"{_C}pt"):
        try:
            idx = int(pt.get("idx", ""))
        except ValueError:
            continue
        value = pt.findtext(f"{_C}v") or ""
        out.setdefault(idx, _number(value))
    return out


def _number(value: str) -> str:
    """A cached number as the chart shows it: 4.4000000000000004 is 4.4 (15 significant digits)."""
    try:
        number = float(value)
    except ValueError:
        return value.strip()
    return f"{number:.15g}" if number == number and abs(number) != float("inf") else value.strip()


def chart_rows(xml: bytes, resolve: Callable[[str], list[str]] | None = None,
               refs: list[str] | None = None) -> tuple[str, list[list[str]]]:
    """A chart part's cached data: its title (else its kind, "Line chart") and the rows of a
    table, one per category, a column per series, series names as the header row.

    The values are the ones the chart draws (the caches the part keeps of its workbook), so a
    chart's numbers can be found and quoted like a table's. A workbook's chart may keep no
    cache: ``resolve`` reads the cells a formula (``'Sheet 1'!$B$2:$B$7``) names; the formulas
    met are appended to ``refs``.
    """
    from lxml import etree

    root = etree.fromstring(xml, parser=etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False))
    chart = root.find(f"{_C}chart")
    if chart is None:
        return "", []
    title_el = chart.find(f"{_C}title")
    title = " ".join("".join(t.text or "" for t in title_el.iter(f"{_A}t")).split()) if title_el is not None else ""
    plot_area = chart.find(f"{_C}plotArea")
    kind, series = "", []
    for plot in (plot_area if plot_area is not None else ()):
        tag = etree.QName(plot).localname if isinstance(plot.tag, str) else ""
        if not tag.endswith("Chart"):
            continue
        kind = kind or re.sub(r"3D$", "", tag[:-len("Chart")])
        for ser in plot.iter(f"{_C}ser"):
            tx = ser.find(f"{_C}tx")
            name = ""
            if tx is not None:
                name = (tx.findtext(f".//{_C}v") or "").strip()
                if not name and resolve is not None and tx.findtext(f".//{_C}f"):
                    name = " ".join(resolve(tx.findtext(f".//{_C}f") or "")[:1])
            cats = _points(ser.find(f"{_C}cat") if ser.find(f"{_C}cat") is not None else ser.find(f"{_C}xVal"),
                           resolve, refs)
            vals = _points(ser.find(f"{_C}val") if ser.find(f"{_C}val") is not None else ser.find(f"{_C}yVal"),
                           resolve, refs)
            series.append((name or f"Series {len(series) + 1}", cats, vals))
    if not series:
        return title, []
    # The kind is said either way: the rows are a chart's data, not cells of a table.
    named = f"{kind[:1].upper()}{kind[1:]} chart" if kind else "Chart"
    title = f"{title} ({named.lower()})" if title else named
    categories: dict[int, str] = {}
    for _, cats, _ in series:
        for idx, cat in cats.items():
            categories.setdefault(idx, cat)
    indices = sorted(set(categories) | {i for _, _, vals in series for i in vals})
    rows = [["", *(name for name, _, _ in series)]]
    rows += [[categories.get(i, str(i + 1)), *(vals.get(i, "") for _, _, vals in series)] for i in indices]
    return title, rows
