"""Issue 32: every byte a document contributes is parsed in bounded time and memory.

Each test shows the growth with two small inputs (see tests/fixtures/growth.py) and failed on
the code before its fix.
"""
from __future__ import annotations

import growth

from citeline import extractors
from citeline.extractors import html, text


def _sniff_many(head: bytes, times: int = 10) -> None:
    for _ in range(times):
        extractors.for_bytes(head, "notes.md")


def test_the_html_sniff_is_linear_in_a_run_of_empty_comments():
    # Before: each extra '<!---->' doubled the time (16 comments: 10 ms, 40: never ends),
    # and the sniff runs on every file in the flow's own process.
    small, large = (b"<!---->" * k + b"\nplain notes\n" for k in (8, 16))
    assert extractors.for_bytes(large, "notes.md") is text
    assert growth.ratio(_sniff_many, small, large) < 8  # was ~250 (2 ** 8)


def test_the_html_sniff_still_reads_comments_and_a_bom_before_the_tag():
    assert html.claims(b"\xef\xbb\xbf\n<!-- generated -->\n<!---->\n<!DOCTYPE html><html>")
    assert html.claims(b"<HTML lang=en>")
    assert not html.claims(b"<!-- never closed <html>")
    assert not html.claims(b"<!-- a --> text <html>")
    assert not html.claims(b"<htmlx>")
