"""Helpers for the extractor tests: where a phrase lies in a canonical text, and the
invariant every canonical text must keep (generated files come from testkit's ``make``)."""
from __future__ import annotations

import re

import pytest

from citeline.schemas.document import Canonical

def find(canonical: Canonical, phrase: str) -> tuple[int, int]:
    """Where ``phrase`` occurs in the canonical text, any run of whitespace matching any
    other (a phrase may wrap onto the next line)."""
    pattern = r"\s+".join(re.escape(word) for word in phrase.split())
    match = re.search(pattern, canonical.text)
    assert match, f"{phrase!r} not found in:\n{canonical.text}"
    return match.span()


def locators_of(canonical: Canonical, phrase: str) -> list:
    """The locators of every segment the phrase overlaps."""
    start, end = find(canonical, phrase)
    found = [s.locator for s in canonical.segments if s.start < end and start < s.end]
    assert found, f"{phrase!r} at [{start}, {end}) is in no segment"
    return found


def check_segments(canonical: Canonical) -> None:
    """Segments are in order, inside the text, non-empty, and each one's slice is a
    clean piece of text (no stray whitespace at its edges)."""
    last = 0
    for seg in canonical.segments:
        assert last <= seg.start < seg.end <= len(canonical.text)
        piece = canonical.text[seg.start:seg.end]
        assert piece == piece.strip(), f"segment {seg} has whitespace at its edges: {piece!r}"
        last = seg.end


class _Helpers:
    find = staticmethod(find)
    locators_of = staticmethod(locators_of)
    check_segments = staticmethod(check_segments)


@pytest.fixture(scope="session")
def h():
    """The helpers above (test modules can't import conftest under importlib mode)."""
    return _Helpers
