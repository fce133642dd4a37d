"""The line of a source that answers: the sentence (prose) or row (a table) of a quote that
shares most of the question's words, so a person reads one line per source, not eight passages.

Lexical on purpose: it needs no model and runs on the quote the citation already carries. Words
are compared by their first five letters (query/words.py ``stems``), each weighted by its length
as a stand-in for rarity ("dropout" says more than "use"). A row of a table is matched with the
header rows above it, since a row's own cells rarely repeat the question's words.
"""
from __future__ import annotations

from citeline.pipeline.sentences import sentence_spans
from citeline.query.words import stems
from citeline.schemas.document import tabular

_CELL = " | "


def best_line(question: str, quote: str) -> tuple[int, int]:
    """``(start, end)`` in ``quote`` of the sentence or table row sharing most of the question's
    words; the first one when none shares any. An empty quote gives ``(0, 0)``.

    >>> quote = "Dropout is a regulariser. It is only active during training, never at test time."
    >>> s, e = best_line("Is dropout active at test time?", quote); quote[s:e]
    'It is only active during training, never at test time.'
    >>> table = "Team | Location | Stanley Cups\\nBlues | STL | 1\\nMaple Leafs | TOR | 13"
    >>> s, e = best_line("How many Stanley Cups have the Maple Leafs won?", table); table[s:e]
    'Maple Leafs | TOR | 13'
    """
    wanted = stems(question)
    spans = _rows(quote) if tabular(quote) else _sentences(quote)
    if not spans:
        return 0, 0
    return max(spans, key=lambda span: (_weight(wanted & stems(quote[span[0]:span[1]])), -span[0]))


def _weight(shared: frozenset[str]) -> int:
    return sum(len(stem) for stem in shared)


def _rows(quote: str) -> list[tuple[int, int]]:
    """Each line holding a cell separator, the first of them (the header) left out when others follow."""
    spans, at = [], 0
    for line in quote.split("\n"):
        if line.strip():
            spans.append((at, at + len(line)))
        at += len(line) + 1
    rows = [s for s in spans if _CELL in quote[s[0]:s[1]]]
    return rows[1:] if len(rows) > 1 else (rows or spans)


def _sentences(quote: str) -> list[tuple[int, int]]:
    spans = []
    for start, end in sentence_spans(quote):
        for part_start, part_end in _lines(quote, start, end):
            spans.append((part_start, part_end))
    return spans


def _lines(quote: str, start: int, end: int) -> list[tuple[int, int]]:
    """A sentence cut at its line breaks where it spans several (a list, a heading and its text)."""
    out, at = [], start
    for line in quote[start:end].split("\n"):
        stripped = line.strip()
        if stripped:
            offset = at + line.index(stripped[0])
            out.append((offset, offset + len(stripped)))
        at += len(line) + 1
    return out
