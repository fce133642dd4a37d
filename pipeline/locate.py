"""Map a chunk's character range back to where it lives in the source."""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Sequence

from citeline.schemas.document import Segment
from citeline.schemas.locator import Locator


def locators_for(start: int, end: int, segments: Sequence[Segment]) -> list[Locator]:
    """Locators of every segment that shares a character with [start, end), in order, once each.

    A text-only document has no segments: its locator is the character range itself,
    so an empty list is returned and the citation uses ``#char=start,end``.
    """
    found: list[Locator] = []
    for seg in segments:
        if seg.start < end and start < seg.end and seg.locator not in found:
            found.append(seg.locator)
    return found


def locators_json(locators: Sequence[Locator]) -> str:
    return json.dumps([asdict(loc) for loc in locators])
