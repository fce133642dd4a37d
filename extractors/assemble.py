"""Canonical text built piece by piece, each piece's segment recorded as it is appended."""
from __future__ import annotations

from citeline.schemas.document import Segment
from citeline.schemas.locator import Locator


class Assembler:
    """Offsets come from the text as it grows, never from adding up lengths afterwards.

    >>> a = Assembler(); a.add("one", None); a.add("two", None); (a.text, a.segments[1].start)
    ('one\\n\\ntwo', 5)
    """

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._segments: list[Segment] = []
        self._offset = 0

    def add(self, text: str, locator: Locator, sep: str = "\n\n") -> None:
        """Append ``text`` (after ``sep`` unless it is the first piece) located at ``locator``."""
        if self._pieces and sep:
            self._pieces.append(sep)
            self._offset += len(sep)
        self._pieces.append(text)
        self._segments.append(Segment(self._offset, self._offset + len(text), locator))
        self._offset += len(text)

    def __bool__(self) -> bool:
        return bool(self._pieces)

    @property
    def text(self) -> str:
        return "".join(self._pieces)

    @property
    def segments(self) -> tuple[Segment, ...]:
        return tuple(self._segments)
