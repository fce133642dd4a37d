"""PDF tables where PyMuPDF detects them, laid out like every other format's.

``Page.find_tables`` finds tables from a page's ruling lines. A table it finds is read into a
grid (its cells' text taken from the page's own words, so words keep their spaces; a cell
spanning several grid positions becomes a merge), the short line right above it (its
caption, "Table 2: results by period") is its title, and ``extractors.tables`` lays it out as
it does a sheet: title, every header row (a merged group header spread), row labels on every
row. The laid-out blocks then *replace* the lines of the page's text layer that lay inside
the table (and the caption line), so nothing is said twice and the text stays on its page:
the page's ``Page`` locator covers the table as it covered its raw lines.

Cost is bounded: find_tables costs tens of milliseconds to seconds a page, so it runs only
on a page whose vector drawings hold ruling lines that could make a table (at least
:data:`MIN_RULES` horizontal rules and one crossing vertical extent); a page of prose, a
scan, or an OCR'd page costs one ``get_drawings`` pass or nothing. The time left to the
document is checked before each page searched.

Only the hook lives here: ``extractors.pdf`` calls :func:`find` while the document is open
and :func:`replace` once the page blocks are in reading order.
"""
from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from citeline.extractors.clean import Deadline
from citeline.extractors.ocr import Block, Line, PageText
from citeline.extractors.tables import MAX_TITLE_CHARS, grid, table_blocks
from citeline.schemas.options import ExtractOptions

if TYPE_CHECKING:  # imported where a page is read: see extractors/pdf.py
    import pymupdf

MIN_RULES = 3  # horizontal rules (lines or rectangle edges) a page needs before tables are looked for
MIN_RULE_LENGTH = 20.0  # points; shorter strokes are glyph parts, underlines of a word, ticks
MIN_CELL_HEIGHT = 8.0  # points; a vertical rule shorter than a line of text is no column border
MAX_PAIRS = 250_000  # rule pairs checked before a dense drawing is left to find_tables
CAPTION_GAP = 1.6
# A PDF table sits inside its page's running text, where the chunker packs paragraphs up to
# its budget anyway: blocks twice a sheet's (960 characters) repeat the header rows half as
# often and stay under the 512-token budget (no more chunks truncated on the docling PDFs: 21
# before and after; their excess 0.066 against 0.079 at the sheets' size, 0.070 without tables).
BLOCK_FACTOR = 2
# PyMuPDF 2's find_tables runs its layout model (pymupdf-layout, ONNX) on every page searched
# unless told not to: ~1 s a page here against ~0.1 s for the ruling-line search alone, and on
# the docling PDFs the line search finds the same tables but one (a table drawn as a picture)
# and its extra finds cost no fidelity (redp5110 at the sheets' block size: excess 0.064
# without the layout model, 0.089 with it).
USE_LAYOUT = False
BUDGET_S = 30.0  # seconds of table search a document may spend (find_tables: ~0.3-1 s a page searched)  # a caption sits within this many of its line heights above the table


@dataclass
class Found:
    """One table found on a page: its box and its cells by grid position, ``(key, text)``
    as ``extractors.tables.grid`` takes them (a merged cell under one key)."""

    box: tuple[float, float, float, float]
    matrix: list[list[tuple[object, str]]]


def find(doc: pymupdf.Document, numbers: Sequence[int], deadline: Deadline, flags: int,
         notes: list[str]) -> dict[int, list[Found]]:
    """The tables of the pages ``numbers`` (1-based) by page number, within the document's
    table budget: past :data:`BUDGET_S` seconds of searching, the remaining pages keep their
    text lines (a note says from which page), so a long ruled document cannot spend its
    whole time limit here."""
    import pymupdf

    found: dict[int, list[Found]] = {}
    spent = 0.0
    for number in numbers:
        if spent > BUDGET_S:
            notes.append(f"table detection stopped at page {number} (its {BUDGET_S:g} s budget); "
                         "later tables stay text lines")
            break
        started = time.monotonic()
        try:
            page = doc.load_page(number - 1)
        except (RuntimeError, pymupdf.mupdf.FzErrorBase):
            continue
        tables = detect(page, deadline, flags)
        spent += time.monotonic() - started
        if tables:
            found[number] = tables
    return found


def detect(page: pymupdf.Page, deadline: Deadline, flags: int) -> list[Found]:
    """The tables on ``page``; [] for a page without ruling lines to make one.

    Args:
        page: the open page.
        deadline: the document's time limit, checked before the search.
        flags: the text flags the page's text layer was read with (the cells' words use them too).
    """
    import pymupdf

    try:
        if not _ruled(page):
            return []
        deadline.check(f"tables of page {page.number + 1}")
        tables = page.find_tables(**_find_options()).tables
        words = page.get_text("words", flags=flags) if tables else []
    except (RuntimeError, ValueError, IndexError, pymupdf.mupdf.FzErrorBase):
        return []  # a damaged page or a failed search leaves the page's text as it was
    found = []
    for table in tables:
        laid = _read(table, words)
        if laid is not None:
            found.append(laid)
    return found


@functools.lru_cache(maxsize=1)
def _find_options() -> dict:
    """``use_layout`` where this PyMuPDF has it (2.0 on; ``pymupdf>=1.24`` is allowed, and
    before 2.0 find_tables has no layout model to turn off)."""
    import inspect

    from pymupdf import table as _table

    return {"use_layout": USE_LAYOUT} if "use_layout" in inspect.signature(_table.find_tables).parameters else {}


def _ruled(page: pymupdf.Page) -> bool:
    """Whether the page's ruling lines cross as a table's do: horizontal rules (lines, or
    rectangle edges) at :data:`MIN_RULES` heights or more meeting vertical ones at two
    places across or more. One rectangle (a code box, a frame) meets at two heights only,
    a page of prose has no rules; both are passed over at the cost of ``get_drawings``."""
    horizontal: list[tuple[float, float, float]] = []  # y, x0, x1
    vertical: list[tuple[float, float, float]] = []  # x, y0, y1
    for path in page.get_drawings():
        for item in path.get("items", ()):
            if item[0] == "l":
                a, b = item[1], item[2]
                if abs(a.y - b.y) < 1 and abs(a.x - b.x) >= MIN_RULE_LENGTH:
                    horizontal.append((a.y, min(a.x, b.x), max(a.x, b.x)))
                elif abs(a.x - b.x) < 1 and abs(a.y - b.y) >= MIN_CELL_HEIGHT:
                    vertical.append((a.x, min(a.y, b.y), max(a.y, b.y)))
            elif item[0] == "re":
                r = item[1]
                if r.width >= MIN_RULE_LENGTH:
                    horizontal += [(r.y0, r.x0, r.x1), (r.y1, r.x0, r.x1)]
                if r.height >= MIN_CELL_HEIGHT:
                    vertical += [(r.x0, r.y0, r.y1), (r.x1, r.y0, r.y1)]
    if len({round(y) for y, _, _ in horizontal}) < MIN_RULES or not vertical:
        return False
    if len(horizontal) * len(vertical) > MAX_PAIRS:
        return True  # a drawing too dense to check cheaply: find_tables decides
    tol = 3.0
    ys: set[int] = set()
    xs: set[int] = set()
    for y, x0, x1 in horizontal:
        for x, y0, y1 in vertical:
            if x0 - tol <= x <= x1 + tol and y0 - tol <= y <= y1 + tol:
                ys.add(round(y))
                xs.add(round(x))
    return len(ys) >= MIN_RULES and len(xs) >= 2


def _read(table, words: Sequence[tuple]) -> Found | None:
    """One detected table's cells, or None (fewer than two rows or columns with text: a
    frame around a paragraph is not a table)."""
    rows = table.rows
    if table.row_count < 2 or table.col_count < 2:
        return None
    xs = sorted({round(c[0], 1) for row in rows for c in row.cells if c} | {round(table.bbox[2], 1)})
    if len(xs) < 3:
        return None
    cells = [c for row in rows for c in row.cells if c]
    texts = {c: _words_in(c, words) for c in cells}
    matrix = []
    for row in rows:
        y = (row.bbox[1] + row.bbox[3]) / 2
        line = []
        for k in range(len(xs) - 1):
            x = (xs[k] + xs[k + 1]) / 2
            # The cell covering this grid position (itself, or the merged cell over it).
            cell = next((c for c in cells if c[0] - 0.5 <= x <= c[2] + 0.5 and c[1] - 0.5 <= y <= c[3] + 0.5), None)
            line.append((cell if cell is not None else (k, y), texts.get(cell, "") if cell else ""))
        matrix.append(line)
    filled = {k for line in matrix for k, (_, t) in enumerate(line) if t}
    if len(filled) < 2 or sum(any(t for _, t in line) for line in matrix) < 2:
        return None
    return Found(tuple(table.bbox), matrix)


def _words_in(box: tuple[float, float, float, float], words: Sequence[tuple]) -> str:
    """The page's words whose centre lies in ``box``, in reading order, one line."""
    x0, y0, x1, y1 = box
    inside = [w for w in words if x0 <= (w[0] + w[2]) / 2 <= x1 and y0 <= (w[1] + w[3]) / 2 <= y1]
    inside.sort(key=lambda w: (w[5], w[6], w[7]))  # block, line, word numbers
    return " ".join(w[4] for w in inside).strip()


def _caption(box: tuple[float, float, float, float], blocks: Sequence[Block]) -> int | None:
    """Index of the block right above the table (within CAPTION_GAP of its line height),
    overlapping it across, whose whole text is short enough for a title ("Table 2-1
    FUNCTION_USAGE view"): its caption. A long paragraph above is text, not a title."""
    best = None
    for k, block in enumerate(blocks):
        bx0, by0, bx1, by1 = block.box
        height = max(block.lines[-1].box[3] - block.lines[-1].box[1], 1.0)
        above = by1 <= box[1] + 1 and box[1] - by1 <= CAPTION_GAP * height
        across = min(bx1, box[2]) - max(bx0, box[0]) > 0
        if above and across and len(_caption_text(block)) <= MAX_TITLE_CHARS and len(block.lines) <= 3:
            if best is None or by1 > blocks[best].box[3]:
                best = k
    return best


def _caption_text(block: Block) -> str:
    return " ".join(" ".join(line.text.removeprefix("## ").split()) for line in block.lines).strip()


def _inside(line: Line, box: tuple[float, float, float, float]) -> bool:
    x, y = (line.box[0] + line.box[2]) / 2, (line.box[1] + line.box[3]) / 2
    return box[0] - 1 <= x <= box[2] + 1 and box[1] - 1 <= y <= box[3] + 1


def replace(text: PageText, found: Sequence[Found], options: ExtractOptions) -> None:
    """Lay each table out (its caption as the title, ``extractors.tables``) and put its
    blocks where its first line was, dropping the raw lines inside the table and the caption
    block, so the page says each thing once. Called once the page's blocks are final (in
    reading order, headings marked), so the caption is found among them."""
    for table in found:
        caption = _caption(table.box, text.blocks)
        matrix = list(table.matrix)
        if caption is not None:
            matrix.insert(0, [(None, _caption_text(text.blocks[caption]))])
        grid_rows, merges = grid(matrix)
        laid = [b.text for b in table_blocks(grid_rows, lambda *_: None, BLOCK_FACTOR * options.sheet_block_chars,
                                             options.sheet_block_rows, merges) if b.text.strip()]
        placed = False
        blocks: list[Block] = []
        for k, block in enumerate(text.blocks):
            if k == caption:
                continue
            before: list[Line] = []
            after: list[Line] = []
            hit = False
            for line in block.lines:
                if _inside(line, table.box):
                    hit = True
                elif hit:
                    after.append(line)
                else:
                    before.append(line)
            if not hit:
                blocks.append(block)
                continue
            if before:
                blocks.append(Block(before))
            if not placed:
                blocks += [Block([Line(t, table.box) for t in piece.split("\n")]) for piece in laid]
                placed = True
            if after:
                blocks.append(Block(after))
        if placed:
            text.blocks = blocks
