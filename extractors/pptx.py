"""PowerPoint presentations (.pptx) with python-pptx: one segment per slide (``#slide=N``).

A slide is a ``## `` heading (its title, else "Slide N"), the text of its other shapes in
reading order (top to bottom, left to right; groups opened; tables as pipe rows; equations as
linear text (extractors.omml); charts as tables of their data; SmartArt's text), then its
speaker notes. Hidden slides are kept: they
are part of the file a reader opens. A paragraph's line breaks are spaces, its automatic
number the label PowerPoint draws ("1.", "a)"). A shape python-pptx cannot read is skipped
with a note naming it, not the whole deck failed.
"""
from __future__ import annotations

import io
import zipfile
from pathlib import PurePath

from lxml.etree import XMLSyntaxError

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, NotADocument
from citeline.schemas.locator import Slide
from citeline.schemas.options import ExtractOptions

from citeline.extractors import omml
from citeline.extractors.blocks import Writer, one_line, text_limit
from citeline.extractors.clean import Deadline
from citeline.extractors.numbering import counter_text
from citeline.extractors.ooxml import chart_rows, claims_part, is_strict, open_package, transitional
from citeline.extractors.tables import grid, table_blocks

NAME = "pptx"
# 2: tables laid out by extractors.tables: header rows (merged cells spread) and
#    row labels repeated per block of rows.
# 3: line breaks as spaces, automatic numbers, equations, charts' data, SmartArt text, an unreadable shape
#    skipped with a note.
# 4: a label alone over a header row of its own starts a new table
#    (extractors.tables.split_tables).
# 5: a deck of pictures with no text is not a document, a deck of nothing is empty.
# 6: a table's notes (rows of labels alone after its last figures) shown once after it, not
#    repeated under its headers in pieces without a number (extractors.tables).
VERSION = "6"
# Parses untrusted zip and XML input: run in a killable worker process (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".pptx", ".pptm", ".ppsx", ".potx")
MAGIC: tuple[bytes, ...] = ()
_BLOCK_CHARS, _BLOCK_ROWS = ExtractOptions().sheet_block_chars, ExtractOptions().sheet_block_rows
_MAX_DEPTH = 20  # nested groups deeper than this are not opened (a hostile file may nest forever)


def claims(head: bytes) -> bool:
    """An OOXML zip with a PowerPoint part (``ppt/``) in its first entries."""
    return claims_part(head, b"ppt/")


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of a presentation, one segment per slide that has text.

    Raises:
        Empty, Encrypted, UnsupportedType (.ppt, another package), Corrupt, TooLarge
        (zip bomb), Empty, NotADocument (pictures and no text), Timeout.
    """
    import pptx  # python-pptx: imported here so the registry loads without it

    options = options or ExtractOptions()
    deadline = Deadline(options.time_limit_s)
    limit = text_limit(options, len(data))
    archive = open_package(data, name, options, "ppt/presentation.xml")
    if is_strict(archive):
        data = transitional(archive)
    writer = Writer(limit)
    notes: list[str] = []
    try:
        deck = pptx.Presentation(io.BytesIO(data))
        for number, slide in enumerate(deck.slides, start=1):
            deadline.check(f"slide {number}")
            writer.add(_slide_text(slide, number, notes), Slide(number))
        core = (deck.core_properties.title or "").strip()
    except (KeyError, ValueError, TypeError, AttributeError, XMLSyntaxError, zipfile.BadZipFile) as exc:
        raise Corrupt(f"python-pptx cannot read the presentation: {type(exc).__name__}: {exc}") from None
    if not writer.segments:
        # A deck of pictures and no word is set aside as a photo with no text is; a deck holding nothing at all is empty.
        if any(n.startswith("ppt/media/") for n in archive.namelist()):
            raise NotADocument("slides of pictures with no text")
        raise Empty("no slide holds text or a picture (notes included)")
    return Canonical(text=writer.text, title=core or PurePath(name).stem, extractor=NAME,
                     extractor_version=VERSION, segments=writer.segments, notes=tuple(notes))


def _slide_text(slide, number: int, notes: list[str]) -> str:
    title_shape = slide.shapes.title
    title = one_line(_frame(title_shape.text_frame)) if title_shape is not None and title_shape.has_text_frame else ""
    parts = [f"## {title or f'Slide {number}'}"]
    skip = title_shape.shape_id if title_shape is not None else None
    parts += [text for text in _shapes(slide, slide.shapes, skip, 0, number, notes) if text]
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        spoken = _frame(slide.notes_slide.notes_text_frame)
        if spoken:
            parts.append(f"Notes: {spoken}")
    return "\n\n".join(parts) if len(parts) > 1 or title else ""


def _shapes(slide, shapes, skip, depth: int, number: int, notes: list[str]) -> list[str]:
    """Text of each shape, top to bottom then left to right."""
    from pptx.shapes.group import GroupShape

    out: list[str] = []
    for shape in sorted(shapes, key=lambda s: ((s.top or 0), (s.left or 0))):
        try:
            if shape.shape_id == skip and depth == 0:
                continue
            if isinstance(shape, GroupShape):
                if depth < _MAX_DEPTH:
                    out += _shapes(slide, shape.shapes, skip, depth + 1, number, notes)
            elif getattr(shape, "has_table", False) and shape.has_table:
                out.append(_table(shape.table))
            elif getattr(shape, "has_chart", False) and shape.has_chart:
                try:
                    blob = shape.chart_part.blob
                except KeyError:  # the relationship names no part: the chart is lost, not the deck
                    notes.append(f"slide {number}: chart {one_line(str(shape.name))[:80]!r} skipped: its part is missing")
                    continue
                out.append(_chart(blob, number, notes))
            elif shape.has_text_frame:
                out.append(_frame(shape.text_frame))
            else:
                out.append(_diagram(slide, shape))
        except NotImplementedError as exc:  # python-pptx on a shape kind it does not model
            notes.append(f"slide {number}: shape {one_line(str(getattr(shape, 'name', '')))[:80]!r} skipped: "
                         f"python-pptx cannot read it ({one_line(str(exc))[:120]})")
    return out


def _chart(xml: bytes, number: int, notes: list[str]) -> str:
    """A chart's cached data as a table, its title (else its kind) the title row."""
    try:
        caption, rows = chart_rows(xml)
    except XMLSyntaxError as exc:
        notes.append(f"slide {number}: a chart skipped: its part is not XML ({one_line(str(exc))[:120]})")
        return ""
    if not rows:
        return caption
    matrix = [[(None, caption)]] + [[(object(), value) for value in row] for row in rows]
    return _blocks(matrix)


_DGM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"


def _diagram(slide, shape) -> str:
    """A SmartArt graphic's text: the paragraphs of its data part, in the order it lists them."""
    from lxml import etree

    data = shape.element.find(f".//{{{_DGM}}}relIds")
    rid = data.get(f"{_R}dm") if data is not None else None
    if not rid:
        return ""
    try:  # a SmartArt whose data part is missing or broken is a graphic without text, not a broken deck
        root = etree.fromstring(slide.part.related_part(rid).blob,
                                parser=etree.XMLParser(resolve_entities=False, no_network=True))
    except (KeyError, XMLSyntaxError):
        return ""
    lines = [one_line("".join(t.text or "" for t in p.iter(f"{_A}t"))) for p in root.iter(f"{_A}p")]
    return "\n".join(line for line in lines if line)


def _table(table) -> str:
    """The table laid out by extractors.tables (header rows, merged cells spread, row labels);
    the slide is its locator, so the blocks are joined as the slide's text."""
    covered: dict[tuple[int, int], tuple[int, int]] = {}  # grid position -> its merge origin
    matrix = []
    for r, row in enumerate(table.rows):
        line = []
        for c, cell in enumerate(row.cells):
            if cell.is_merge_origin:
                for dr in range(cell.span_height):
                    for dc in range(cell.span_width):
                        covered[(r + dr, c + dc)] = (r, c)
            line.append((covered.get((r, c), (r, c)), "" if cell.is_spanned else one_line(_frame(cell.text_frame))))
        matrix.append(line)
    return _blocks(matrix)


def _blocks(matrix) -> str:
    rows, merges = grid(matrix)
    # A slide's table is one block: the slide is the locator, and the chunker keeps it whole
    # when it fits; blocks only matter for a table longer than a chunk.
    return "\n\n".join(block.text for block in table_blocks(rows, lambda *_: None, _BLOCK_CHARS, _BLOCK_ROWS, merges))


def _frame(frame) -> str:
    """A text frame's paragraphs, one line each: its line breaks as spaces, an automatic number
    as the label drawn before it, other indented paragraphs as "- " items."""
    lines = []
    counters: dict[int, tuple[str, int]] = {}  # level -> (numbering scheme, last number)
    for paragraph in frame.paragraphs:
        text = one_line(_paragraph_text(paragraph._p))
        level = paragraph.level
        auto = paragraph._p.find(f"{_A}pPr/{_A}buAutoNum")
        for deeper in [k for k in counters if k > level or (k == level and auto is None)]:
            del counters[deeper]
        if not text:
            continue
        if auto is not None:
            scheme = auto.get("type") or "arabicPeriod"
            last = counters.get(level)
            n = last[1] + 1 if last and last[0] == scheme else _start(auto)
            counters[level] = (scheme, n)
            lines.append(f"{_auto_label(scheme, n)} {text}")
        else:
            lines.append(f"- {text}" if level else text)
    return "\n".join(lines)


_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"


def _paragraph_text(p) -> str:
    """A paragraph's runs, fields and line breaks (python-pptx's runs leave the breaks out, its
    text gives them as vertical tabs), and its equations (``a14:m`` in an ``mc:AlternateContent``,
    which python-pptx skips) as their linear text."""
    out: list[str] = []
    for child in p:
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag in (f"{_A}r", f"{_A}fld"):
            out.append(child.findtext(f"{_A}t") or "")
        elif tag == f"{_A}br":
            out.append(" ")
        elif tag == f"{_MC}AlternateContent":
            chosen = child.find(f"{_MC}Choice")
            maths = list(chosen.iter(*omml.MATH)) if chosen is not None else []
            outer = [m for m in maths if not any(a in maths for a in m.iterancestors())]
            if outer:
                out.append(" " + " ".join(omml.linear(m) for m in outer) + " ")
            else:  # no equation in the choice: the fallback's runs (an image of it has none)
                fallback = child.find(f"{_MC}Fallback")
                out += [t.text or "" for t in (fallback.iter(f"{_A}t") if fallback is not None else ())]
    return "".join(out)


def _start(auto) -> int:
    try:
        return max(1, int(auto.get("startAt") or 1))
    except ValueError:
        return 1


def _auto_label(scheme: str, n: int) -> str:
    """The label of number ``n`` in a DrawingML auto-number scheme (ECMA-376 ST_TextAutonumberScheme).

    >>> [_auto_label(s, n) for s, n in (("arabicPeriod", 3), ("alphaLcParenR", 2), ("romanUcPeriod", 4), ("arabicParenBoth", 1))]
    ['3.', 'b)', 'IV.', '(1)']
    """
    kind = ("lowerLetter" if scheme.startswith("alphaLc") else "upperLetter" if scheme.startswith("alphaUc") else
            "lowerRoman" if scheme.startswith("romanLc") else "upperRoman" if scheme.startswith("romanUc") else "decimal")
    value = counter_text(n, kind)
    if scheme.endswith("ParenBoth"):
        return f"({value})"
    if scheme.endswith("ParenR"):
        return f"{value})"
    if scheme.endswith("Period"):
        return f"{value}."
    return value
