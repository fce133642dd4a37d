"""OpenDocument text (.odt, LibreOffice Writer) read from its ``content.xml`` with lxml, in
document order: headings (``text:h``, by outline level) as ``## `` lines, paragraphs, list items as
``- `` lines, tables as pipe rows laid out by extractors.tables, text boxes (``draw:text-box``) right
after the paragraph anchoring them, footnote bodies after theirs. Each run of blocks under one
heading path is one segment with a ``Passage`` locator naming that path, as for Word.

No OpenDocument library is needed: the format is one XML part whose text elements are few and
documented (OASIS ODF 1.2, part 1, §5-§6); python-calamine reads the spreadsheets (.ods) already.
Before this extractor a .odt failed as "a zip archive".
"""
from __future__ import annotations

from pathlib import PurePath

from lxml import etree

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, NoText
from citeline.schemas.locator import Passage
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, one_line, text_limit
from citeline.extractors.clean import Deadline, clean
from citeline.extractors.ooxml import ZIP, open_package
from citeline.extractors.tables import grid, table_blocks

NAME = "odt"
# 2: a label alone over a header row of its own starts a new table
#    (extractors.tables.split_tables).
# 3: page headers and footers (styles.xml's master pages), each distinct one once, after the body.
# 4: a table's notes (rows of labels alone after its last figures) shown once after it, not
#    repeated under its headers in pieces without a number (extractors.tables).
VERSION = "4"
# Parses untrusted zip and XML input: run in a killable worker process (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".odt", ".ott")
MAGIC: tuple[bytes, ...] = ()
_MIMETYPES = (b"mimetypeapplication/vnd.oasis.opendocument.text", )

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
# A master page's margins (ODF 1.2 part 1, §16.10): the default, left-page and first-page variants.
_MARGINS = (("Page header", ("header-first", "header", "header-left")),
            ("Page footer", ("footer-first", "footer", "footer-left")))
# Inline elements whose text is not shown in the running text: footnote marks and bodies (read
# after their paragraph), comments, change-tracking records, frames (their boxes follow).
_SILENT = {f"{_TEXT}note-citation", f"{_TEXT}note-body", f"{_OFFICE}annotation", f"{_OFFICE}annotation-end",
           f"{_TEXT}tracked-changes", f"{_DRAW}frame", f"{_TEXT}bookmark-ref"}
_BLOCKS = {f"{_TEXT}p", f"{_TEXT}h", f"{_TEXT}list", f"{_TABLE}table", f"{_TEXT}section", f"{_TEXT}soft-page-break",
           f"{_TEXT}table-of-content", f"{_TEXT}index-body", f"{_TEXT}list-item", f"{_TEXT}list-header"}
_MAX_DEPTH = 8  # boxes and tables nested deeper are not opened (a hostile file may nest forever)


def claims(head: bytes) -> bool:
    """An OpenDocument text: a zip whose first, stored entry is its mimetype."""
    return head.startswith(ZIP) and any(m in head[:200] for m in _MIMETYPES)


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of an OpenDocument text document.

    Raises:
        Empty, Corrupt (not a zip, damaged, bad XML), UnsupportedType (another kind of
        package), TooLarge (zip bomb), NoText, Timeout.
    """
    options = options or ExtractOptions()
    archive = open_package(data, name, options, "content.xml")
    try:
        parser = etree.XMLParser(resolve_entities=False, huge_tree=False)
        root = etree.fromstring(archive.read("content.xml"), parser)
        names = set(archive.namelist())
        meta = etree.fromstring(archive.read("meta.xml"), parser) if "meta.xml" in names else None
        styles = etree.fromstring(archive.read("styles.xml"), parser) if "styles.xml" in names else None
    except (etree.XMLSyntaxError, KeyError, OSError, ValueError) as exc:
        raise Corrupt(f"the OpenDocument's XML cannot be read: {type(exc).__name__}: {exc}") from None
    body = root.find(f"{_OFFICE}body/{_OFFICE}text")
    if body is None:
        raise Corrupt("content.xml has no office:text body: not an OpenDocument text")
    reader = _Reader(options, Deadline(options.time_limit_s), text_limit(options, len(data)))
    reader.blocks(body, 0)
    for name, margin in _margins(styles):
        reader.margin(name, margin)
    if not reader.writer.segments:
        raise NoText("the document holds no text")
    title = meta.findtext(f".//{_DC}title") if meta is not None else None
    return Canonical(text=reader.writer.text, title=(title or "").strip() or PurePath(name).stem, extractor=NAME,
                     extractor_version=VERSION, segments=reader.writer.segments)


class _Reader:
    def __init__(self, options: ExtractOptions, deadline: Deadline, limit: int) -> None:
        self.options, self.deadline = options, deadline
        self.writer = Writer(limit)
        self.path: list[tuple[int, str]] = []
        self.seen = 0

    def locator(self) -> Passage:
        return Passage(" > ".join(h for _, h in self.path))

    def blocks(self, container, depth: int, bullet: str = "") -> None:
        for element in container:
            if not isinstance(element.tag, str):
                continue
            self.seen += 1
            if self.seen % 500 == 0:
                self.deadline.check(f"block {self.seen}")
            tag = element.tag
            if tag == f"{_TEXT}h":
                self.heading(element)
            elif tag == f"{_TEXT}p":
                self.paragraph(element, depth, bullet)
            elif tag == f"{_TEXT}list":
                for item in element.iterchildren(f"{_TEXT}list-item", f"{_TEXT}list-header"):
                    self.blocks(item, depth, "- ")
            elif tag == f"{_TABLE}table":
                self.table(element, depth)
            elif tag in (f"{_TEXT}section", f"{_TEXT}table-of-content", f"{_TEXT}index-body",
                         f"{_TEXT}alphabetical-index", f"{_TEXT}illustration-index", f"{_TABLE}table-header-rows"):
                inner = element.find(f"{_TEXT}index-body")
                self.blocks(inner if inner is not None else element, depth, bullet)

    def margin(self, name: str, element) -> None:
        """A page header or footer's blocks as a section of their own, after the body."""
        self.path = [(1, name)]
        self.writer.add(f"## {name}", self.locator())
        self._last_item = False
        self.blocks(element, 0)

    def heading(self, element) -> None:
        text = one_line(inline(element))
        if not text:
            return
        level = int(element.get(f"{_TEXT}outline-level") or 1)
        self.path = [(lv, h) for lv, h in self.path if lv < level] + [(level, text)]
        self.writer.add(f"## {text}", self.locator())

    def paragraph(self, element, depth: int, bullet: str) -> None:
        text = clean(inline(element))
        if text:
            self.writer.add(bullet + text, self.locator(), "\n" if bullet and self._after_item() else "\n\n")
            self._last_item = bool(bullet)
        else:
            self._last_item = False
        if depth < _MAX_DEPTH:  # what hangs off the paragraph: boxes and footnotes, in order
            for box in element.iter(f"{_DRAW}text-box"):
                self.blocks(box, depth + 1)
            for note in element.iter(f"{_TEXT}note-body"):
                self.blocks(note, depth + 1)

    _last_item = False

    def _after_item(self) -> bool:
        return self._last_item

    def table(self, element, depth: int) -> None:
        """The table laid out by extractors.tables. A spanning cell is followed by
        ``table:covered-table-cell`` at every other position it covers: those take its key,
        which gives the merges."""
        self._last_item = False
        rows, merges = grid(_matrix(element))
        locator = self.locator()
        for block in table_blocks(rows, lambda *_: locator, self.options.sheet_block_chars,
                                  self.options.sheet_block_rows, merges):
            self.writer.add_block(block)


def _margins(styles) -> list[tuple[str, object]]:
    """Each distinct page header and footer the master pages define: their text is the document's
    too (a letterhead's address, a footer's notice), which Word files keep as well (docx.py). A
    margin switched off (``style:display="false"``) or repeating one already kept is left out."""
    if styles is None:
        return []
    found: list[tuple[str, object]] = []
    seen: set[str] = set()
    for page in styles.iter(f"{_STYLE}master-page"):
        for name, kinds in _MARGINS:
            for kind in kinds:
                for element in page.iterchildren(f"{_STYLE}{kind}"):
                    text = " ".join(one_line(inline(p)) for p in element.iter(f"{_TEXT}p", f"{_TEXT}h")).strip()
                    if text and text not in seen and element.get(f"{_STYLE}display") != "false":
                        seen.add(text)
                        found.append((name, element))
    return found


def _matrix(table) -> list[list[tuple[object, str]]]:
    """Per row, per column position, ``(key, text)``; a merged cell's key at every position it spans."""
    down: dict[int, tuple[object, int]] = {}  # column -> (key of a cell spanning down into it, rows left)
    matrix = []
    for r, row in enumerate(_rows(table)):
        line: list[tuple[object, str]] = []
        across: list[object] = []  # keys owed to the covered cells right of a wide cell
        started: dict[int, tuple[object, int]] = {}
        for cell in row:
            for _ in range(min(int(cell.get(f"{_TABLE}number-columns-repeated") or 1), 64)):
                c = len(line)
                if cell.tag == f"{_TABLE}covered-table-cell":
                    key = across.pop(0) if across else down.get(c, ((r, c), 0))[0]
                    line.append((key, ""))
                    continue
                key = (r, c)
                line.append((key, " ".join(t for t in (one_line(inline(p)) for p in
                                                         cell.iter(f"{_TEXT}p", f"{_TEXT}h")) if t)))
                wide = min(int(cell.get(f"{_TABLE}number-columns-spanned") or 1), 64)
                tall = int(cell.get(f"{_TABLE}number-rows-spanned") or 1)
                across = [key] * (wide - 1)
                if tall > 1:
                    started.update({c + k: (key, tall - 1) for k in range(wide)})
        down = {c: (key, left - 1) for c, (key, left) in down.items() if left > 1}
        down.update(started)
        matrix.append(line)
    return matrix


def _rows(table):
    for child in table:
        if child.tag == f"{_TABLE}table-row":
            yield [c for c in child if c.tag in (f"{_TABLE}table-cell", f"{_TABLE}covered-table-cell")]
        elif child.tag in (f"{_TABLE}table-header-rows", f"{_TABLE}table-rows", f"{_TABLE}table-row-group"):
            yield from _rows(child)


def inline(element) -> str:
    """A paragraph's shown text: spans and links read through, ``text:s`` as its spaces, tabs and
    line breaks as themselves; footnote bodies, comments and frames left out (read elsewhere).

    >>> p = etree.fromstring('<p xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0">a<text:s text:c="2"/>b'
    ...                      '<text:tab/>c<text:line-break/><text:span>d</text:span></p>')
    >>> inline(p)
    'a  b\\tc\\nd'
    """
    parts: list[str] = [element.text or ""]
    for child in element:
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag == f"{_TEXT}s":
            parts.append(" " * min(int(child.get(f"{_TEXT}c") or 1), 1000))
        elif tag == f"{_TEXT}tab":
            parts.append("\t")
        elif tag == f"{_TEXT}line-break":
            parts.append("\n")
        elif tag and tag not in _SILENT and tag not in _BLOCKS:
            parts.append(inline(child))
        parts.append(child.tail or "")
    return "".join(parts)
