"""The canonical document and its chunks: the values that flow through the pipeline."""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

from citeline.schemas.locator import Locator, locator_from_dict

# How every table extractor (sheets, CSV, DOCX/HTML/PPTX tables) writes a row's cells in the
# canonical text, so the query side can tell a table chunk without knowing its format.
CELL_SEPARATOR = " | "


def tabular(content: str) -> bool:
    """Whether more than half of ``content``'s lines from its first table row on, and at
    least two, are table rows (cells :data:`CELL_SEPARATOR` apart): one line with a bar is
    a formula's ``p(y | x)``. Lines before the first row are a table's title block
    ("3.4 Reconciliation …", "In millions of CHF"), repeated above each block.

    Whatever the format (a sheet, a CSV, a DOCX/HTML/PPTX or Markdown table), so the
    query side can treat table chunks as tables: their vectors sit farther from the
    questions they answer, and tables of one shape sit close to each other whatever
    their values (query/calibrate.py).

    >>> tabular("service | port | protocol\\nssh | 22 | tcp\\nhttp | 80 | tcp"), tabular("Ports in use:\\nssh | 22 | tcp\\nand nothing else.")
    (True, False)
    >>> tabular("The log likelihood:\\n$$-log p(y | X) = y K y / 2$$")
    False
    >>> tabular("3.4 Reconciliation of trading operating profit\\nIn millions of CHF\\n| 30 06 2023 | 30 06 2022\\nTrading operating profit | 7,351 | 6,684")
    True
    """
    lines = [line for line in content.splitlines() if line.strip()]
    first = next((k for k, line in enumerate(lines) if CELL_SEPARATOR in line), len(lines))
    lines = lines[first:]
    rows = sum(CELL_SEPARATOR in line for line in lines)
    return rows >= 2 and 2 * rows > len(lines)


# A source must say something: fewer words than this (a label, "AND", a bare URL, a page number, a
# table-of-contents line) is close to any question only because it says almost nothing.
MIN_SOURCE_WORDS = 3
_URL = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.)\S+", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]{2,}")
# Scripts written without spaces: each character is counted as a word.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
# In a table row a figure is what the row says ("200.01 | 1"); in prose a lone number is a page number.
_FIGURE = re.compile(r"\d[\d,.'’]*")


def carries_content(text: str) -> bool:
    r"""Whether a passage says enough to stand alone, as a chunk or a source: at least
    :data:`MIN_SOURCE_WORDS` words once links are set aside, a table row's figures counted as words.

    The chunker joins a passage that does not to its neighbour (pipeline/chunk.py), and the
    query side never makes one a source on its own (query/refuse.py): one definition for both.

    >>> [carries_content(t) for t in ("AND", "Corporate Overview", "https://www.ril.com/ar2023", "12 . . . . 43", "1\n\nChapter 1.")]
    [False, False, False, False, False]
    >>> [carries_content(t) for t in ("Team | Location | Cups\nBlues | STL | 1", "東京都の人口", "Dropout zeroes units.", "200.01 | 1\n400.01 | 3", "4 | 2 | HTML")]
    [True, True, True, True, True]
    """
    text = _URL.sub(" ", text)
    found = len(_WORD.findall(text)) + len(_UNSPACED.findall(text))
    if found < MIN_SOURCE_WORDS and CELL_SEPARATOR in text:
        found += len(_FIGURE.findall(text))
    return found >= MIN_SOURCE_WORDS


@dataclass(frozen=True)
class Segment:
    """One entry of the locator map: canonical text [start, end) comes from ``locator``."""

    start: int
    end: int
    locator: Locator


@dataclass(frozen=True)
class Canonical:
    """One document as a single canonical text plus the map back to its source.

    ``segments`` cover the text in order; a text-only document has none, and its
    locator is the character range itself.
    """

    text: str
    title: str
    extractor: str
    extractor_version: str
    segments: tuple[Segment, ...] = ()
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        last = 0
        for seg in self.segments:
            if not (last <= seg.start <= seg.end <= len(self.text)):
                raise ValueError(
                    f"segment [{seg.start}, {seg.end}) is out of order or outside the text "
                    f"(length {len(self.text)})"
                )
            last = seg.end

    def segments_json(self) -> str:
        return segments_to_json(self.segments)


def segments_to_json(segments: tuple[Segment, ...]) -> str:
    return json.dumps(
        [{"start": s.start, "end": s.end, "locator": asdict(s.locator)} for s in segments]
    )


def segments_from_json(raw: str) -> tuple[Segment, ...]:
    return tuple(
        Segment(item["start"], item["end"], locator_from_dict(item["locator"]))
        for item in json.loads(raw or "[]")
    )


@dataclass(frozen=True)
class Chunk:
    """A slice of one canonical text.

    ``content`` is exactly ``canonical.text[start:end]`` and is what gets quoted;
    ``text`` is what gets embedded (it may carry a ``[Title > Section]`` header).
    """

    doc_id: str
    ordinal: int
    start: int
    end: int
    section: str
    content: str
    text: str

    def __post_init__(self) -> None:
        if not (0 <= self.start < self.end):
            raise ValueError(f"chunk range [{self.start}, {self.end}) is empty or negative")
        if len(self.content) != self.end - self.start:
            raise ValueError(
                f"chunk content has {len(self.content)} characters but its range "
                f"[{self.start}, {self.end}) spans {self.end - self.start}"
            )

