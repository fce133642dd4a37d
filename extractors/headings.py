"""Section headings of a PDF page from its fonts: larger or bold short lines, or a
numbered title ("2.1 Scope") alone in its block, become ``## `` lines of the canonical
text, so the chunker sees sections (``Doc > Section``) the way it does in Markdown.

Only lines read from a text layer carry a font; OCR'd pages keep their text as it is.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from citeline.extractors.ocr import Block, Line, union

_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi|cmbx", re.IGNORECASE)
_BOLD_FLAG = 16  # MuPDF's span flag for a bold font
_LARGER = 1.15  # a heading's font is at least this much larger than the body's...
_BOLD_MIN = 0.95  # ...or bold and not smaller than the body's (a bold run-in title)
_MAX_CHARS = 120
_MAX_LINES = 2
# Table-of-contents lines: dot leaders before a page number ("Intro . . . . 23").
TOC_LINE = re.compile(r"(?:\.\s?){4,}\s*\S{0,8}\s*$")
_NUMBERED = re.compile(r"^(?:\d+\.)+\d*\s+[A-Z]")  # "2.1 Scope", "3.2.1 Rules"
_NUMBER_ONLY = re.compile(r"^[\divxlcIVXLC.\s-]*$")


def line_style(spans: Iterable[dict]) -> tuple[float, bool]:
    """A line's font size (weighted by characters) and whether every visible span is bold.

    >>> line_style([{"text": "Scope", "size": 14.0, "flags": 16, "font": "Helvetica"}])
    (14.0, True)
    """
    visible = [s for s in spans if s["text"].strip()]
    chars = sum(len(s["text"].strip()) for s in visible)
    if not chars:
        return 0.0, False
    size = sum(s["size"] * len(s["text"].strip()) for s in visible) / chars
    bold = all(s["flags"] & _BOLD_FLAG or _BOLD_FONT.search(s["font"]) for s in visible)
    return round(size, 1), bool(bold)


class Fonts:
    """The document's body font: the size most characters are set in, and whether bold is
    rare enough to mark headings (a document set all in bold has no bold headings)."""

    def __init__(self, lines: Iterable[Line]) -> None:
        sizes: Counter[float] = Counter()
        bold = total = 0
        for line in lines:
            chars = len(line.text.strip())
            if line.size and chars:
                sizes[round(line.size * 2) / 2] += chars
                bold += chars * line.bold
                total += chars
        self.body = sizes.most_common(1)[0][0] if sizes else 0.0
        self.bold_marks = bool(total) and bold < total / 2

    def stands_out(self, line: Line, alone: bool) -> bool:
        """Set apart from the body: larger, bold, or a numbered title alone in its block."""
        if not self.body or not line.size:
            return False
        if line.size >= self.body * _LARGER:
            return True
        if line.size < self.body * _BOLD_MIN:
            return False
        return (self.bold_marks and line.bold) or (alone and bool(_NUMBERED.match(line.text.strip())))


def reads_as_heading(text: str) -> bool:
    """Short, with a letter, not a sentence or a clause, not a TOC line or a page number.

    >>> reads_as_heading("2.1 Scope"), reads_as_heading("It ends here."), reads_as_heading("Intro . . . . 23")
    (True, False, False)
    """
    text = text.strip()
    return (
        0 < len(text) <= _MAX_CHARS
        and any(c.isalpha() for c in text)
        and text[-1] not in ".,;:"
        and not TOC_LINE.search(text)
        and not _NUMBER_ONLY.match(text)
    )


def mark_headings(blocks: list[Block], fonts: Fonts) -> list[Block]:
    """The page's blocks with each heading split out into a block of one ``## `` line.

    A block's lines are grouped by whether they stand out; a group of at most two such
    lines that reads as a heading becomes one heading line, everything else stays text.
    """
    out: list[Block] = []
    for block in blocks:
        body: list[Line] = []
        for group in _groups(block.lines, fonts):
            heading = _heading(group, fonts, alone=len(block.lines) == 1)
            if heading is None:
                body += group
                continue
            if body:
                out.append(Block(body))
                body = []
            out.append(Block([heading]))
        if body:
            out.append(Block(body))
    return out


def _groups(lines: list[Line], fonts: Fonts) -> list[list[Line]]:
    alone = len(lines) == 1
    groups: list[list[Line]] = []
    last = None
    for line in lines:
        style = fonts.stands_out(line, alone)
        if groups and style == last:
            groups[-1].append(line)
        else:
            groups.append([line])
        last = style
    return groups


def _heading(group: list[Line], fonts: Fonts, alone: bool) -> Line | None:
    if len(group) > _MAX_LINES or not fonts.stands_out(group[0], alone):
        return None
    text = " ".join(line.text.strip() for line in group)
    if not reads_as_heading(text):
        return None
    return Line("## " + text, union([line.box for line in group]), group[0].size, group[0].bold)
