"""Text cleaning shared by the binary extractors, and their per-document time limit.

Cleaning runs on each page's (sheet's, transcript's) text BEFORE it is appended to the
canonical text, so segment offsets always index cleaned text and are never rebuilt.

>>> clean("The ﬁrst infor-\\nmation\\x07 arrives.")
'The first information arrives.'
"""
from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Collection

from citeline.schemas.errors import Timeout

# Latin ligatures U+FB00–FB06 (ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ): NFKC applies to these codepoints only, so
# no other character changes and no offset bookkeeping is needed.
_LIGATURES = {chr(c): unicodedata.normalize("NFKC", chr(c)) for c in range(0xFB00, 0xFB07)}
_LIGATURE_RE = re.compile("[\ufb00-\ufb06]")
# Unicode "Cc" other than tab and newline, plus invisible format characters that break
# search (zero-width space/joiners, word joiner, BOM). Soft hyphens are handled below.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200d\u2060\ufeff]")
# A word broken at a line end: "infor-\nmation". Hyphen-minus, soft hyphen or U+2010.
_BROKEN = re.compile(r"(\w+)[-\u00ad\u2010][ \t]*\n[ \t]*([a-z\u00df-\u00ff][\w-]*)")
# The same break in a word set in capitals ("ELE-\nMENT", "OP-\nTIONAL"): both halves are
# upper case, so a capitalised name after a hyphen ("Smith-\nJones") stays as it is.
_BROKEN_UPPER = re.compile(r"\b([A-Z]{2,})[-\u00ad\u2010][ \t]*\n[ \t]*([A-Z][A-Z-]*)\b")
_SOFT_HYPHEN = "\u00ad"
# Prefixes that normally keep their hyphen ("self-\nevident" -> "self-evident").
_KEEP_HYPHEN = frozenset({"self", "well", "ill", "all", "ex", "half", "cross", "non", "so"})


def fix_ligatures(text: str) -> str:
    """Expand Latin ligature codepoints (ﬁ → fi) and nothing else."""
    return _LIGATURE_RE.sub(lambda m: _LIGATURES[m.group()], text)


def dehyphenate(text: str, vocabulary: Collection[str] | None = None) -> str:
    """Rejoin words hyphenated at line ends.

    The hyphen is dropped ("infor-\\nmation" → "information") unless the word reads as a
    compound: either part holds a hyphen itself ("state-\\nof-the-art", "text-to-\\nimage"), the first
    part is a prefix that keeps its hyphen ("self-\\nevident"), or ``vocabulary`` (lower
    case) knows the hyphenated form but not the joined one.

    >>> dehyphenate("infor-\\nmation and state-\\nof-the-art")
    'information and state-of-the-art'
    >>> dehyphenate("an ELE-\\nMENT marked OP-\\nTIONAL")
    'an ELEMENT marked OPTIONAL'
    """

    def join(m: re.Match) -> str:
        head, tail = m.group(1), m.group(2)
        joined, hyphened = head + tail, f"{head}-{tail}"
        # The word before the break holds a hyphen already ("text-to-\nimage"): typesetters do
        # not hyphenate such a compound, so the line ends at one of its own hyphens.
        compound = m.start() > 0 and m.string[m.start() - 1] in "-\u2010"
        if compound or "-" in tail or head.lower() in _KEEP_HYPHEN:
            return hyphened
        if vocabulary is not None:
            lowered = joined.lower()
            if lowered not in vocabulary and hyphened.lower() in vocabulary:
                return hyphened
        return joined

    return _BROKEN_UPPER.sub(join, _BROKEN.sub(join, text))


def clean(text: str, vocabulary: Collection[str] | None = None) -> str:
    """The cleaned form of extracted text.

    One newline convention, NFC, ligatures expanded, control characters other than tab
    and newline removed, line-end hyphenation rejoined, trailing spaces and runs of
    blank lines collapsed, no leading or trailing blank lines.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00a0", " ")
    text = unicodedata.normalize("NFC", fix_ligatures(text))
    text = _CONTROL.sub("", text)
    text = dehyphenate(text, vocabulary).replace(_SOFT_HYPHEN, "")
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n").rstrip()


class Deadline:
    """A per-document time limit, checked between pages, sheets and transcript segments
    (and by pipeline.prepare between stages and between embedding groups).

    >>> Deadline(60).check("page 1")
    """

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.at = None if not seconds else self.started + seconds

    def renew(self) -> None:
        """Start the limit again from now: work that makes progress (a group of chunks embedded)
        earns another full limit for its next step (pipeline/prepare.py ``encode_groups``)."""
        if self.seconds:
            self.started = time.monotonic()
            self.at = self.started + self.seconds

    def left(self) -> float | None:
        return None if self.at is None else max(0.0, self.at - time.monotonic())

    def check(self, where: str) -> None:
        """Raises:
            Timeout: the limit has passed (``where`` says how far extraction got).
        """
        if self.at is not None and time.monotonic() > self.at:
            raise Timeout(f"the document took longer than its {self.seconds:.3g} s limit (--timeout); "
                          f"stopped at {where}")
