"""A sentence typed verbatim from a document: which retriever puts its chunk first?

    .venv/bin/python bench/phrase_probes.py DB [DB ...] [--per-document 4] [--seed 0] [--json OUT]
    .venv/bin/python bench/phrase_probes.py --smoke   # the tiny corpus on the fake embedder (bench/smokekit.py)

Each DB is an index already built (``citeline index FOLDER --db DB``). From every indexed
document's canonical text it draws up to ``--per-document`` sentences of 8–40 words (seeded,
so the same index gives the same probes) that lie wholly inside one chunk, asks each one as it
stands with every retriever (``Index.search``, k 5) and counts where the first chunk holding it
(its own, or a copy in another file) lands: first, or in the top 5. Prints a table per index and over all, the CPU and the load.
The retriever that finds the most first is what ``search`` should default to.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
from collections import Counter

from citeline.runtime import env

env.apply()

from citeline.library import Index  # noqa: E402
from citeline.pipeline.sentences import sentence_spans  # noqa: E402
from citeline.schemas.retrieval import RETRIEVERS  # noqa: E402

TOP = 5
WORDS = (8, 40)


def probes(index: Index, per_document: int, seed: int) -> list[tuple[str, str, str]]:
    """(path, sentence, chunk id holding it) for sentences wholly inside one chunk of their document."""
    rng = random.Random(seed)
    out = []
    for doc in index.documents():
        if doc.failed or not doc.chunk_count:
            continue
        text = index.canonical(doc.document_id)
        chunks = index.chunks(doc.document_id)
        inside = []
        for a, b in sentence_spans(text):
            raw = text[a:b]
            sentence = " ".join(raw.split())
            if not WORDS[0] <= len(sentence.split()) <= WORDS[1] or raw.strip() != sentence:
                continue  # a sentence over line breaks is not what a person types
            a, b = a + len(raw) - len(raw.lstrip()), a + len(raw.rstrip())
            home = next((c.chunk_id for c in chunks if c.start <= a and b <= c.end), None)
            if home is not None:
                inside.append((doc.path, sentence, home))
        out.extend(rng.sample(inside, min(per_document, len(inside))))
    return out


def ranks(index: Index, items, retrievers) -> dict[str, list[int | None]]:
    """Per retriever, the rank of the first result holding the sentence: its own chunk, or a copy of it
    (the same text saved as .docx and .pdf, a repeated boilerplate line) — either is the right answer."""
    found: dict[str, list[int | None]] = {r: [] for r in retrievers}
    for _, sentence, _home in items:
        for retriever in retrievers:
            quotes = [" ".join(c.quote.split()) for c in index.search(sentence, TOP, retriever)]
            found[retriever].append(next((i for i, q in enumerate(quotes, 1) if sentence in q), None))
    return found


def table(found: dict[str, list[int | None]]) -> list[str]:
    lines = ["| retriever | first | top 5 | probes |", "|---|---:|---:|---:|"]
    for retriever, values in found.items():
        count = Counter(v is not None and v == 1 for v in values)
        top = sum(v is not None for v in values)
        lines.append(f"| {retriever} | {count[True]} | {top} | {len(values)} |")
    return lines


def cpu() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")),
                platform.processor())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dbs", nargs="*")
    parser.add_argument("--per-document", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--smoke", action="store_true", help="a tiny fake-embedder index, one probe a document")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            args.dbs, args.per_document = [smokekit.tiny_index()], 1
            probe_all(args)
    elif args.dbs:
        probe_all(args)
    else:
        parser.error("give at least one DB")


def probe_all(args) -> None:
    print(f"{cpu()}, {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}")
    total: dict[str, list[int | None]] = {r: [] for r in RETRIEVERS}
    results = {}
    for db in args.dbs:
        index = Index.open(db)
        items = probes(index, args.per_document, args.seed)
        found = ranks(index, items, RETRIEVERS)
        results[db] = {"probes": [list(p) for p in items], "ranks": found}
        for r in RETRIEVERS:
            total[r].extend(found[r])
        print(f"\n{db}: {len(items)} probes")
        print("\n".join(table(found)))
    if len(args.dbs) > 1:
        print("\nall indexes")
        print("\n".join(table(total)))
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
