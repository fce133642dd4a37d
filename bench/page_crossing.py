"""How often a chunk crosses a PDF page boundary, and which page holds its needle (issue 31, item 6).

Renders every dev document as the evaluation renders it (``evaluation.render``: every other one in
two columns, running header, page numbers), extracts it with the product's PDF extractor, chunks it
with strategy E, and for each chunk that cites more than one page counts how much of it lies on
each page. For every needle found in such a chunk it says on which page the needle starts, whether
that is the chunk's first page, and whether it is the page holding most of the chunk: the page a
``#page=`` fragment should open. No model, no index: extraction and chunking only.

    .venv/bin/python bench/page_crossing.py [--corpus ../shared/corpora/dev] [--strategy E] [--smoke]

``--smoke`` (tests/flows/test_bench_smoke.py): the tiny corpus of bench/smokekit.py (three documents).
"""
from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

from citeline.evaluation.match import contains
from citeline.evaluation.render import render_document
from citeline.extractors import pdf
from citeline.pipeline.chunk import chunk_document
from citeline.pipeline.locate import locators_for
from citeline.schemas.locator import Page


def page_shares(start: int, end: int, segments) -> Counter:
    """Characters of [start, end) on each page."""
    shares: Counter = Counter()
    for seg in segments:
        if isinstance(seg.locator, Page) and seg.start < end and start < seg.end:
            shares[seg.locator.page] += min(end, seg.end) - max(start, seg.start)
    return shares


def needle_span(canonical, chunk, needle: str) -> tuple[int, int]:
    """Where the needle lies in the chunk, to 4 characters: the latest start and the earliest end
    that still hold it by the needle rule (which normalises spacing and case)."""
    text, start, end = canonical.text, chunk.start, chunk.end
    while start + 4 <= end and contains(needle, text[start + 4:end]):
        start += 4
    while end - 4 >= start and contains(needle, text[start:end - 4]):
        end -= 4
    return start, end


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="../shared/corpora/dev")
    parser.add_argument("--strategy", default="E")
    parser.add_argument("--smoke", action="store_true", help="three documents (bench/smokekit.py)")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        args.corpus = smokekit.tiny_corpus()
    corpus = Path(args.corpus)
    needles = [json.loads(line) for line in (corpus / "ground_truth.jsonl").read_text().splitlines() if line.strip()]
    chunks_total = crossing = 0
    found = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(sorted((corpus / "docs").glob("*.md"))):
            rendered = render_document("pdf", path.name, path.read_text(encoding="utf-8"), Path(tmp), index=i)
            data = rendered.path.read_bytes()
            canonical = pdf.extract(data, rendered.path.name)
            chunks = chunk_document(canonical.text, canonical.title, "d", args.strategy)
            chunks_total += len(chunks)
            for chunk in chunks:
                pages = [loc.page for loc in locators_for(chunk.start, chunk.end, canonical.segments)
                         if isinstance(loc, Page)]
                if len(set(pages)) < 2:
                    continue
                crossing += 1
                shares = page_shares(chunk.start, chunk.end, canonical.segments)
                most = max(shares, key=lambda p: (shares[p], -p))
                for item in needles:
                    if item["doc"] != path.name or not contains(item["needle"], chunk.content):
                        continue
                    held = page_shares(*needle_span(canonical, chunk, item["needle"]), canonical.segments)
                    best = max(held, key=lambda p: (held[p], -p))
                    found["needles in crossing chunks"] += 1
                    found["needle mostly on the chunk's first page"] += best == min(pages)
                    found["needle mostly on the page holding most of the chunk"] += best == most
                    found["needle starts on the chunk's first page"] += min(held) == min(pages)
                    print(f"{item['id']} {path.name}: chunk chars per page {sorted(shares.items())}, "
                          f"needle chars per page {sorted(held.items())}")
    print(f"chunks {chunks_total}, crossing a page boundary {crossing} ({crossing / max(chunks_total, 1):.1%})")
    for key, value in found.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
