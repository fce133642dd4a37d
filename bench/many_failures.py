"""Thousands of failing files in one run: wall time, commits and size of the documents table.

    .venv/bin/python bench/many_failures.py [N]        # N empty files, default 5000
    .venv/bin/python bench/many_failures.py --smoke    # 20, the good document on the tests' fake embedder

Each empty file fails `empty` at extraction; the run then records every failure. Before
failures were batched, each failure was one LanceDB commit (0.13 s at #100, 1.48 s at #2,000: the run
passed 25 min and the documents table grew to 273 MB); now they are committed
``RECORD_BATCH`` at a time. Prints the run's wall time split into documents (prepare, on
the task runner) and recording, the documents table's versions and bytes on disk, and
the peak RSS. The load average is printed with them: absolute seconds on a shared
machine are not comparable across runs.
"""
from __future__ import annotations

import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from citeline.runtime import env

env.apply()
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

from citeline.flows import ingest  # noqa: E402
from citeline.flows.ingest import index_folder  # noqa: E402
from citeline.index.store import Store  # noqa: E402
from citeline.schemas.settings import IndexSettings  # noqa: E402
from citeline.tasks.record import RECORD_BATCH  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "docs" / "04-dropout.md"


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main(n: int, model: str = IndexSettings.model) -> None:
    work = Path(tempfile.mkdtemp(prefix="many-failures-"))
    docs, db = work / "docs", work / "index"
    docs.mkdir()
    shutil.copy(EXAMPLE, docs / EXAMPLE.name)  # one good document: a live index exists
    for i in range(n):
        (docs / f"empty-{i:05}.md").write_bytes(b"")
    marks = {}
    real_run = ingest.run_documents

    def timed_run(*args, **kwargs):
        marks["documents"] = time.perf_counter()
        result = real_run(*args, **kwargs)
        marks["recording"] = time.perf_counter()
        return result

    ingest.run_documents = timed_run
    try:
        started = time.perf_counter()
        summary = index_folder(str(docs), IndexSettings(db=str(db), model=model),
                               return_state=True).result(raise_on_failure=False)
        ended = time.perf_counter()
    finally:
        ingest.run_documents = real_run
    table = Store(str(db)).documents()
    print(f"{n} empty files + 1 document, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"  {summary.line()}")
    print(f"  wall {ended - started:.1f} s: documents {marks['recording'] - marks['documents']:.1f} s, "
          f"recording + finish {ended - marks['recording']:.1f} s")
    print(f"  documents table: {table.version} versions (RECORD_BATCH {RECORD_BATCH}), "
          f"{folder_size(db / 'documents.lance') / 2**20:.1f} MiB on disk, {table.count_rows()} rows")
    print(f"  peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    shutil.rmtree(work)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--smoke"]:
        import smokekit

        with smokekit.fake_models() as fake:
            main(20, fake)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
