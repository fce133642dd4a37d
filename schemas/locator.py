"""Where a piece of canonical text lives in its source.

Each kind of source gets its own shape; all render to a URL fragment and a label.
Pages are 1-based, times in seconds, cell ranges in A1 notation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Union


@dataclass(frozen=True)
class CharRange:
    """A range of the canonical text itself (plain text and Markdown)."""

    start: int
    end: int
    kind: str = "char"

    def fragment(self) -> str:
        return f"#char={self.start},{self.end}"

    def label(self) -> str:
        return f"chars {self.start}–{self.end}"


@dataclass(frozen=True)
class Page:
    """A physical PDF page (1-based) and the label printed on it, if the PDF defines one."""

    page: int
    page_label: str = ""
    ocr_confidence: float | None = None
    kind: str = "page"

    def fragment(self) -> str:
        return f"#page={self.page}"

    def label(self) -> str:
        if self.page_label and self.page_label != str(self.page):
            return f"p. {self.page_label} (page {self.page})"
        return f"p. {self.page}"


_BARE_SHEET = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
# Names a formula would read as a reference: A1 cells (XFD9) and R1C1 ones (R1C1, RC, R, C3).
_REFERENCE = re.compile(r"^(?:[A-Za-z]{1,3}[0-9]+|[Rr][0-9]*(?:[Cc][0-9]*)?|[Cc][0-9]*)$")


def quote_sheet(name: str) -> str:
    """Quote a sheet name the way Excel writes it in a reference.

    >>> quote_sheet("Data"), quote_sheet("Q1 sales"), quote_sheet("Bob's"), quote_sheet("R1C1")
    ('Data', "'Q1 sales'", "'Bob''s'", "'R1C1'")
    """
    if _BARE_SHEET.match(name) and not _REFERENCE.match(name):
        return name
    return "'" + name.replace("'", "''") + "'"


@dataclass(frozen=True)
class SheetRange:
    """A rectangular cell range of one worksheet, e.g. 'Q1 sales'!A1:D9.

    ``header`` marks the header rows an extractor repeats above each block of data rows:
    a citation opens at the data rows it quotes, not at the repeated header.
    """

    sheet: str
    cells: str
    kind: str = "sheet"
    header: bool = False

    def fragment(self) -> str:
        return f"{quote_sheet(self.sheet)}!{self.cells}"

    def label(self) -> str:
        return f"{self.sheet} {self.cells}"

    def row_numbers(self, lines: int) -> list[int] | None:
        """The sheet rows of the range's ``lines`` rendered lines, when there is one line per row.

        >>> [SheetRange("S", c).row_numbers(n) for c, n in (("A3:D5", 3), ("B7", 1), ("A3:D5", 2))]
        [[3, 4, 5], [7], None]
        """
        found = re.findall(r"[A-Z]+([0-9]+)", self.cells)
        if not found:
            return None
        first, last = int(found[0]), int(found[-1])
        return list(range(first, last + 1)) if last - first + 1 == lines else None

    def rows(self, first: int, last: int) -> "SheetRange":
        """The range cut to sheet rows ``first``..``last``, its columns kept.

        >>> SheetRange("S", "A5:C13").rows(7, 7).cells, SheetRange("S", "B7").rows(7, 7).cells
        ('A7:C7', 'B7')
        """
        columns = re.findall(r"([A-Z]+)[0-9]+", self.cells)
        start, end = f"{columns[0]}{first}", f"{columns[-1]}{last}"
        return replace(self, cells=start if start == end else f"{start}:{end}")


_CELL = re.compile(r"^([A-Z]{1,3})([0-9]+)$")


def _column_number(letters: str) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - 64
    return number


def _column_letters(number: int) -> str:
    letters = ""
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def bounding_range(ranges: list[SheetRange]) -> SheetRange:
    """The smallest range of the first range's sheet holding every range of that sheet.

    >>> bounding_range([SheetRange("S", "B23:D42"), SheetRange("S", "B43:D44")]).cells
    'B23:D44'
    """
    corners = []
    for r in ranges:
        if r.sheet != ranges[0].sheet:
            continue
        cells = [_CELL.match(c) for c in r.cells.split(":")]
        if not all(cells):
            return ranges[0]  # not plain A1 cells: the first range as stored
        corners += [(_column_number(m.group(1)), int(m.group(2))) for m in cells]
    c0, r0 = min(c for c, _ in corners), min(r for _, r in corners)
    c1, r1 = max(c for c, _ in corners), max(r for _, r in corners)
    start, end = f"{_column_letters(c0)}{r0}", f"{_column_letters(c1)}{r1}"
    return SheetRange(ranges[0].sheet, start if start == end else f"{start}:{end}")


@dataclass(frozen=True)
class TimeSpan:
    """A span of audio or video in seconds (W3C Media Fragments)."""

    start: float
    end: float
    kind: str = "time"

    def fragment(self) -> str:
        return f"#t={self.start:.2f},{self.end:.2f}"

    def label(self) -> str:
        return f"{_clock(self.start)}–{_clock(self.end)}"


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


@dataclass(frozen=True)
class Passage:
    """A stretch of a structured text document (Word, HTML) under its heading path, and
    the id of the nearest element that has one (HTML). A citation opens the canonical
    text at the chunk's own ``#char`` range; the path and id say where that is in the source."""

    path: str = ""
    element_id: str = ""
    kind: str = "passage"

    def fragment(self) -> str:
        return f"#{self.element_id}" if self.element_id else ""

    def label(self) -> str:
        anchor = f"#{self.element_id}" if self.element_id else ""
        if self.path and anchor:
            return f"{self.path} ({anchor})"
        return self.path or anchor


@dataclass(frozen=True)
class Slide:
    """One slide of a presentation (1-based), its speaker notes included."""

    slide: int
    kind: str = "slide"

    def fragment(self) -> str:
        return f"#slide={self.slide}"

    def label(self) -> str:
        return f"slide {self.slide}"


@dataclass(frozen=True)
class RowRange:
    """Records ``first``..``last`` of a CSV/TSV file, 1-based with the header line as
    record 1 (RFC 7111 ``#row=``); ``header`` marks the header repeated above each block."""

    first: int
    last: int
    kind: str = "rows"
    header: bool = False

    def fragment(self) -> str:
        return f"#row={self.first}" if self.first == self.last else f"#row={self.first}-{self.last}"

    def label(self) -> str:
        return f"row {self.first}" if self.first == self.last else f"rows {self.first}–{self.last}"


@dataclass(frozen=True)
class KeyPath:
    """A value of a JSON, NDJSON or YAML document by its JSON Pointer (RFC 6901): ``/a/0/b``
    names key ``b`` of the first item of ``a``; an NDJSON file is read as the array of its
    records, so ``/2/name`` is the third line's ``name``. The fragment is the pointer's URI
    form (RFC 6901 section 6), which JSON viewers and editors open at the value."""

    pointer: str
    kind: str = "key"

    def fragment(self) -> str:
        return "#" + (self.pointer or "")

    def label(self) -> str:
        return self.pointer or "/"


@dataclass(frozen=True)
class ElementPath:
    """An element of an XML document by its path from the root, each step with its 1-based
    position among siblings of its name (``/factbook/country[2]/name``): the XPointer
    ``xpointer()`` scheme's fragment opens it."""

    path: str
    kind: str = "element"

    def fragment(self) -> str:
        return f"#xpointer({self.path})"

    def label(self) -> str:
        return self.path


@dataclass(frozen=True)
class MimePart:
    """A part of an e-mail (.eml, Outlook .msg): ``part`` is its section number as IMAP
    numbers MIME parts (``1``, ``2.1``; ``""`` for the headers), ``name`` the attachment's
    file name, if it has one. The fragment ``#part=2.1`` opens that part."""

    part: str
    name: str = ""
    kind: str = "part"

    def fragment(self) -> str:
        return f"#part={self.part}" if self.part else "#part=0"

    def label(self) -> str:
        if self.name:
            return f"attachment {self.name}"
        return f"part {self.part}" if self.part else "headers"


Locator = Union[CharRange, Page, SheetRange, TimeSpan, Passage, Slide, RowRange, KeyPath, ElementPath, MimePart]

_KINDS = {cls.kind: cls for cls in (CharRange, Page, SheetRange, TimeSpan, Passage, Slide, RowRange,
                                     KeyPath, ElementPath, MimePart)}


def locator_from_dict(raw: dict) -> Locator:
    """Rebuild a locator from its stored dict form (``kind`` selects the shape)."""
    fields = dict(raw)
    kind = fields.pop("kind")
    try:
        cls = _KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown locator kind {kind!r}; known: {sorted(_KINDS)}") from None
    return cls(**fields)
