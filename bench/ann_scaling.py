"""Dense search at 100k chunks: the HNSW index citeline builds vs exact search, in one run.

The dev corpus is indexed (strategy E, ~1k chunks), then grown to --rows synthetic
chunks: each is a mix of two real chunk vectors plus a little noise (so the space
keeps the corpus's clusters) carrying one source chunk's text. The table is written
and finished through ``Store`` like any index, so the vector index is the one a real
run builds automatically (``Store.ann_min_rows``). Queries are the real dev questions
(64 in-domain + 30 out-of-domain) embedded by the real model.

Reported, medians over all queries, with the exact numpy scan as the baseline:
- exact: numpy dot product over every vector + top-k (the recall reference);
- LanceDB flat search (the vector index bypassed);
- ``ChunkReader.dense`` over the HNSW index at several refine factors: latency and
  recall@10 against exact;
- BM25 and hybrid end to end (``Searcher``, query embedding included).

    .venv/bin/python bench/ann_scaling.py [--rows 100000] [--db DEV_INDEX] [--threads 1]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citeline.tasks import env  # noqa: E402

env.apply()

import numpy as np  # noqa: E402

from citeline.index.store import Store, chunk_table  # noqa: E402
from citeline.pipeline.embed import get_embedder  # noqa: E402
from citeline.query.search import Searcher  # noqa: E402

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from query_latency import DEFAULT_CORPUS, build_index, load_queries  # noqa: E402

K = 10
PER_DOC = 5_000  # rows per synthetic document (one commit each)
REFINES = [None, 2, 5, 10]


def synthetic_rows(source: list[dict], n: int, seed: int = 0):
    """``n`` rows as documents of PER_DOC rows, vectors mixed from two source chunks."""
    rng = np.random.default_rng(seed)
    vectors = np.asarray([r["vector"] for r in source], dtype=np.float32)
    for doc_start in range(0, n, PER_DOC):
        size = min(PER_DOC, n - doc_start)
        i, j = rng.integers(0, len(source), size), rng.integers(0, len(source), size)
        w = rng.uniform(0.6, 1.0, (size, 1))
        mixed = w * vectors[i] + (1 - w) * vectors[j] + rng.normal(0, 0.02, (size, vectors.shape[1]))
        mixed = (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)
        doc = f"synthetic-{doc_start // PER_DOC:03d}"
        rows = []
        for offset, (src, vec) in enumerate(zip(i, mixed)):
            row = dict(source[src])
            row.update(chunk_id=f"{doc}-{offset}", doc_id=doc, path=f"{doc}.md", ordinal=offset, vector=vec.tolist())
            rows.append(row)
        yield doc, rows, mixed


def median_ms(fn, inputs) -> tuple[float, list]:
    fn(inputs[0])  # warm-up
    times, outs = [], []
    for x in inputs:
        started = time.perf_counter()
        outs.append(fn(x))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), outs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--db", help="an existing dev-corpus index (default: build one)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (as bench/query_latency.py)")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        dev = args.db or f"{tmp}/dev"
        if not args.db:
            build_index(args.corpus / "docs", dev)
        stamp = Store(dev).stamp()
        source = Store(dev).chunk_rows()
        embedder = get_embedder(stamp.embed_model)
        in_domain, ood = load_queries(args.corpus)
        questions = [q for q, _ in in_domain] + ood
        queries = [embedder.embed_query(q) for q in questions]

        store = Store(f"{tmp}/big")
        started = time.perf_counter()
        parts = []
        for doc, rows, vectors in synthetic_rows(source, args.rows):
            store.replace_chunks(stamp, doc, chunk_table(rows, stamp))
            parts.append((doc, vectors))
        write_s = time.perf_counter() - started
        started = time.perf_counter()
        store.finish_run(stamp)  # builds the full-text and, past ann_min_rows, the HNSW index
        finish_s = time.perf_counter() - started

        matrix = np.concatenate([v for _, v in parts])
        ids = [f"{doc}-{i}" for doc, v in parts for i in range(len(v))]

        def exact(q):
            scores = matrix @ q
            top = np.argpartition(-scores, K)[:K]
            return {ids[t] for t in top[np.argsort(-scores[top])]}

        base, truth = median_ms(exact, queries)
        table = store.chunks(stamp)

        def flat(q):
            return (table.search(q).distance_type("cosine").bypass_vector_index().limit(K)
                    .select(["chunk_id", "_distance"]).to_list())

        flat_ms, _ = median_ms(flat, queries)
        searcher = Searcher(store, embedder, stamp)
        reader = searcher.reader
        results = []
        for refine in REFINES:
            reader.refine = refine
            took, found = median_ms(lambda q: reader.dense(q, K), queries)
            recall = statistics.mean(len({r["chunk_id"] for r in f} & t) / K for f, t in zip(found, truth))
            results.append((refine, took, recall))
        bm25_ms, _ = median_ms(lambda q: searcher.bm25(q, K), questions)

        def hybrid(q):
            searcher._last_query = None  # pay for the query embedding each time
            return searcher.hybrid(q, K)

        hybrid_ms, _ = median_ms(hybrid, questions)
        embed_ms, _ = median_ms(embedder.embed_query, questions)

    print(f"\nANN  {args.rows} synthetic chunks x {matrix.shape[1]}-d, {len(queries)} dev queries, k={K}; "
          f"vector index built automatically: {not reader.exact}; write {write_s:.0f} s, finish (FTS + HNSW) "
          f"{finish_s:.0f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"  {'exact numpy scan (baseline, recall reference)':<48} {base:8.2f} ms   x{1:6.2f}")
    print(f"  {'LanceDB flat search (index bypassed)':<48} {flat_ms:8.2f} ms   x{flat_ms / base:6.2f}")
    for refine, took, recall in results:
        label = f"HNSW (ChunkReader.dense), refine_factor {refine}"
        print(f"  {label:<48} {took:8.2f} ms   x{took / base:6.2f}   recall@{K} {recall:.3f}")
    print(f"  {'query embedding':<48} {embed_ms:8.2f} ms")
    print(f"  {'bm25 (Searcher.bm25)':<48} {bm25_ms:8.2f} ms")
    print(f"  {'hybrid (Searcher.hybrid, incl. embedding)':<48} {hybrid_ms:8.2f} ms")


if __name__ == "__main__":
    main()
