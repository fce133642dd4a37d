"""Indexing overhead: the whole index flow vs bare ``encode()`` of the same chunk texts.

Both sides run in this process, on the same loaded model, backend and batch size, so
the ratio holds on a noisy shared machine even when absolute times move.

    .venv/bin/python bench/index_overhead.py [CORPUS_DOCS] [--strategy E]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from tasks import env

env.apply()

from flows.ingest import index_folder  # noqa: E402
from index.store import Store  # noqa: E402
from pipeline.embed import get_embedder  # noqa: E402
from schemas.settings import IndexSettings  # noqa: E402

DEFAULT_DOCS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev" / "docs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", nargs="?", default=str(DEFAULT_DOCS))
    parser.add_argument("--strategy", default="E")
    parser.add_argument("--precision", default="auto")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        settings = IndexSettings(db=f"{tmp}/index", strategy=args.strategy, precision=args.precision)
        embedder = get_embedder(settings.model, settings.precision, settings.batch_size)
        embedder.embed_documents(["warm-up"])  # load the weights outside both timings

        started = time.perf_counter()
        summary = index_folder(args.docs, settings)
        flow_s = time.perf_counter() - started

        texts = [r["text"] for r in Store(settings.db).chunk_rows(["text", "path", "ordinal"])]
        started = time.perf_counter()
        embedder.embed_documents(texts)
        encode_s = time.perf_counter() - started

    print(f"corpus        {args.docs}")
    print(f"strategy      {args.strategy}; encoder {embedder.name} {embedder.precision}, batch {embedder.batch_size}")
    print(f"chunks        {summary.chunks} ({summary.truncated} truncated), documents {summary.indexed}")
    print(f"index flow    {flow_s:8.2f} s  ({summary.chunks / flow_s:6.1f} chunks/s)")
    print(f"bare encode   {encode_s:8.2f} s  ({len(texts) / encode_s:6.1f} chunks/s)")
    print(f"ratio         {flow_s / encode_s:8.2f}x  (index flow / bare encode)")


if __name__ == "__main__":
    main()
