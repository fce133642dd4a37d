"""Word documents (.docx) with python-docx: body paragraphs and tables in document order.

Headings (Title, Heading 1-9) become ``## `` lines (the Title a leading ``# `` line), list
items ``- `` lines, tables pipe rows laid out by extractors.tables (a short paragraph right
above a table is its caption; caption and header rows repeated above every block of rows). Each run of blocks under one heading path is one segment whose ``Passage`` locator
names that path ("Install > Linux"); citations give the chunk's own ``#char`` range.
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

from citeline.extractors.blocks import Writer, one_line
from citeline.extractors.clean import Deadline
from citeline.extractors.ooxml import claims_part, open_package
from citeline.extractors.tables import MAX_TITLE_CHARS, grid, table_blocks

NAME = "docx"
# 2: tables laid out by extractors.tables (issue 27): the caption above, every header row
#    (merged cells spread), group rows and row labels repeated per block, split when too wide.
VERSION = "2"
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
    open_package(data, name, options, "word/document.xml")
    try:
        document = docx.Document(io.BytesIO(data))
        writer, title = _body(document, options, deadline)
        core = (document.core_properties.title or "").strip()
    except (KeyError, ValueError, TypeError, AttributeError, XMLSyntaxError, zipfile.BadZipFile) as exc:
        raise Corrupt(f"python-docx cannot read the document: {type(exc).__name__}: {exc}") from None
    if not writer.segments:
        raise NoText("the document holds no text")
    return Canonical(text=writer.text, title=title or core or PurePath(name).stem, extractor=NAME,
                     extractor_version=VERSION, segments=writer.segments)


def _body(document, options: ExtractOptions, deadline: Deadline) -> tuple[Writer, str]:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    writer, title = Writer(), ""
    path: list[tuple[int, str]] = []  # (level, heading) from the outermost in
    in_list = False  # list items follow each other on single lines
    # The last body paragraph, held back one block: right above a table, a short one is the
    # table's caption ("Table 3: results in CHF m"), repeated above each block of its rows.
    held: tuple[str, Passage, str] | None = None
    for k, element in enumerate(document.element.body.iterchildren()):
        if k % 500 == 0:
            deadline.check(f"block {k + 1}")
        tag = element.tag.rsplit("}", 1)[-1]
        if tag == "tbl":
            caption = held[0] if held and len(held[0]) <= MAX_TITLE_CHARS and not held[0].startswith("- ") else ""
            if held and not caption:
                writer.add(*held)
            held = None
            _table(writer, Table(element, document), _where(path), options, caption)
        elif tag == "p":
            paragraph = Paragraph(element, document)
            text = one_line(paragraph.text)
            level = _level(paragraph)
            if not text:
                continue
            if held:
                writer.add(*held)
                held = None
            if level == 0 and not writer.segments and not title:
                title = text
                writer.add(f"# {text}", _where(path))
            elif level:
                path = [(lv, h) for lv, h in path if lv < level] + [(level, text)]
                writer.add(f"## {text}", _where(path))
            else:
                item = _is_item(paragraph)
                held = (f"- {text}" if item else text, _where(path), "\n" if item and in_list else "\n\n")
                in_list = item
                continue
        in_list = False
    if held:
        writer.add(*held)
    return writer, title


def _where(path: list[tuple[int, str]]) -> Passage:
    return Passage(" > ".join(h for _, h in path))


def _level(paragraph) -> int | None:
    """0 for the Title style, 1-9 for Heading N (localised names too), None otherwise."""
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style.lower() == "title":
        return 0
    match = _HEADING.match(style.strip())
    return int(match.group(1)) if match else None


def _is_item(paragraph) -> bool:
    """A list item: a list style or numbering properties on the paragraph."""
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    return style.lower().startswith("list") or paragraph._p.pPr is not None and paragraph._p.pPr.numPr is not None


def _table(writer: Writer, table, where: Passage, options: ExtractOptions, caption: str = "") -> None:
    """The table laid out by extractors.tables: python-docx repeats a merged cell at every
    grid position it spans (same ``_tc``), which gives the merges; the caption is its title."""
    matrix = [[(cell._tc, one_line(cell.text)) for cell in row.cells] for row in table.rows]
    if caption:
        matrix.insert(0, [(None, caption)])
    rows, merges = grid(matrix)
    for block in table_blocks(rows, lambda *_: where, options.sheet_block_chars, options.sheet_block_rows, merges):
        writer.add_block(block)
