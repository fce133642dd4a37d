"""When does a chunk contain a needle, once the needle went through another format?

Markdown keeps a needle byte for byte; a PDF may break it over lines with a hyphen,
swap ``fi`` for a ligature or change quotes; OCR and speech recognition change words.
The harness therefore compares *normalised* text, and for speech it accepts a stated
amount of recognition noise:

- ``normalise``: Unicode NFKC (ligatures, full-width forms), curly quotes and dashes
  to ASCII, soft hyphens removed, a hyphen at a line end joined (``ELE-\\nMENT``),
  case folded, runs of whitespace collapsed. Applied to needle and chunk alike,
  including for Markdown, so every format is judged by the same rule.
- ``speech_contains``: both sides reduced to words (letters and digits); the needle is
  found when its words, in order, match at least ``SPEECH_OVERLAP`` (80 %) of the needle's
  words within one stretch of the chunk at most 1.5 times the needle's length
  (difflib's matching blocks), so common words scattered over a long chunk do not add
  up to a match. A needle split over two chunks matches neither, as in the exact rule.
"""
from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable

SPEECH_OVERLAP = 0.8

_ASCII = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-",
    "\u2212": "-", "\u00a0": " ", "\u00ad": None,
})
# A word broken at a line end: joined, unless the part before already holds a hyphen (a
# compound broken at one of its own: "text-to-\nimage"), as the PDF extractor joins it.
_LINE_HYPHEN = re.compile(r"(\w[\w-]*)-[ \t]*\r?\n[ \t]*(\w)")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+")


def normalise(text: str) -> str:
    """Text as the harness compares it.

    >>> normalise("The ELE-\\nMENT is e\ufb03cient \u2014 \u201cquoted\u201d")
    'the element is efficient - "quoted"'
    >>> normalise("a text-to-\\nimage model")
    'a text-to-image model'
    """
    text = unicodedata.normalize("NFKC", text).translate(_ASCII)
    text = _LINE_HYPHEN.sub(_join_line_hyphen, text)
    return _SPACE.sub(" ", text).strip().casefold()


def _join_line_hyphen(match: re.Match) -> str:
    before, after = match.groups()
    return f"{before}-{after}" if "-" in before else before + after


def contains(needle: str, content: str) -> bool:
    """Whether ``content`` holds ``needle`` once both are normalised.

    >>> contains("is   efficient", "It IS\\nef\ufb01cient.")
    True
    """
    return normalise(needle) in normalise(content)


def words(text: str) -> list[str]:
    """The words of ``text``, normalised: what a transcript can be compared on.

    >>> words("Dropout, in 2014: it's 1% of cases!")
    ['dropout', 'in', '2014', 'it', 's', '1', 'of', 'cases']
    """
    return _WORD.findall(normalise(text))


def speech_contains(needle: str, content: str, overlap: float = SPEECH_OVERLAP) -> bool:
    """Whether a transcript chunk says the needle, up to recognition noise.

    >>> speech_contains("Dropout zeroes some activations during training.",
    ...                 "and so drop out zeroes some activations during the training step")
    True
    >>> speech_contains("Dropout zeroes some activations during training.", "batch norm rescales")
    False
    >>> speech_contains("the cat sat on the mat", "the cat " + "ran far " * 20 + "sat on the mat")
    False
    """
    target = words(needle)
    if not target:
        return False
    said = words(content)
    present = set(said)
    if sum(word in present for word in target) < overlap * len(target):
        return False  # cheap test first: no stretch can match more words than the chunk has
    span = max(len(target) * 3 // 2, 1)
    step = max(len(target) // 4, 1)
    for start in range(0, max(len(said) - span, 0) + 1, step):
        matcher = difflib.SequenceMatcher(None, target, said[start:start + span], autojunk=False)
        if sum(b.size for b in matcher.get_matching_blocks()) >= overlap * len(target):
            return True
    return False


def rule_for(fmt: str) -> Callable[[str, str], bool]:
    """The containment rule of a format: word overlap for speech, normalised text otherwise."""
    return speech_contains if fmt == "speech" else contains
