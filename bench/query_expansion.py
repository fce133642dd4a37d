"""Query expansion from the index's own vocabulary: does it bring a user's question to the book's words?

Issue 16 names the lever: a ticket-phrased question ("my net memorises the training set")
shares few words with the passage that answers it ("overfitting", "regularisation"). Here
the index's vocabulary — content words of its chunks that occur in at least two chunks and
in at most 5 % of them (words that say something, not noise or glue) — is embedded once,
word by word, with the index's model. A question is expanded by appending the ``m`` words
nearest to it (cosine to the question's embedding) that it does not already hold, and the
expanded text goes through the default retriever (MaxSim over the union of the dense and
BM25 top 50) exactly like the original.

Measured per phrasing: the needle in the top 4 (the most ``ask`` can answer with), R@20,
MRR, and the paired sign test against the original question (top-4 hits and reciprocal
ranks). The settings (df ≥ 2, ≤ 5 %, m = 3 and 5) were fixed before the run.

    .venv/bin/python bench/query_expansion.py CORPUS_DIR DB
    .venv/bin/python bench/query_expansion.py --smoke

DB is an index of CORPUS_DIR/docs (``citeline index CORPUS/docs --db DB``). Quote the CPU.
``--smoke`` (tests/flows/test_bench_smoke.py): the tiny corpus of bench/smokekit.py, indexed with the
tests' fake embedder, in place of CORPUS_DIR and DB: runs, no figure.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citeline.tasks import env  # noqa: E402

env.apply()

from citeline.evaluation.dataset import load_corpus  # noqa: E402
from citeline.evaluation.metrics import contains_needle  # noqa: E402
from citeline.evaluation.stats import paired  # noqa: E402
from citeline.index.store import Store  # noqa: E402
from citeline.pipeline.embed import get_embedder  # noqa: E402
from citeline.query.rerank import TokenCache  # noqa: E402
from citeline.query.search import Searcher  # noqa: E402
from citeline.query.words import content_words, stems  # noqa: E402

DEPTH = 20
TOP = 4
MAX_SHARE = 0.05
EXPANSIONS = (3, 5)


def vocabulary(contents: list[str]) -> list[str]:
    """Words in at least two chunks and at most :data:`MAX_SHARE` of them, alphabetic, 4+ letters."""
    df = Counter(w for text in contents for w in {w.lower() for w in content_words(text)})
    limit = max(2, MAX_SHARE * len(contents))
    return sorted(w for w, n in df.items() if 2 <= n <= limit and w.isalpha() and len(w) >= 4)


def expand(question: str, vector: np.ndarray, words: list[str], matrix: np.ndarray, m: int) -> str:
    held = stems(question)
    order = np.argsort(-(matrix @ vector))
    extra = [words[i] for i in order[: 10 * m] if next(iter(stems(words[i])), "") not in held][:m]
    return question + " " + " ".join(extra)


def _sign(result) -> str:
    return f"+{result.wins}/-{result.losses} p={result.p:.2g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("db", nargs="?")
    parser.add_argument("--smoke", action="store_true", help="a tiny corpus on the fake embedder")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            measure(str(smokekit.tiny_corpus()), smokekit.tiny_index())
    elif args.db:
        measure(args.corpus, args.db)
    else:
        parser.error("give CORPUS_DIR and DB")


def measure(corpus_dir: str, db: str) -> None:
    store = Store(db)
    stamp = store.require_stamp()
    embedder = get_embedder(stamp.embed_model, "fp32")
    searcher = Searcher(store, embedder, stamp)
    reranker = TokenCache(searcher.default_reranker())
    rows = store.chunk_rows(["chunk_id", "content"])
    content = {r["chunk_id"]: r["content"] for r in rows}
    words = vocabulary(list(content.values()))
    matrix = np.asarray(embedder.embed_queries(words), dtype=np.float32)
    print(f"{len(rows)} chunks, vocabulary {len(words)} words")
    corpus = load_corpus(corpus_dir)

    def rank(question: str, needle: str) -> int | None:
        hits = searcher.rerank(question, DEPTH, reranker=reranker)
        return next((i for i, h in enumerate(hits, 1) if contains_needle(content[h.chunk_id], needle)), None)

    variants = {"original": {}, **{f"+{m} words": {} for m in EXPANSIONS}}
    shown = 0
    for q in corpus.queries:
        vector = np.asarray(searcher.query_vector(q.text), dtype=np.float32)
        variants["original"][q.id] = (q.phrasing, rank(q.text, q.needle))
        for m in EXPANSIONS:
            text = expand(q.text, vector, words, matrix, m)
            if shown < 6 and m == EXPANSIONS[-1] and q.phrasing == "ticket":
                print(f"  {text!r}")
                shown += 1
            variants[f"+{m} words"][q.id] = (q.phrasing, rank(text, q.needle))
    print("| variant | phrasing | top 4 | R@20 | MRR | top 4 vs original | RR vs original |")
    print("|---|---|---:|---:|---:|---|---|")
    for name, ranks in variants.items():
        for phrasing in ("course", "ticket"):
            ids = [i for i, (p, _) in ranks.items() if p == phrasing]
            top = [float(ranks[i][1] is not None and ranks[i][1] <= TOP) for i in ids]
            rr = [1 / ranks[i][1] if ranks[i][1] else 0.0 for i in ids]
            r20 = np.mean([ranks[i][1] is not None for i in ids])
            base_top = [float(variants["original"][i][1] is not None and variants["original"][i][1] <= TOP) for i in ids]
            base_rr = [1 / variants["original"][i][1] if variants["original"][i][1] else 0.0 for i in ids]
            vs = "" if name == "original" else f"{_sign(paired(top, base_top))} | {_sign(paired(rr, base_rr))}"
            print(f"| {name} | {phrasing} | {int(sum(top))}/{len(ids)} | {r20:.3f} | {np.mean(rr):.3f} | {vs or ' | '} |")


if __name__ == "__main__":
    main()
