"""Map a chunk's character range back to where it lives in the source."""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Sequence

from citeline.schemas.document import Segment
from citeline.schemas.locator import Locator, MimePart, Page


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


def cited_locators(start: int, end: int, segments: Sequence[Segment]) -> list[Locator]:
    """``locators_for``, with the page holding most of a chunk that crosses PDF pages first.

    A citation's ``#page=`` fragment opens the first locator, and its label names the pages from
    the first to the last ("pp. 5–6"). On the evaluation's PDF rendering 52 of 946 chunks cross a
    page; of the 3 needles in them, the page holding most of the chunk held most of the needle for
    2, the first page for 1 (bench/page_crossing.py, retired at 383c5de, docs/eval-formats.md): a chunk whose text is
    mostly on page 6 opens there, not at its last lines on page 5.

    An e-mail's headers come after its other parts: a chunk of headers and body opens the body.

    >>> segs = [Segment(0, 10, Page(5)), Segment(12, 40, Page(6))]
    >>> cited_locators(5, 40, segs), cited_locators(0, 14, segs)
    ([Page(page=6, page_label='', ocr_confidence=None, kind='page'), Page(page=5, page_label='', ocr_confidence=None, kind='page')], [Page(page=5, page_label='', ocr_confidence=None, kind='page'), Page(page=6, page_label='', ocr_confidence=None, kind='page')])
    """
    found = locators_for(start, end, segments)
    if len(found) > 1 and all(isinstance(loc, MimePart) for loc in found):
        # An e-mail's chunk holding its headers and the start of its body opens at the body.
        return [loc for loc in found if loc.part] + [loc for loc in found if not loc.part]
    if len(found) < 2 or not all(isinstance(loc, Page) for loc in found):
        return found
    held = {loc: 0 for loc in found}
    for seg in segments:
        if seg.locator in held and seg.start < end and start < seg.end:
            held[seg.locator] += min(end, seg.end) - max(start, seg.start)
    most = max(found, key=lambda loc: held[loc])  # the first of equals: ties open the earlier page
    return [most, *[loc for loc in found if loc != most]]


def locators_json(locators: Sequence[Locator]) -> str:
    return json.dumps([asdict(loc) for loc in locators])
