"""Sentence boundaries with exact character offsets, for the chunker's fallback split.

The study split sentences with ``[^.!?]*[.!?]*\\s*``, which cuts at every period and so
destroys answers that contain "4.6B", "13.06%", "e.g.", "Fig. 3", "v1.2.3" or "J. Smith".
This module uses a small rule set instead and never rewrites the text: the spans it
returns cover the input contiguously, so ``text[a:b]`` of every span is the original.

Rules: a sentence ends after a run of terminators (``.``, ``!``, ``?``, ``…``) plus any
closing quotes, brackets or Markdown emphasis marks, **when whitespace follows** (so a
period inside "4.6B", "13.06%" or "v1.2.3" is never a candidate). A candidate that ends
in a plain period is rejected when

1. the token before it is a known abbreviation ("e.g", "Fig", "et al", "vs", ...) or a
   dotted initialism ("U.S", "a.k.a");
2. the token before it is a single letter (an initial: "J. Smith");
3. the token before it is a number alone at the start of its line (a list marker "1.");
4. the next non-space character is lowercase or a digit ("approx. three", "No. 5"), which
   a new sentence does not start with.

Rule 4 also applies after "!", "?" and an ellipsis ("Wait... what"). Missing a boundary
only makes a sentence longer (the chunker then falls back to line breaks), whereas a false
boundary can cut an answer in half, so every rule errs on the side of not splitting.
"""
from __future__ import annotations

import re
from collections.abc import Callable

# Terminators, then closers (quotes, brackets, emphasis), then the whitespace that
# must follow for the candidate to count at all.
# A candidate starts only where a run of terminators starts: tried from inside the run, it
# rescanned the rest of the run at every dot, quadratic in a line of dots. The
# matches are the same (a match from inside a run is one from its start, made longer).
_CANDIDATE = re.compile(r"(?<![.!?\u2026])(?:[.!?]|\u2026)+[\"'\u201d\u2019\u00bb)\]}*_]*(\s+)")

# Lower-cased tokens that end in a period without ending a sentence.
ABBREVIATIONS = frozenset(
    """
    al approx art c ca cf ch chap co corp dept dr e.g eq eqs est etc ex fig figs i.e
    inc incl jr lem ltd mr mrs ms no nos p pp prof prop ref refs resp sec sect sr st
    tab thm viz vol vols vs
    """.split()
)

_DOTTED_INITIALISM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
_OPENERS = "([{\"'\u201c\u2018*_"


def sentence_spans(text: str, progress: Callable[[int], None] | None = None) -> list[tuple[int, int]]:
    """Split ``text`` into sentences with exact offsets.

    Args:
        text: any text; it is not normalised in any way.
        progress: called with each candidate's offset; it may raise to stop the split (a
            time limit: pipeline.chunk.Progress).

    Returns:
        ``(start, end)`` pairs that cover ``text`` contiguously, in order, each non-empty.
        A span keeps its trailing whitespace, so the next one starts at a non-space
        character (or at the end of a leading run of whitespace for the first one).
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _CANDIDATE.finditer(text):
        if progress is not None:
            progress(match.start())
        end = match.end()
        if end < len(text) and _is_boundary(text, match):
            spans.append((start, end))
            start = end
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _is_boundary(text: str, match: re.Match[str]) -> bool:
    """Decide whether a terminator candidate really ends a sentence (rules in module doc)."""
    following = text[match.end()]
    if following.islower() or following.isdigit():
        return False
    terminators = match.group(0).rstrip().rstrip("\"'\u201d\u2019\u00bb)]}*_")
    if terminators != ".":
        return True
    return not _is_abbreviation(text, match.start())


def _is_abbreviation(text: str, period: int) -> bool:
    """True when the token ending at ``period`` makes that period part of a word.

    Args:
        text: the whole text.
        period: offset of the period.

    Returns:
        Whether the token is an abbreviation, an initial or a list marker.
    """
    # Only the token and the blanks before it are looked at, never the line up to them:
    # copying the line's prefix per candidate was quadratic in a long line.
    token_start = period
    while token_start > 0 and not text[token_start - 1].isspace():  # a newline is space too
        token_start -= 1
    token = text[token_start:period].lstrip(_OPENERS)
    if token.lower() in ABBREVIATIONS or _DOTTED_INITIALISM.fullmatch(token):
        return True
    if len(token) == 1 and token.isalpha():
        return True
    return token.isdigit() and _starts_its_line(text, token_start)


def _starts_its_line(text: str, at: int) -> bool:
    """Whether only blanks lie between the line's start and ``at`` (a list marker "1.")."""
    while at > 0 and text[at - 1] != "\n" and text[at - 1].isspace():
        at -= 1
    return at == 0 or text[at - 1] == "\n"
