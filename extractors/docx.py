"""Word documents (.docx) with python-docx: everything the body holds, in document order.

Headings (Title, Heading 1-9) become ``## `` lines (the Title a leading ``# `` line), list
items lines with the label Word shows ("1.", "2.1", "a)"; bullets as ``- ``), tables pipe rows
laid out by extractors.tables (a short paragraph right above a table is its caption; caption and
header rows repeated above every block of rows). Each run of blocks under one heading path is
one segment whose ``Passage`` locator names that path ("Install > Linux"); citations give the
chunk's own ``#char`` range.

Read from the XML, beyond python-docx's paragraphs: content controls
(``w:sdt`` around blocks, rows, cells and runs; not the prompt Word shows in an empty one), text
boxes (DrawingML and VML, the choice of an ``mc:AlternateContent`` only, so a box is read once)
right after the paragraph anchoring them, tables nested in cells (their text inside the cell,
once), equations as their linear text (extractors.omml), charts as tables of their cached data,
hidden (``w:vanish``) and deleted text left out. A Strict OOXML package is read through its
transitional names (extractors.ooxml).
"""
from __future__ import annotations

import io
import re
import zipfile
from pathlib import PurePath

from lxml.etree import XMLSyntaxError

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, NoText
from citeline.schemas.locator import Passage
from citeline.schemas.options import ExtractOptions

from citeline.extractors import omml
from citeline.extractors.numbering import counter_text
from citeline.extractors.blocks import Writer, one_line, text_limit
from citeline.extractors.clean import Deadline
from citeline.extractors.ooxml import chart_rows, claims_part, is_strict, open_package, transitional
from citeline.extractors.tables import MAX_TITLE_CHARS, grid, table_blocks

NAME = "docx"
# 2: tables laid out by extractors.tables: the caption above, every header row
#    (merged cells spread), group rows and row labels repeated per block, split when too wide.
# 3: content controls, text boxes, nested tables, equations, charts, list and heading numbers,
#    Strict OOXML.
# 4: a label alone over a header row of its own starts a new table
#    (extractors.tables.split_tables).
# 5: page headers and footers, each distinct one once, after the body.
# 6: a table's notes (rows of labels alone after its last figures) shown once after it, not
#    repeated under its headers in pieces without a number (extractors.tables).
VERSION = "6"
# Parses untrusted zip and XML input: run in a killable worker process (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".docx", ".docm", ".dotx")
MAGIC: tuple[bytes, ...] = ()
_HEADING = re.compile(r"^(?:heading|überschrift|titre|titolo|título)\s*(\d)$", re.IGNORECASE)


def claims(head: bytes) -> bool:
    """An OOXML zip with a Word part (``word/``) in its first entries."""
    return claims_part(head, b"word/")


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of a Word document.

    Raises:
        Empty, Encrypted, UnsupportedType (.doc, another package), Corrupt, TooLarge
        (zip bomb), NoText, Timeout.
    """
    import docx  # python-docx: imported here so the registry loads without it

    options = options or ExtractOptions()
    deadline = Deadline(options.time_limit_s)
    archive = open_package(data, name, options, "word/document.xml")
    if is_strict(archive):
        data = transitional(archive)
    try:
        document = docx.Document(io.BytesIO(data))
        writer, title = _body(document, options, deadline, text_limit(options, len(data)))
        core = (document.core_properties.title or "").strip()
    except (KeyError, ValueError, TypeError, AttributeError, XMLSyntaxError, zipfile.BadZipFile) as exc:
        raise Corrupt(f"python-docx cannot read the document: {type(exc).__name__}: {exc}") from None
    if not writer.segments:
        raise NoText("the document holds no text")
    return Canonical(text=writer.text, title=title or core or PurePath(name).stem, extractor=NAME,
                     extractor_version=VERSION, segments=writer.segments)


def _body(document, options: ExtractOptions, deadline: Deadline, limit: int) -> tuple[Writer, str]:
    reader = _Reader(document, options, deadline, limit)
    body = document.element.body
    _unwrap(body)
    reader.blocks(body, 0)
    reader.flush()
    for name, element in _margins(document):
        reader.margin(name, element)
    return reader.writer, reader.title


_MARGINS = (("Page header", ("first_page_header", "header", "even_page_header")),
            ("Page footer", ("first_page_footer", "footer", "even_page_footer")))


def _margins(document) -> list[tuple[str, object]]:
    """Each distinct page header and footer the sections define (those linked to the previous
    section's are the same part): their text is the document's too, a letterhead's address, a
    footer's table (peers read it; the body alone lost it). Kept once each, after the
    body, as sections named "Page header" and "Page footer"."""
    found: list[tuple[str, object]] = []
    seen: set[str] = set()
    for section in document.sections:
        for name, kinds in _MARGINS:
            for kind in kinds:
                margin = getattr(section, kind)
                if margin.is_linked_to_previous:
                    continue
                element = margin._element
                _unwrap(element)
                text = "".join(t.text or "" for t in element.iter(f"{_W}t")).strip()
                if text and text not in seen:
                    seen.add(text)
                    found.append((name, element))
    return found


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_MATH = omml.MATH
# Inline elements whose text is not shown: properties, deleted and moved-away text, field codes.
_SILENT = {f"{_W}{t}" for t in ("pPr", "rPr", "sdtPr", "sdtEndPr", "del", "moveFrom", "instrText", "delText",
                                "customXmlPr", "footnoteReference", "endnoteReference", "commentReference")}
_MAX_DEPTH = 8  # text boxes and tables nested deeper than this are not opened (a hostile file may nest forever)
_MAX_INLINE_DEPTH = 200


def _unwrap(body) -> None:
    """Content controls and custom XML wrappers (around blocks, rows, cells or runs) replaced by
    what they hold, so the body, its tables and python-docx's rows and cells see their content."""
    for wrapper in list(body.iter(f"{_W}sdt", f"{_W}customXml")):
        parent = wrapper.getparent()
        if parent is None:
            continue
        content = wrapper.find(f"{_W}sdtContent") if wrapper.tag == f"{_W}sdt" else wrapper
        kept = [c for c in (content if content is not None else ()) if c.tag != f"{_W}customXmlPr"]
        if wrapper.find(f"{_W}sdtPr/{_W}showingPlcHdr") is not None:
            # Word's prompt ("Click or tap here to enter text."), not the author's: the structure stays
            for element in kept:
                for t in element.iter(f"{_W}t"):
                    t.text = ""
        at = parent.index(wrapper)
        parent[at:at + 1] = kept



_MAX_POSITIONS = 1000  # grid columns a row is expanded to (a hostile gridSpan may claim millions)


def grid_positions(tbl) -> list[list[object | None]]:
    """Each row's cell (``w:tc``) at every grid column, read from the XML: a cell spanning
    columns repeated, a vertically merged cell continuing the one above, columns a row skips
    (``gridBefore``) empty. python-docx's ``row.cells`` raises ``no `tc` element at grid_offset``
    when a merge continues under a row shorter than the grid (``grid_offset_error.docx``:
    Word and the peers read it), which failed the whole document "corrupt".
    """
    above: dict[int, object] = {}  # grid column -> the cell the last row held there
    rows: list[list[object | None]] = []
    for tr in tbl.tr_lst:
        line: list[object | None] = [None] * min(max(tr.grid_before, 0), _MAX_POSITIONS)
        for tc in tr.tc_lst:
            cell = above.get(len(line), tc) if tc.vMerge == "continue" else tc
            for _ in range(max(tc.grid_span, 1)):
                if len(line) >= _MAX_POSITIONS:
                    break
                above[len(line)] = cell
                line.append(cell)
        rows.append(line)
    return rows

class _Reader:
    """The body's blocks in document order, appended to the writer (headings, lists, captions)."""

    def __init__(self, document, options: ExtractOptions, deadline: Deadline, limit: int) -> None:
        self.document, self.options, self.deadline = document, options, deadline
        self.numbering = _Numbering(document)
        self.writer, self.title = Writer(limit), ""
        self.path: list[tuple[int, str]] = []  # (level, heading) from the outermost in
        self.in_list = False  # list items follow each other on single lines
        # The last body paragraph, held back one block: right above a table, a short one is the
        # table's caption ("Table 3: results in CHF m"), repeated above each block of its rows.
        self.held: tuple[str, Passage, str] | None = None
        self.seen = 0

    def blocks(self, container, depth: int) -> None:
        for element in container.iterchildren(f"{_W}p", f"{_W}tbl"):
            self.seen += 1
            if self.seen % 500 == 0:
                self.deadline.check(f"block {self.seen}")
            if element.tag == f"{_W}tbl":
                self.table(element, depth)
            else:
                self.paragraph(element, depth)

    def margin(self, name: str, element) -> None:
        """A page header or footer's blocks as a section of their own, after the body."""
        self.flush()
        self.path = [(1, name)]
        self.writer.add(f"## {name}", _where(self.path))
        self.in_list = False
        self.blocks(element, 0)
        self.flush()

    def flush(self) -> None:
        if self.held:
            self.writer.add(*self.held)
            self.held = None

    def paragraph(self, p, depth: int) -> None:
        from docx.text.paragraph import Paragraph

        boxes: list = []
        charts: list[str] = []
        text = one_line(_inline(p, boxes, charts))
        style = Paragraph(p, self.document).style
        label = self.numbering.label(p, style)  # an empty numbered paragraph still takes its number
        level = _level(style)
        if text:
            if self.held:
                self.flush()
            if level == 0 and not self.writer.segments and not self.title:
                self.title = text
                self.writer.add(f"# {text}", _where(self.path))
                self.in_list = False
            elif level:
                heading = f"{label[0]} {text}" if label and label[0] else text
                self.path = [(lv, h) for lv, h in self.path if lv < level] + [(level, heading)]
                self.writer.add(f"## {heading}", _where(self.path))
                self.in_list = False
            else:
                item = label is not None or _is_list_style(style)
                line = (f"{label[0]} {text}" if label and label[0] else f"- {text}" if item else text)
                self.held = (line, _where(self.path), "\n" if item and self.in_list else "\n\n")
                self.in_list = item
        if depth < _MAX_DEPTH:
            for box in boxes:
                self.flush()
                self.in_list = False
                self.blocks(box, depth + 1)
        for rid in charts:
            self.chart(rid)

    def table(self, tbl, depth: int) -> None:
        """The table laid out by extractors.tables: a merged cell repeated at every grid
        position it spans (same ``tc``) gives the merges; the caption is its title."""
        held = self.held
        caption = held[0] if held and len(held[0]) <= MAX_TITLE_CHARS and not held[0].startswith("- ") else ""
        if held and not caption:
            self.flush()
        self.held = None
        self.in_list = False
        texts: dict[int, str] = {}

        def entry(tc) -> tuple[object, str]:
            if tc is None:
                return object(), ""
            if id(tc) not in texts:
                texts[id(tc)] = self.cell_text(tc, depth + 1)
            return tc, texts[id(tc)]

        self.lay_out([[entry(tc) for tc in line] for line in grid_positions(tbl)], caption)

    def lay_out(self, matrix: list, caption: str) -> None:
        if caption:
            matrix.insert(0, [(None, caption)])
        rows, merges = grid(matrix)
        where = _where(self.path)
        for block in table_blocks(rows, lambda *_: where, self.options.sheet_block_chars,
                                  self.options.sheet_block_rows, merges):
            self.writer.add_block(block)

    def cell_text(self, tc, depth: int) -> str:
        """A cell on one line: its paragraphs (list labels kept), then what its text boxes and
        nested tables hold, each nested table once, row after row."""
        parts: list[str] = []
        for element in tc.iterchildren(f"{_W}p", f"{_W}tbl"):
            if element.tag == f"{_W}tbl":
                if depth < _MAX_DEPTH:
                    # A cell merged down is its first row's: the XML of the rows it covers may
                    # still hold text Word never shows (a vMerge continuation's own paragraphs).
                    parts += [self.cell_text(inner, depth + 1) for tr in element.iterchildren(f"{_W}tr")
                              for inner in tr.iterchildren(f"{_W}tc") if inner.vMerge != "continue"]
                continue
            from docx.text.paragraph import Paragraph

            boxes: list = []
            text = one_line(_inline(element, boxes, []))
            label = self.numbering.label(element, Paragraph(element, self.document).style)
            if text:
                parts.append(f"{label[0]} {text}" if label and label[0] else f"- {text}" if label else text)
            if depth < _MAX_DEPTH:
                parts += [self.cell_text(box, depth + 1) for box in boxes]
        return one_line(" ".join(p for p in parts if p))

    def chart(self, rid: str) -> None:
        """A chart's cached data as a table, its title (else its kind) the caption."""
        part = self.document.part.related_parts.get(rid) if rid else None
        if part is None:
            return
        caption, rows = chart_rows(part.blob)
        if rows:
            self.flush()
            self.lay_out([[(object(), value) for value in row] for row in rows], caption)


def _inline(element, boxes: list, charts: list[str], depth: int = 0) -> str:
    """A paragraph's shown text in order (runs, hyperlinks, fields, inserted text, equations as
    their linear text); the text boxes and charts it anchors are collected, not inlined."""
    out: list[str] = []
    for child in element:
        tag = child.tag
        if not isinstance(tag, str) or tag in _SILENT:
            continue
        if tag == f"{_W}t":
            out.append(child.text or "")
        elif tag in (f"{_W}tab", f"{_W}ptab"):
            out.append("\t")
        elif tag in (f"{_W}br", f"{_W}cr"):
            out.append("\n")
        elif tag == f"{_W}noBreakHyphen":
            out.append("-")
        elif tag in _MATH:
            out.append(f" {omml.linear(child)} ")
        elif tag == f"{_W}txbxContent":
            boxes.append(child)
        elif tag == f"{_C}chart":
            charts.append(child.get(f"{_R}id") or "")
        elif tag == f"{_MC}AlternateContent":
            # The same drawing twice (DrawingML choice, VML fallback): read the first only.
            chosen = child.find(f"{_MC}Choice")
            chosen = chosen if chosen is not None else child.find(f"{_MC}Fallback")
            if chosen is not None and depth < _MAX_INLINE_DEPTH:
                out.append(_inline(chosen, boxes, charts, depth + 1))
        elif tag == f"{_W}r" and _vanished(child):
            continue
        elif depth < _MAX_INLINE_DEPTH:
            out.append(_inline(child, boxes, charts, depth + 1))
    return "".join(out)


def _vanished(run) -> bool:
    """A run formatted as hidden text (Word does not show or print it)."""
    vanish = run.find(f"{_W}rPr/{_W}vanish")
    return vanish is not None and vanish.get(f"{_W}val", "true") not in ("0", "false", "off")


def _where(path: list[tuple[int, str]]) -> Passage:
    return Passage(" > ".join(h for _, h in path))


def _level(style) -> int | None:
    """0 for the Title style, 1-9 for Heading N (localised names too), None otherwise."""
    name = (style.name if style is not None else "") or ""
    if name.lower() == "title":
        return 0
    match = _HEADING.match(name.strip())
    return int(match.group(1)) if match else None


def _is_list_style(style) -> bool:
    return ((style.name if style is not None else "") or "").lower().startswith("list")


class _Numbering:
    """The labels Word draws before numbered paragraphs ("1.", "1.2", "a)", "iv."), counted in
    document order from numbering.xml: a paragraph's own ``w:numPr`` or its style's (through
    ``basedOn``), the level's format, text and start, ``w:startOverride``, deeper levels
    restarting when a level above advances."""

    def __init__(self, document) -> None:
        self.abstract: dict[str, dict[int, dict]] = {}  # abstractNumId -> ilvl -> level
        self.nums: dict[str, tuple[str, dict[int, int]]] = {}  # numId -> (abstractNumId, start overrides)
        self.counters: dict[str, list[int | None]] = {}
        self.overridden: set[str] = set()
        self.styles: dict[str, tuple[str | None, str | None, str | None]] = {}  # id -> (numId, ilvl, basedOn)
        try:
            root = document.part.numbering_part.element
        except (KeyError, NotImplementedError):
            return
        for abstract in root.iterchildren(f"{_W}abstractNum"):
            levels = {}
            for lvl in abstract.iterchildren(f"{_W}lvl"):
                levels[_int(lvl.get(f"{_W}ilvl"), 0)] = _lvl(lvl)
            self.abstract[abstract.get(f"{_W}abstractNumId") or ""] = levels
        for num in root.iterchildren(f"{_W}num"):
            overrides = {}
            for override in num.iterchildren(f"{_W}lvlOverride"):
                start = override.find(f"{_W}startOverride")
                if start is not None:
                    overrides[_int(override.get(f"{_W}ilvl"), 0)] = _int(start.get(f"{_W}val"), 1)
            self.nums[num.get(f"{_W}numId") or ""] = (_attr(num, "abstractNumId") or "", overrides)
        for style in document.styles.element.iterchildren(f"{_W}style"):
            num_pr = style.find(f"{_W}pPr/{_W}numPr")
            self.styles[style.get(f"{_W}styleId") or ""] = (
                _attr(num_pr, "numId") if num_pr is not None else None,
                _attr(num_pr, "ilvl") if num_pr is not None else None, _attr(style, "basedOn"))

    def label(self, p, style) -> tuple[str, bool] | None:
        """``(label, bullet)`` for a numbered paragraph (the label "" for a bullet), else None."""
        num_id, ilvl = None, None
        num_pr = p.find(f"{_W}pPr/{_W}numPr")
        if num_pr is not None:
            num_id, ilvl = _attr(num_pr, "numId"), _attr(num_pr, "ilvl")
        style_id = style.style_id if style is not None else None
        seen = set()
        while num_id is None and style_id and style_id not in seen:
            seen.add(style_id)
            s_num, s_lvl, style_id_next = self.styles.get(style_id, (None, None, None))
            num_id, ilvl = s_num, ilvl if ilvl is not None else s_lvl
            style_id = style_id_next
        if not num_id or num_id == "0" or num_id not in self.nums:
            return None
        abstract_id, overrides = self.nums[num_id]
        levels = self.abstract.get(abstract_id, {})
        level = _int(ilvl, 0)
        if ilvl is None and style is not None:  # a heading style linked to a level by its w:pStyle
            level = next((k for k, lv in levels.items() if lv["style"] == style.style_id), 0)
        if level not in levels:
            return None
        counters = self.counters.setdefault(abstract_id, [None] * 10)
        if num_id not in self.overridden and overrides:
            self.overridden.add(num_id)
            for k, start in overrides.items():
                if 0 <= k < 10:
                    counters[k] = start - 1
            for k in range(max(overrides) + 1, 10):
                counters[k] = None
        if levels[level]["format"] == "bullet":
            return "", True
        counters[level] = levels[level]["start"] if counters[level] is None else counters[level] + 1
        for k in range(level + 1, 10):
            counters[k] = None
        text = levels[level]["text"]

        def value(match: re.Match) -> str:
            k = int(match.group(1)) - 1
            lv = levels.get(k)
            if lv is None:
                return ""
            if counters[k] is None:  # a level skipped over counts as used: 1 → 1.1.1 → 1.2
                counters[k] = lv["start"]
            n = counters[k]
            return counter_text(n, "decimal" if levels[level]["legal"] else lv["format"])

        return one_line(re.sub(r"%([1-9])", value, text)), False


def _attr(element, child: str) -> str | None:
    found = element.find(f"{_W}{child}")
    return found.get(f"{_W}val") if found is not None else None


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _lvl(lvl) -> dict:
    legal = lvl.find(f"{_W}isLgl")
    return {"start": _int(_attr(lvl, "start"), 0), "format": _attr(lvl, "numFmt") or "decimal",
            "text": _attr(lvl, "lvlText") or "", "style": _attr(lvl, "pStyle"),
            "legal": legal is not None and legal.get(f"{_W}val", "1") not in ("0", "false", "off")}
