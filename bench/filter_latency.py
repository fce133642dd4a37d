"""Query-time filters: what a prefilter costs the reader, exact scan and HNSW, on synthetic chunks.

A table of --docs documents x --per chunks (random unit vectors, 64-d) is written and
finished through ``Store`` like any index (so it carries the filter indexes), once under
the vector-index size (exact in-memory scan) and once over it (HNSW). A path-prefix filter
keeps one tenth of the documents. Reported: mean ms per call of ``ChunkReader.dense`` and
``ChunkReader.bm25``, unfiltered and filtered, and of rendering the predicate.

    .venv/bin/python bench/filter_latency.py [--docs 500] [--per 20] [--repeat 30] [--smoke]

``--smoke`` (tests/flows/test_bench_smoke.py): 20 documents x 5 chunks, one call each: runs, no figure.
"""
from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from citeline.index.store import Store, chunk_table
from citeline.schemas.retrieval import Filters
from citeline.schemas.stamp import IndexStamp

STAMP = IndexStamp(embed_model="synthetic", embed_dim=64)


def build(docs: int, per: int, ann_min_rows: int, rng) -> Store:
    store = Store(tempfile.mkdtemp() + "/db", ann_min_rows=ann_min_rows)
    vectors = rng.normal(size=(docs * per, STAMP.embed_dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tables = {f"doc{d}": chunk_table([{
        "chunk_id": f"doc{d}-{i}", "doc_id": f"doc{d}", "path": f"f{d % 10}/d{d}.md", "title": None,
        "section": None, "ordinal": i, "start": 0, "end": 1, "content": "c", "text": f"common w{i} d{d}",
        "locators": "[]", "tokens": 3, "truncated": False, "vector": vectors[d * per + i].tolist(),
        **STAMP.columns(), "extractor": "text", "extractor_version": "1"} for i in range(per)], STAMP)
        for d in range(docs)}
    store.replace_chunks_of(STAMP, tables)
    store.finish_run(STAMP)
    return store


def mean_ms(fn, repeat: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--per", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--smoke", action="store_true", help="20 documents x 5 chunks, one call each")
    args = parser.parse_args()
    if args.smoke:
        args.docs, args.per, args.repeat = 20, 5, 1
    rng = np.random.default_rng(0)
    rows = args.docs * args.per
    filters = Filters(paths=("f3/",))
    for mode, ann in (("exact", rows + 1), ("hnsw", max(rows // 10, 1))):
        store = build(args.docs, args.per, ann, rng)
        reader = store.reader(STAMP, ["chunk_id", "doc_id", "path"])
        where = store.predicate(filters)
        q = rng.normal(size=STAMP.embed_dim).astype(np.float32)
        q /= np.linalg.norm(q)
        calls = {"dense": lambda: reader.dense(q, 8), "dense + path filter": lambda: reader.dense(q, 8, where),
                 "bm25": lambda: reader.bm25("common w3", 8),
                 "bm25 + path filter": lambda: reader.bm25("common w3", 8, where),
                 "predicate": lambda: store.predicate(filters)}
        for name, fn in calls.items():
            print(f"{mode:5} {rows} chunks  {name:20} {mean_ms(fn, args.repeat):7.2f} ms")


if __name__ == "__main__":
    main()
