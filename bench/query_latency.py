"""Query-side speed (and, with --quality, accuracy and the refusal sweep) over the dev corpus.

Latency, medians over every query (64 in-domain + 30 out-of-domain), all in this
process on the same loaded model, so ratios hold on a noisy shared machine:

- bm25: ``Searcher.bm25`` end to end, beside the bare LanceDB full-text search it wraps;
- embed: one query embedding;
- dense scan: ``ChunkReader.dense`` with the query vector precomputed (the exact
  in-memory scan below the ANN threshold), beside a bare LanceDB flat search;
- numpy baseline: a brute-force dot product over the same vectors plus top-k;
- hybrid: ``Searcher.hybrid`` with the query vector cached, and end to end;
- rerank: scoring the 25 candidates, and ``Searcher.rerank`` end to end.

--quality adds R@1 / R@4 / MRR for dense, bm25, hybrid and MaxSim reranking
(pure and mixed with cosine, over the dense and the hybrid top 25), sign tests
against dense and hybrid, and the refusal-gate sweeps (cosine cut and MaxSim cut).

    .venv/bin/python bench/query_latency.py [--db DB] [--corpus DIR] [--quality] [--token-vectors]

Without --db the corpus is indexed (strategy E) into a temporary folder first.
``--smoke`` (tests/flows/test_bench_smoke.py): the tiny corpus of bench/smokekit.py indexed with the
tests' fake embedder, with --quality, rerank timed on 2 queries, torch's threads left alone: runs, no figure.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citeline.runtime import env  # noqa: E402

env.apply()

import numpy as np  # noqa: E402

from citeline.schemas.settings import DEFAULT_MODEL  # noqa: E402
from citeline.evaluation.metrics import contains_needle, first_relevant_rank, hits_at, mrr, recall_at  # noqa: E402
from citeline.evaluation.stats import paired  # noqa: E402
from citeline.index.store import Store  # noqa: E402
from citeline.index.tokens import TokenVectors  # noqa: E402
from citeline.pipeline.embed import get_embedder  # noqa: E402
from citeline.query.maxsim import maxsim, mix  # noqa: E402
from citeline.query.rerank import MaxSimReranker, Passage  # noqa: E402
from citeline.query.search import Searcher  # noqa: E402
from citeline.query.calibrate import cut_in_use  # noqa: E402
from citeline.query.thresholds import GateQuery, Uncalibrated, cosine_cut, sweep  # noqa: E402
from citeline.schemas.retrieval import CHUNK_COLUMNS, COSINE, DEFAULT_RERANK, RERANK, Hit  # noqa: E402
from citeline.tasks.tokens import fill_token_vectors  # noqa: E402

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev"
K = 8
DEFAULT_DEPTH = DEFAULT_RERANK.depth  # the bench's candidate lists are as long as the product's
GATE_K = 4
COSINE_CUTS = [round(0.35 + 0.05 * i, 2) for i in range(9)]  # 0.35 .. 0.75
MAXSIM_CUTS = [round(0.40 + 0.05 * i, 2) for i in range(10)]  # 0.40 .. 0.85
WEIGHTS = [0.0, 0.25, 0.5, 0.75]  # cosine weight in the MaxSim mix; 0 = pure MaxSim


def load_queries(corpus: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """(query, needle) for both phrasings of every needle, and the out-of-domain queries."""
    truth = [json.loads(line) for line in (corpus / "ground_truth.jsonl").read_text().splitlines() if line.strip()]
    ood = [json.loads(line) for line in (corpus / "out_of_domain.jsonl").read_text().splitlines() if line.strip()]
    in_domain = [(t[kind], t["needle"]) for kind in ("course", "ticket") for t in truth]
    return in_domain, [o["query"] for o in ood]


def build_index(docs: Path, db: str) -> None:
    from citeline.flows.ingest import index_folder
    from citeline.schemas.settings import IndexSettings

    index_folder(str(docs), IndexSettings(db=db))


def ms(fn, *args):
    started = time.perf_counter()
    out = fn(*args)
    return out, (time.perf_counter() - started) * 1000


def latency(searcher: Searcher, queries: list[str], rerank_sample: int | None) -> None:
    store, stamp, embedder = searcher.store, searcher.stamp, searcher.embedder
    rows = store.chunk_rows(["chunk_id", "vector"])
    matrix = np.stack([np.asarray(r["vector"], dtype=np.float32) for r in rows])
    reranker = MaxSimReranker(embedder, cosine_weight=0.0)
    searcher.hybrid(queries[0], K), searcher.bm25(queries[0], K), searcher.rerank(queries[0], K)  # warm-up
    times: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        times.setdefault(name, []).append(value)

    table = store.chunks(stamp)
    for i, q in enumerate(queries):
        add("bm25 (Searcher.bm25, all in)", ms(searcher.bm25, q, K)[1])
        add("  lancedb full-text search on an open table (floor)", ms(_text_search, table, q)[1])
        vector, t = ms(embedder.embed_query, q)
        add("query embedding", t)
        add("dense scan (ChunkReader.dense, excl. embedding)", ms(searcher.reader.dense, vector, K)[1])
        add("  lancedb flat vector search on an open table", ms(_vector_search, table, vector)[1])
        add("numpy brute force (dot + top-k), baseline", ms(_brute_force, matrix, vector, K)[1])
        searcher._last_query = (q, vector)
        add("hybrid (Searcher.hybrid, excl. embedding)", ms(searcher.hybrid, q, K)[1])
        searcher._last_query = None  # so hybrid pays for its own embedding
        add("hybrid (Searcher.hybrid, incl. embedding)", ms(searcher.hybrid, q, K)[1])
        if rerank_sample is None or i < rerank_sample:
            pool = searcher.hybrid(q, DEFAULT_DEPTH)
            texts = searcher.reader.texts([h.chunk_id for h in pool])
            passages = [Passage(texts[h.chunk_id]) for h in pool]
            add(f"MaxSim scoring of the top {DEFAULT_DEPTH}, on the fly", ms(reranker.score, q, passages)[1])
            stored, searcher.reader.tokens = searcher.reader.tokens, None
            searcher._last_query = None
            add(f"rerank end to end (hybrid top {DEFAULT_DEPTH} + MaxSim on the fly)", ms(searcher.rerank, q, K)[1])
            searcher.reader.tokens = stored
            if stored is not None:
                searcher._last_query = None
                add(f"rerank end to end (hybrid top {DEFAULT_DEPTH} + MaxSim, stored token vectors)",
                    ms(searcher.rerank, q, K)[1])

    base = statistics.median(times["numpy brute force (dot + top-k), baseline"])
    print(f"\nLATENCY  medians over {len(queries)} queries (rerank: {len(times[next(reversed(times))])}); "
          f"{matrix.shape[0]} chunks x {matrix.shape[1]}-d; torch threads {_threads()}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:<52} {med:9.2f} ms   p90 {np.percentile(values, 90):9.2f}   x{med / base:8.1f} baseline")


def _vector_search(table, vector: np.ndarray) -> list[dict]:
    return table.search(vector).distance_type("cosine").limit(K).select([*CHUNK_COLUMNS, "_distance"]).to_list()


def _text_search(table, query: str) -> list[dict]:
    return table.search(query, query_type="fts").limit(K).select(["chunk_id", "_score"]).to_arrow()


def _brute_force(matrix: np.ndarray, vector: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ vector
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top])]


def _threads() -> int:
    import torch

    return torch.get_num_threads()


# ---- quality ----------------------------------------------------------------------------


class TokenCache:
    """Token vectors per chunk, computed once for the quality sweep (latency scores on the fly)."""

    def __init__(self, searcher: Searcher):
        self.searcher = searcher
        self.vectors: dict[str, np.ndarray] = {}

    def scores(self, query: str, pool: list[Hit]) -> np.ndarray:
        missing = [h.chunk_id for h in pool if h.chunk_id not in self.vectors]
        texts = self.searcher.reader.texts(missing)
        embedder = self.searcher.embedder
        for start in range(0, len(missing), 16):
            batch = missing[start:start + 16]
            for cid, vecs in zip(batch, embedder.token_vectors([texts[c] for c in batch])):
                self.vectors[cid] = vecs
        q = embedder.token_vectors([query])[0]
        return maxsim(q, [self.vectors[h.chunk_id] for h in pool])


def candidates(searcher: Searcher, cache: TokenCache, query: str) -> dict[str, list[Hit]]:
    """Every ranking of one query, each a list of hits (top 25)."""
    lists = {"dense": searcher.dense(query, DEFAULT_DEPTH), "bm25": searcher.bm25(query, DEFAULT_DEPTH),
             "hybrid": searcher.hybrid(query, DEFAULT_DEPTH)}
    for source in ("dense", "hybrid"):
        pool = lists[source]
        raw = cache.scores(query, pool)
        cosines = [1 - h.distance for h in pool]
        for w in WEIGHTS:
            order_by = raw if w == 0 else mix(raw, cosines, 1 - w)
            order = np.argsort(-order_by, kind="stable")
            name = f"maxsim {source}25" if w == 0 else f"mix{w:g} {source}25"
            lists[name] = [replace(pool[i], rerank_score=float(raw[i])) for i in order]
    return lists


def quality(searcher: Searcher, in_domain: list[tuple[str, str]], ood: list[str]) -> None:
    cache = TokenCache(searcher)
    runs = [candidates(searcher, cache, q) for q, _ in in_domain]
    ood_runs = [candidates(searcher, cache, q) for q in ood]
    names = list(runs[0])
    ranks = {n: [first_relevant_rank([h.chunk.content for h in run[n]], needle) for run, (_, needle) in zip(runs, in_domain)]
             for n in names}
    print(f"\nQUALITY  {len(in_domain)} in-domain queries; sign tests on R@1 hits and on reciprocal ranks")
    print(f"  {'retriever':<18} {'R@1':>6} {'R@4':>6} {'R@20':>6} {'MRR':>6}   {'R@1 vs dense':>22} "
          f"{'R@1 vs hybrid':>22} {'RR vs dense':>22} {'RR vs hybrid':>22}")
    rr = {n: [1 / r if r else 0.0 for r in ranks[n]] for n in names}
    for n in names:
        r = ranks[n]
        tests = [paired(hits_at(r, 1), hits_at(ranks[b], 1)) for b in ("dense", "hybrid")]
        tests += [paired(rr[n], rr[b]) for b in ("dense", "hybrid")]
        cells = " ".join(f"{f'+{t.wins}/-{t.losses} p={t.p:.4f}':>22}" for t in tests)
        print(f"  {n:<18} {recall_at(r, 1):6.3f} {recall_at(r, 4):6.3f} {recall_at(r, 20):6.3f} {mrr(r):6.3f}   {cells}")

    for n in ("dense", "hybrid", "maxsim hybrid25", "mix0.25 hybrid25", "maxsim dense25"):
        retrieved = [_gated(run[n], needle) for run, (_, needle) in zip(runs, in_domain)]
        unanswerable = [_gated(run[n]) for run in ood_runs]
        print(f"\nGATE  cosine cut on the top {GATE_K} of {n} (bluffs: out-of-domain with a chunk passing; "
              f"lost: answers in the top {GATE_K} that the cut removes)")
        for point in sweep(retrieved + unanswerable, COSINE_CUTS, COSINE, GATE_K):
            print("  " + point.line())
        if n.startswith(("maxsim", "mix")):
            retrieved = [_gated(run[n], needle, _rerank_score) for run, (_, needle) in zip(runs, in_domain)]
            unanswerable = [_gated(run[n], value=_rerank_score) for run in ood_runs]
            print(f"GATE  MaxSim score cut on the top {GATE_K} of {n}")
            for point in sweep(retrieved + unanswerable, MAXSIM_CUTS, RERANK, GATE_K):
                print("  " + point.line())
    try:
        cut = cosine_cut(searcher.stamp.embed_model)
    except Uncalibrated:  # a model without a legacy cut (the smoke's fake): the cut the index calibrated
        cut = round(cut_in_use(searcher, searcher.stamp).cut, 3)
    n = "maxsim hybrid25"

    def under_cut(hit: Hit) -> float:  # both gates at once: a hit over the cosine cut never passes
        return hit.rerank_score if hit.distance < cut else -np.inf

    retrieved = [_gated(run[n], needle, under_cut) for run, (_, needle) in zip(runs, in_domain)]
    unanswerable = [_gated(run[n], value=under_cut) for run in ood_runs]
    print(f"\nGATE  cosine cut {cut} AND a MaxSim score cut, on the top {GATE_K} of {n}")
    for point in sweep(retrieved + unanswerable, [0.50, 0.55, 0.58, 0.60], RERANK, GATE_K):
        print("  " + point.line().replace("cut", f"cosine < {cut} and MaxSim >", 1))
    best_in = [min(h.distance for h in run["dense"][:GATE_K]) for run in runs]
    best_out = [min(h.distance for h in run["dense"][:GATE_K]) for run in ood_runs]
    print(f"\nnearest chunk in the dense top {GATE_K}: farthest for an in-domain query {max(best_in):.3f}, "
          f"closest for an out-of-domain query {min(best_out):.3f}")


def _gated(hits: list[Hit], needle: str | None = None, value=lambda hit: hit.distance) -> GateQuery:
    """The gate's view of one query's top hits; in-domain when it has a needle."""
    top = hits[:GATE_K]
    relevant = tuple(needle is not None and contains_needle(h.chunk.content, needle) for h in top)
    return GateQuery(tuple(float(value(h)) for h in top), relevant, needle is not None)


def _rerank_score(hit: Hit) -> float:
    return hit.rerank_score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="an index of the corpus (default: build one in a temporary folder)")
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--quality", action="store_true", help="also accuracy, sign tests and gate sweeps")
    parser.add_argument("--token-vectors", action="store_true",
                        help="store the index's word-piece vectors first (if missing) and time MaxSim on them too")
    parser.add_argument("--rerank-sample", type=int, default=None, help="time reranking on the first N queries only")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: single-threaded)")
    parser.add_argument("--smoke", action="store_true", help="a tiny corpus on the fake embedder, with --quality")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models() as model:
            args.db, args.corpus, args.quality, args.rerank_sample, args.threads = (
                smokekit.tiny_index(), str(smokekit.tiny_corpus()), True, 2, 0)
            run(args, model)
    else:
        run(args, DEFAULT_MODEL)


def run(args, model: str) -> None:
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    corpus = Path(args.corpus)
    in_domain, ood = load_queries(corpus)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or f"{tmp}/index"
        if not args.db:
            started = time.perf_counter()
            build_index(corpus / "docs", db)
            print(f"indexed {corpus / 'docs'} in {time.perf_counter() - started:.1f} s")
        if args.token_vectors:
            store = Store(db)
            added, _ = fill_token_vectors(store, store.stamp(), get_embedder)
            chunks, size = TokenVectors(store, store.stamp()).size()
            print(f"token vectors: {added} chunks encoded now; {chunks} stored, {size / 2**20:.1f} MiB "
                  f"({size / max(chunks, 1) / 1024:.0f} KiB per chunk)")
        searcher = Searcher.open(db, get_embedder(model))
        print(f"index {db}: {searcher.stamp.embed_model}, strategy {searcher.stamp.strategy}, "
              f"{searcher.store.count_chunks()} chunks; encoder precision {searcher.embedder.precision}")
        latency(searcher, [q for q, _ in in_domain] + ood, args.rerank_sample)
        if args.quality:
            quality(searcher, in_domain, ood)


if __name__ == "__main__":
    main()
