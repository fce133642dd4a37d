"""Word documents (.docx) with python-docx: body paragraphs and tables in document order.

Headings (Title, Heading 1-9) become ``## `` lines (the Title a leading ``# `` line), list
items ``- `` lines, tables pipe rows with the header row repeated above every block of
rows. Each run of blocks under one heading path is one segment whose ``Passage`` locator
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

from citeline.extractors.blocks import Writer, one_line, pipe_row, row_blocks
from citeline.extractors.clean import Deadline
from citeline.extractors.ooxml import claims_part, open_package

NAME = "docx"
VERSION = "1"
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
    for k, element in enumerate(document.element.body.iterchildren()):
        if k % 500 == 0:
            deadline.check(f"block {k + 1}")
        tag = element.tag.rsplit("}", 1)[-1]
        if tag == "tbl":
            _table(writer, Table(element, document), _where(path), options)
        elif tag == "p":
            paragraph = Paragraph(element, document)
            text = one_line(paragraph.text)
            level = _level(paragraph)
            if not text:
                continue
            if level == 0 and not writer.segments and not title:
                title = text
                writer.add(f"# {text}", _where(path))
            elif level:
                path = [(lv, h) for lv, h in path if lv < level] + [(level, text)]
                writer.add(f"## {text}", _where(path))
            else:
                item = _is_item(paragraph)
                writer.add(f"- {text}" if item else text, _where(path), sep="\n" if item and in_list else "\n\n")
                in_list = item
                continue
        in_list = False
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


def _table(writer: Writer, table, where: Passage, options: ExtractOptions) -> None:
    rows = []
    for row in table.rows:
        cells = [cell.text for cell in row.cells]
        # A merged cell repeats in python-docx's row.cells; show it once, as Word does.
        shown = [c if k == 0 or c != cells[k - 1] else "" for k, c in enumerate(cells)]
        line = pipe_row(shown)
        if line:
            rows.append(line)
    if not rows:
        return
    header, body = rows[0], rows[1:]
    if not body:
        writer.add(header, where)
    for first, stop in row_blocks(body, header, options.sheet_block_chars, options.sheet_block_rows):
        writer.add(header + "\n" + "\n".join(body[first:stop]), where)
