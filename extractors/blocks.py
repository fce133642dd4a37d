"""Canonical text of structured documents (Word, HTML, slides, sheets, delimited tables) built
block by block: headings as ``## `` lines the chunker splits sections at, tables as the blocks
extractors.tables lays out, one segment per run of blocks that share a locator."""
from __future__ import annotations

from citeline.schemas.document import Segment
from citeline.schemas.errors import TooLarge
from citeline.schemas.grid import Block
from citeline.schemas.locator import Locator
from citeline.schemas.options import ExtractOptions

from citeline.extractors.clean import clean


class Writer:
    """Appends blocks and records their segments as the text grows; a block whose locator
    equals the previous one's extends that segment instead of adding one.

    >>> w = Writer(); w.add("## Intro", "a"); w.add("Body.", "a"); w.add("Next", "b")
    >>> w.text, [(s.start, s.end, s.locator) for s in w.segments]
    ('## Intro\\n\\nBody.\\n\\nNext', [(0, 15, 'a'), (17, 21, 'b')])
    """

    def __init__(self, limit: int | None = None) -> None:
        self._pieces: list[str] = []
        self._segments: list[Segment] = []
        self._offset = 0
        self._limit = limit

    def add(self, text: str, locator: Locator | None, sep: str = "\n\n") -> None:
        """Append ``text`` (after ``sep`` unless it is the first block); blank text is skipped.
        A ``None`` locator (a sheet's heading) adds text without a segment."""
        if not text.strip():
            return
        start = self._append(text, sep)
        if locator is not None:
            self._extend(Segment(start, self._offset, locator))

    def add_block(self, block: Block, sep: str = "\n\n") -> None:
        """Append a table block (extractors.tables) with its own segments, shifted to where it lands."""
        if not block.text.strip():
            return
        start = self._append(block.text, sep)
        for seg in block.segments:
            self._extend(Segment(start + seg.start, start + seg.end, seg.locator))

    def _append(self, text: str, sep: str) -> int:
        if self._pieces:
            self._pieces.append(sep)
            self._offset += len(sep)
        start = self._offset
        self._pieces.append(text)
        self._offset += len(text)
        if self._limit is not None and self._offset > self._limit:
            # Checked as the text grows, so a workbook that would render to gigabytes fails
            # at the bound instead of after building it.
            raise amplified(self._limit)
        return start

    def _extend(self, seg: Segment) -> None:
        last = self._segments[-1] if self._segments else None
        if last is not None and last.locator == seg.locator:
            self._segments[-1] = Segment(last.start, seg.end, seg.locator)
        else:
            self._segments.append(seg)

    @property
    def text(self) -> str:
        return "".join(self._pieces)

    @property
    def segments(self) -> tuple[Segment, ...]:
        return tuple(self._segments)


def amplified(limit: int) -> TooLarge:
    """The failure of a document whose canonical text passed ``limit`` (:func:`text_limit`)."""
    return TooLarge(f"the canonical text passed {limit:,} characters (max_text_chars, max_text_ratio): "
                    "refused as an amplification")


def text_limit(options: ExtractOptions, size: int) -> int:
    """The most characters a canonical text of a ``size``-byte file may have: a multiple of
    the file's size (never under a floor, so small files are not judged by their size),
    within an absolute cap.

    >>> text_limit(ExtractOptions(), 1000) == ExtractOptions().min_text_chars
    True
    """
    bound = max(options.min_text_chars, int(options.max_text_ratio * size))
    return min(options.max_text_chars, bound)


def one_line(text: str) -> str:
    """A cell or heading on one line: cleaned, inner line breaks and runs of spaces as one space.

    >>> one_line("  two\\nlines\\x07  here ")
    'two lines here'
    """
    return " ".join(clean(text).split())
