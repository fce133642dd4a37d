"""Which evidence separates answerable questions from the rest: the dev frontier of each gate.

For an index of an evaluation corpus, every question of the corpus (both phrasings and the
out-of-domain ones) and the calibration's own samples (pseudo-questions, the off-topic bank)
are reranked as ``ask`` reranks them; each source's evidence (query/answerability.py) is
kept. Then, for single evidence and for the answerability score fitted on the calibration
samples with several feature subsets, it prints:

- the calibrated gate: the threshold chosen by the calibration's rule (no corpus labels)
  and what it answers on the corpus (course / ticket answered honestly, bluffs, refused);
- the frontier: with the threshold placed *by the corpus* to let 0, 1, 2 bluffs through,
  what it would answer. The frontier says what the evidence can do; the calibrated row
  says what the calibration makes of it.

    .venv/bin/python bench/answerability_frontier.py CORPUS_DIR DB [--data cache.json]
    .venv/bin/python bench/answerability_frontier.py --smoke

DB is an index of CORPUS_DIR/docs (e.g. ``citeline index CORPUS/docs --db DB --strategy E``).
Numbers are from the running machine; quote its CPU.
``--smoke`` (tests/flows/test_bench_smoke.py): the tiny corpus of bench/smokekit.py, indexed with the
tests' fake embedder, in place of CORPUS_DIR and DB: runs, no figure.
"""
from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

from citeline.evaluation.dataset import load_corpus
from citeline.evaluation.metrics import contains_needle
from citeline.index.store import Store
from citeline.pipeline.embed import get_embedder
from citeline.query import calibrate as cal
from citeline.query.answerability import Answerability, Evidence, fit, rate_threshold
from citeline.query.refuse import MAX_CHUNKS
from citeline.query.rerank import TokenCache
from citeline.query.search import Searcher
from citeline.query.words import stems

SUBSETS = {"distance": [0], "rerank": [1], "distance+rerank": [0, 1], "distance+rerank+gap": [0, 1, 3],
           "distance+rerank+coverage": [0, 1, 2], "all": [0, 1, 2, 3]}


def collect(corpus_dir: str, db: str) -> list[dict]:
    store = Store(db)
    stamp = store.require_stamp()
    searcher = Searcher(store, get_embedder(stamp.embed_model, "fp32"), stamp)
    reranker = TokenCache(searcher.default_reranker())
    rows = store.chunk_rows(["chunk_id", "content", "doc_id"])
    content = {r["chunk_id"]: r["content"] for r in rows}
    depth = 2 * searcher.rerank_config.depth

    def ranked(question: str) -> list[dict]:
        hits = searcher.rerank(question, depth, reranker=reranker)
        return [{"chunk": h.chunk_id, "doc": h.chunk.doc_id, "d": h.distance, "s": h.rerank_score} for h in hits]

    records = []
    corpus = load_corpus(corpus_dir)
    for q in corpus.queries:
        hits = ranked(q.text)[:MAX_CHUNKS]
        for h in hits:
            h["answer"] = contains_needle(content[h["chunk"]], q.needle)
        records.append({"set": q.phrasing, "q": q.text, "hits": hits})
    for o in corpus.out_of_domain:
        records.append({"set": "ood", "q": o.query, "hits": ranked(o.query)[:MAX_CHUNKS]})
    for question, doc, chunk in cal._asked(rows, cal.SCORED_SAMPLE, cal.SEED):
        hits = ranked(question)
        records.append({"set": "pseudo", "q": question, "source": chunk, "hits": hits[:MAX_CHUNKS],
                        "others": [h for h in hits if h["doc"] != doc][:MAX_CHUNKS]})
    bank = cal.offtopic_questions()
    for question in random.Random(cal.SEED).sample(bank, min(cal.SCORED_BANK, len(bank))):
        records.append({"set": "bank", "q": question, "hits": ranked(question)[:MAX_CHUNKS]})
    for r in records:  # evidence needs the chunk text; keep only numbers in the cache
        words = stems(r["q"])
        for key in ("hits", "others"):
            best = max((h["s"] for h in r.get(key, [])), default=0.0)
            for h in r.get(key, []):
                h["ev"] = [h["d"], h["s"], len(words & stems(content[h["chunk"]])) / max(len(words), 1), best - h["s"]]
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("db", nargs="?")
    parser.add_argument("--data", help="cache of the reranked evidence (JSON): written once, then read")
    parser.add_argument("--smoke", action="store_true", help="a tiny corpus on the fake embedder")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            records = collect(str(smokekit.tiny_corpus()), smokekit.tiny_index())
    elif not args.db:
        parser.error("give CORPUS_DIR and DB")
    elif args.data and Path(args.data).exists():
        records = json.loads(Path(args.data).read_text())
    else:
        records = collect(args.corpus, args.db)
        if args.data:
            Path(args.data).write_text(json.dumps(records))

    def windows(kind: str, key: str = "hits") -> list[list[list[float]]]:
        return [[h["ev"] for h in r[key]] for r in records if r["set"] == kind]

    answered = [h["ev"] for r in records if r["set"] == "pseudo" for h in r["hits"] if h["chunk"] == r["source"]]
    adjacent, bank = windows("pseudo", "others"), windows("bank")
    found = {p: sum(any(h["answer"] for h in r["hits"]) for r in records if r["set"] == p) for p in ("course", "ticket")}
    print(f"needle in the reranked top {MAX_CHUNKS}: course {found['course']}, ticket {found['ticket']}")

    total = {p: sum(r["set"] == p for r in records) for p in ("course", "ticket", "ood")}

    def outcome(passes) -> tuple[int, int, int]:
        """(course answered, ticket answered, bluffs) when a source passes by ``passes(evidence)``."""
        got = [sum(any(passes(h["ev"]) and h["answer"] for h in r["hits"]) for r in records if r["set"] == p)
               for p in ("course", "ticket")]
        return (*got, sum(any(passes(h["ev"]) for h in r["hits"]) for r in records if r["set"] == "ood"))

    print(f"| gate | weights (distance, rerank, coverage, gap) | calibrated: course/{total['course']}, "
          f"ticket/{total['ticket']}, bluffs/{total['ood']} | frontier at 0 / 1 / 2 bluffs: course, ticket |")
    print("|---|---|---|---|")
    for name, keep in SUBSETS.items():
        def masked(v, keep=keep):
            return Evidence(*[v[i] if i in keep else 0.0 for i in range(4)])
        weights, bias = fit([masked(v) for v in answered], [masked(v) for w in adjacent + bank for v in w])
        model = Answerability(weights, bias, 0.0)

        def score(v, model=model, masked=masked):
            return model.score(masked(v))

        def best(ws, score=score):
            return [max(map(score, w)) for w in ws if w]

        threshold = max(rate_threshold(best(bank), cal.BLUFF_RATE), rate_threshold(best(adjacent), cal.ADJACENT_RATE))
        ood = sorted(best([[h["ev"] for h in r["hits"]] for r in records if r["set"] == "ood"]), reverse=True)
        frontier = " / ".join("{} {}".format(*outcome(lambda v, t=ood[b], score=score: score(v) > t)[:2])
                              for b in (0, 1, 2))
        calibrated = outcome(lambda v, score=score: score(v) > threshold)
        shown = ", ".join(f"{w:+.1f}" for w in weights[:4])
        print(f"| {name} | {shown} | {calibrated[0]}, {calibrated[1]}, {calibrated[2]} | {frontier} |")


if __name__ == "__main__":
    main()
