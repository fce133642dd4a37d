"""How often the line `ask` shows under a source holds the answer (terminal).

    .venv/bin/python bench/highlight_lines.py CORPUS --db DB [--index]

For each ground-truth question of CORPUS (the dev corpus format: ground_truth.jsonl with a
``needle`` sentence per question, in two phrasings, ``course`` and ``ticket``), ``ask`` runs with its
defaults; where a source quotes the needle, the line query/highlight.py picks is compared with it
(hit: they overlap), and so is what `ask` showed before, the quote's first 100 characters. Printed
per phrasing: sources holding the needle, hits of the highlight, hits of the first 100 characters.
``--index`` indexes CORPUS/docs into DB first (the real model).
``--smoke`` (tests/flows/test_bench_smoke.py): bench/smokekit.py's tiny corpus and index on the fake embedder.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from citeline.query.highlight import best_line


def squeeze(text: str) -> tuple[str, list[int]]:
    """``text`` with runs of whitespace as one space, and each kept character's offset in ``text``."""
    out, where, space = [], [], False
    for at, ch in enumerate(text):
        if ch.isspace():
            if not space and out:
                out.append(" ")
                where.append(at)
            space = True
            continue
        out.append(ch)
        where.append(at)
        space = False
    return "".join(out), where


def needle_span(quote: str, needle: str) -> tuple[int, int] | None:
    flat, where = squeeze(quote)
    found = flat.find(squeeze(needle)[0][:60])  # the needle's start: a chunk may end inside it
    if found < 0:
        return None
    end = min(found + len(squeeze(needle)[0]), len(where)) - 1
    return where[found], where[end] + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="?")
    parser.add_argument("--db")
    parser.add_argument("--index", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            args.db, args.corpus = smokekit.tiny_index(), smokekit.tiny_corpus()
            measure(args.corpus, args.db)
        return
    if args.corpus is None or args.db is None:
        parser.error("CORPUS and --db are required (or --smoke)")
    if args.index:
        subprocess.run([sys.executable, "-m", "citeline", "index", str(args.corpus / "docs"), "--db", args.db,
                        "--no-progress"], check=False)
    measure(args.corpus, args.db)


def measure(corpus: Path, db: str) -> None:
    from citeline.library import Index

    index = Index.open(db)
    truth = [json.loads(line) for line in (corpus / "ground_truth.jsonl").read_text().splitlines() if line.strip()]
    for phrasing in ("course", "ticket"):
        sourced = highlighted = first = 0
        for q in truth:
            answer = index.ask(q[phrasing])
            for c in answer.citations:
                span = needle_span(c.quote, q["needle"]) if c.path.endswith(q["doc"]) else None
                if span is None:
                    continue
                sourced += 1
                start, end = best_line(q[phrasing], c.quote)
                highlighted += start < span[1] and span[0] < end
                first += span[0] < len(re.sub(r"\s+", " ", c.quote[:100]))
                break
        print(f"{phrasing}: {len(truth)} questions, the needle quoted by a source in {sourced}; the highlighted "
              f"line holds it in {highlighted}, the first 100 characters in {first}")


if __name__ == "__main__":
    main()
