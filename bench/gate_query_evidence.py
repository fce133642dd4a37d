"""Can a question-level signal tell an answerable user question from an adjacent one? The dev frontier.

The cosine gate reads the nearest chunk's distance. Two other signals a gate could read
per question, from what the index already holds:

- peak: how far the nearest chunk stands out of the question's top 50 (best similarity
  minus their mean; ``z`` divides by their spread; ``s1-s10`` is best minus tenth);
- background: best similarity to the index minus best similarity to the off-topic bank
  that ships with citeline (``vsbank1``; ``vsbank5``: minus the mean of the bank's top 5;
  a bank question is compared with the other bank questions).

For each signal, the threshold is placed *with the corpus's labels* to let 0, 1 and 2 of its
out-of-domain questions through (the frontier: what the signal can do at best), and by the
label-free rule the calibration uses (at most 1 % of 150 bank questions through). A question
counts as answered when it passes and its needle is in the reranked top 4.

    .venv/bin/python bench/gate_query_evidence.py CORPUS_DIR DB
    .venv/bin/python bench/gate_query_evidence.py --smoke

DB is an index of CORPUS_DIR/docs (``citeline index CORPUS/docs --db DB --strategy E``).
Quote the CPU; the numbers do not depend on it.
``--smoke`` (tests/flows/test_bench_smoke.py): the tiny corpus of bench/smokekit.py, indexed with the
tests' fake embedder, in place of CORPUS_DIR and DB: runs, no figure.
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citeline.tasks import env  # noqa: E402

env.apply()

from citeline.evaluation.dataset import load_corpus  # noqa: E402
from citeline.evaluation.metrics import contains_needle  # noqa: E402
from citeline.index.store import Store  # noqa: E402
from citeline.pipeline.embed import get_embedder  # noqa: E402
from citeline.query import calibrate as cal  # noqa: E402
from citeline.query.refuse import MAX_CHUNKS  # noqa: E402
from citeline.query.rerank import TokenCache  # noqa: E402
from citeline.query.search import Searcher  # noqa: E402

SIGNALS = {
    "cosine (today's gate)": lambda r: r["s1"],
    "peak": lambda r: r["s1"] - r["mean50"],
    "z": lambda r: (r["s1"] - r["mean50"]) / max(r["std50"], 1e-6),
    "s1-s10": lambda r: r["s1"] - r["s10"],
    "vsbank1": lambda r: r["s1"] - r["bank1"],
    "vsbank5": lambda r: r["s1"] - r["bank5"],
    "rerank score": lambda r: r["rerank"],
    "cosine + 2 peak": lambda r: r["s1"] + 2 * (r["s1"] - r["mean50"]),
}


def collect(corpus_dir: str, db: str) -> list[dict]:
    store = Store(db)
    stamp = store.require_stamp()
    embedder = get_embedder(stamp.embed_model, "fp32")
    searcher = Searcher(store, embedder, stamp)
    reranker = TokenCache(searcher.default_reranker())
    rows = store.chunk_rows(["chunk_id", "content", "vector"])
    chunks = np.array([r["vector"] for r in rows], dtype=np.float32)
    content = {r["chunk_id"]: r["content"] for r in rows}
    bank = cal.offtopic_questions()
    bank_vectors = embedder.embed_queries(bank)

    def record(kind: str, question: str, needle: str | None = None, own: int | None = None) -> dict:
        vector = np.asarray(searcher.query_vector(question), dtype=np.float32)
        top = np.sort(chunks @ vector)[::-1][:50]
        background = bank_vectors @ vector
        if own is not None:
            background[own] = -1.0
        background = np.sort(background)[::-1]
        hits = searcher.rerank(question, MAX_CHUNKS, reranker=reranker)
        return {"set": kind, "s1": float(top[0]), "mean50": float(top.mean()), "std50": float(top.std()),
                "s10": float(top[9]), "bank1": float(background[0]), "bank5": float(background[:5].mean()),
                "rerank": hits[0].rerank_score if hits else 0.0,
                "found": bool(needle) and any(contains_needle(content[h.chunk_id], needle) for h in hits)}

    corpus = load_corpus(corpus_dir)
    records = [record(q.phrasing, q.text, q.needle) for q in corpus.queries]
    records += [record("ood", o.query) for o in corpus.out_of_domain]
    records += [record("bank", bank[i], own=i) for i in random.Random(cal.SEED).sample(range(len(bank)), 150)]
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("db", nargs="?")
    parser.add_argument("--smoke", action="store_true", help="a tiny corpus on the fake embedder")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            records = collect(str(smokekit.tiny_corpus()), smokekit.tiny_index())
    elif args.db:
        records = collect(args.corpus, args.db)
    else:
        parser.error("give CORPUS_DIR and DB")
    of = {kind: [r for r in records if r["set"] == kind] for kind in ("course", "ticket", "ood", "bank")}
    found = {p: sum(r["found"] for r in of[p]) for p in ("course", "ticket")}
    print(f"needle in the reranked top {MAX_CHUNKS}: course {found['course']}/{len(of['course'])}, "
          f"ticket {found['ticket']}/{len(of['ticket'])}; out-of-domain {len(of['ood'])}")
    print("| signal | frontier at 0 / 1 / 2 bluffs: course, ticket | label-free (bank 1 %): course, ticket, bluffs |")
    print("|---|---|---|")
    for name, signal in SIGNALS.items():
        def answered(threshold: float, signal=signal) -> str:
            return " ".join(str(sum(r["found"] and signal(r) > threshold for r in of[p])) for p in ("course", "ticket"))
        ood = sorted(map(signal, of["ood"]), reverse=True)
        bank = sorted(map(signal, of["bank"]), reverse=True)
        free = bank[int(len(bank) * cal.BLUFF_RATE)]
        bluffs = sum(signal(r) > free for r in of["ood"])
        print(f"| {name} | {' / '.join(answered(ood[b]) for b in (0, 1, 2))} | {answered(free)}, {bluffs} |")


if __name__ == "__main__":
    main()
