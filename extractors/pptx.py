"""PowerPoint presentations (.pptx) with python-pptx: one segment per slide (``#slide=N``).

A slide is a ``## `` heading (its title, else "Slide N"), the text of its other shapes in
reading order (top to bottom, left to right; groups opened; tables as pipe rows), then its
speaker notes. Hidden slides are kept: they are part of the file a reader opens.
"""
from __future__ import annotations

import io
import zipfile
from pathlib import PurePath

from lxml.etree import XMLSyntaxError

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, NoText
from citeline.schemas.locator import Slide
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, one_line
from citeline.extractors.clean import Deadline
from citeline.extractors.ooxml import claims_part, open_package
from citeline.extractors.tables import grid, table_blocks

NAME = "pptx"
# 2: tables laid out by extractors.tables (issue 27): header rows (merged cells spread) and
#    row labels repeated per block of rows.
VERSION = "2"
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
        (zip bomb), NoText, Timeout.
    """
    import pptx  # python-pptx: imported here so the registry loads without it

    options = options or ExtractOptions()
    deadline = Deadline(options.time_limit_s)
    open_package(data, name, options, "ppt/presentation.xml")
    writer = Writer()
    try:
        deck = pptx.Presentation(io.BytesIO(data))
        for number, slide in enumerate(deck.slides, start=1):
            deadline.check(f"slide {number}")
            writer.add(_slide_text(slide, number), Slide(number))
        core = (deck.core_properties.title or "").strip()
    except (KeyError, ValueError, TypeError, AttributeError, XMLSyntaxError, zipfile.BadZipFile) as exc:
        raise Corrupt(f"python-pptx cannot read the presentation: {type(exc).__name__}: {exc}") from None
    if not writer.segments:
        raise NoText("no slide holds text (notes included)")
    return Canonical(text=writer.text, title=core or PurePath(name).stem, extractor=NAME,
                     extractor_version=VERSION, segments=writer.segments)


def _slide_text(slide, number: int) -> str:
    title_shape = slide.shapes.title
    title = one_line(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
    parts = [f"## {title or f'Slide {number}'}"]
    skip = title_shape.shape_id if title_shape is not None else None
    parts += [text for text in _shapes(slide.shapes, skip, 0) if text]
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        notes = _frame(slide.notes_slide.notes_text_frame)
        if notes:
            parts.append(f"Notes: {notes}")
    return "\n\n".join(parts) if len(parts) > 1 or title else ""


def _shapes(shapes, skip, depth: int) -> list[str]:
    """Text of each shape, top to bottom then left to right."""
    out: list[str] = []
    for shape in sorted(shapes, key=lambda s: ((s.top or 0), (s.left or 0))):
        if shape.shape_id == skip and depth == 0:
            continue
        if shape.shape_type == 6 and depth < _MAX_DEPTH:  # MSO_SHAPE_TYPE.GROUP
            out += _shapes(shape.shapes, skip, depth + 1)
        elif getattr(shape, "has_table", False) and shape.has_table:
            out.append(_table(shape.table))
        elif shape.has_text_frame:
            out.append(_frame(shape.text_frame))
    return out


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
            line.append((covered.get((r, c), (r, c)), "" if cell.is_spanned else one_line(cell.text)))
        matrix.append(line)
    rows, merges = grid(matrix)
    # A slide's table is one block: the slide is the locator, and the chunker keeps it whole
    # when it fits; blocks only matter for a table longer than a chunk.
    return "\n\n".join(block.text for block in table_blocks(rows, lambda *_: None, _BLOCK_CHARS, _BLOCK_ROWS, merges))


def _frame(frame) -> str:
    """A text frame's paragraphs, one line each (bullets as "- " when indented)."""
    lines = []
    for paragraph in frame.paragraphs:
        text = one_line("".join(run.text for run in paragraph.runs) or paragraph.text)
        if text:
            lines.append(f"- {text}" if paragraph.level else text)
    return "\n".join(lines)
