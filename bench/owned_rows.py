"""What hiding chunk rows no record owns costs: the generation check of every reader
open and of every sync's start (the no-op sync included), and queries with and without a hidden row.

A table of --docs documents x --per chunks (synthetic, 64-d) with their records, each document's
rows and record under one generation, as a sync writes them; once under the vector-index size
(exact in-memory scan) and once over it (HNSW). Reported, mean ms per call: ``Store.unowned_generations``
(the added work), opening a ``ChunkReader`` as ``Store.reader`` does against one given no filter
(the code before), and ``dense``/``bm25`` with every row owned and with one document's rows unowned.

    .venv/bin/python bench/owned_rows.py [--docs 1000] [--per 20] [--repeat 20] [--smoke]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from filter_latency import STAMP, mean_ms  # noqa: E402  (a sibling bench: the same table and timer)
from citeline.index.reader import ChunkReader  # noqa: E402
from citeline.index.store import Store, chunk_table  # noqa: E402
from citeline.schemas.tables import new_generation  # noqa: E402

COLUMNS = ["chunk_id", "doc_id", "path", "content"]


def build(docs: int, per: int, ann_min_rows: int, rng) -> Store:
    store = Store(tempfile.mkdtemp() + "/db", ann_min_rows=ann_min_rows)
    vectors = rng.normal(size=(docs * per, STAMP.embed_dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tables = {f"doc{d}": chunk_table([{
        "chunk_id": f"doc{d}-{i}", "doc_id": f"doc{d}", "path": f"d{d}.md", "title": None, "section": None,
        "ordinal": i, "start": 0, "end": 1, "content": "c", "text": f"common w{i} d{d}", "locators": "[]",
        "tokens": 3, "truncated": False, "vector": vectors[d * per + i].tolist(), **STAMP.columns(),
        "extractor": "text", "extractor_version": "1"} for i in range(per)], STAMP) for d in range(docs)}
    generations = {doc: new_generation() for doc in tables}
    store.replace_chunks_of(STAMP, tables, generations)
    store.upsert_documents([{"doc_id": doc, "source": f"/f/{doc}.md", "root": "/f", "path": f"{doc}.md",
                             "status": "indexed", "attempts": 1, "chunk_count": per, "truncated": 0,
                             "generation": g} for doc, g in generations.items()])
    store.finish_run(STAMP)
    return store


def report(label: str, store: Store, repeat: int, rng) -> None:
    query = rng.normal(size=STAMP.embed_dim).astype(np.float32)
    query /= np.linalg.norm(query)
    table = store.chunks(STAMP)
    print(f"{label}: {table.count_rows()} rows")
    print(f"  unowned_generations       {mean_ms(lambda: store.unowned_generations(), repeat):8.2f} ms")
    print(f"  reader open, no check     {mean_ms(lambda: ChunkReader(store.chunks(STAMP), COLUMNS), repeat):8.2f} ms")
    print(f"  reader open, checked      {mean_ms(lambda: store.reader(STAMP, COLUMNS), repeat):8.2f} ms")
    for state in ("all owned", "one doc unowned"):
        if state == "one doc unowned":  # as a kill between a batch's two commits leaves one
            store.replace_chunks_of(STAMP, {"doc0": store.chunk_arrow("doc_id = 'doc0'")}, {"doc0": new_generation()})
        reader = store.reader(STAMP, COLUMNS)
        print(f"  {state:16s} dense {mean_ms(lambda: reader.dense(query, 10), repeat):6.2f} ms"
              f"   bm25 {mean_ms(lambda: reader.bm25('common w3', 10), repeat):6.2f} ms   hidden: {reader.owned}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--per", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="20 documents x 5 chunks, one call each")
    args = parser.parse_args()
    if args.smoke:
        args.docs, args.per, args.repeat = 20, 5, 1
    rng = np.random.default_rng(0)
    rows = args.docs * args.per
    report("exact", build(args.docs, args.per, rows + 1, rng), args.repeat, rng)
    report("hnsw", build(args.docs, args.per, min(rows, 1000), rng), args.repeat, rng)


if __name__ == "__main__":
    main()
