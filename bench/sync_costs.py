"""What re-syncs cost, as ratios of a full index measured in the same run.

    .venv/bin/python bench/sync_costs.py [CORPUS_DOCS]

1. full index of the corpus (fresh index, strategy E, model already loaded);
2. no-op re-sync of the same folder (every file unchanged: hash, compare, skip);
3. one file changed: re-sync;
4. re-index to a second model (int8 ONNX MiniLM) from the stored canonical text.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from tasks import env

env.apply()

from flows.ingest import index_folder  # noqa: E402
from flows.reindex import reindex  # noqa: E402
from pipeline.embed import get_embedder  # noqa: E402
from schemas.settings import IndexSettings  # noqa: E402

DEFAULT_DOCS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev" / "docs"


def timed(fn, *args):
    started = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - started, result


def main() -> None:
    docs = Path(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DOCS)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        shutil.copytree(docs, folder)
        settings = IndexSettings(db=f"{tmp}/index")
        get_embedder(settings.model).embed_documents(["warm-up"])
        get_embedder("minilm-int8").embed_documents(["warm-up"])
        index_folder(str(Path(tmp) / "docs" / next(p.name for p in folder.iterdir())), IndexSettings(db=f"{tmp}/w"))

        full_s, full = timed(index_folder, str(folder), settings)
        noop_s, noop = timed(index_folder, str(folder), settings)
        first = sorted(folder.iterdir())[0]
        first.write_text(first.read_text() + "\n\nOne more closing paragraph.\n")
        one_s, one = timed(index_folder, str(folder), settings)
        re_s, re = timed(reindex, IndexSettings(db=settings.db, model="minilm-int8"))

    print(f"corpus            {docs} ({full.indexed} documents, {full.chunks} chunks)")
    print(f"full index        {full_s:8.2f} s   1.000")
    print(f"no-op re-sync     {noop_s:8.2f} s   {noop_s / full_s:.3f}  (skipped {noop.skipped})")
    print(f"one file changed  {one_s:8.2f} s   {one_s / full_s:.3f}  (indexed {one.indexed}, skipped {one.skipped})")
    print(f"re-index (int8)   {re_s:8.2f} s   {re_s / full_s:.3f}  ({re.rows} rows, switched={re.switched})")


if __name__ == "__main__":
    main()
