"""Scale-out: the dev corpus indexed in-process vs on a Dask LocalCluster of 1 and 2 workers.

Each run is a fresh index in its own child process (as `citeline index` would run),
so cluster start-up and the model load in every worker are counted: that is what an
operator pays. Reported: wall seconds, chunks per second, and the ratio to the
in-process run measured in the same invocation.

    .venv/bin/python bench/dask_throughput.py [DOCS] [--workers 1 2]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DOCS = ROOT.parent / "shared" / "corpora" / "dev" / "docs"

RUN = """
import json, sys, time
from citeline.tasks import env
env.apply()
from citeline.flows.ingest import index_folder
from citeline.flows.runners import task_runner_for
from citeline.schemas.settings import IndexSettings
docs, db, dask, workers = sys.argv[1], sys.argv[2], sys.argv[3] or None, int(sys.argv[4])
flow = index_folder.with_options(task_runner=task_runner_for(dask, workers))
started = time.perf_counter()
summary = flow(docs, IndexSettings(db=db))
print(json.dumps({"seconds": time.perf_counter() - started, "chunks": summary.chunks, "indexed": summary.indexed}))
"""


def run(docs: str, db: str, dask: str | None, workers: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    done = subprocess.run([sys.executable, "-c", RUN, docs, db, dask or "", str(workers)], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", nargs="?", default=str(DEFAULT_DOCS))
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [("in-process (2 threads)", run(args.docs, f"{tmp}/threads", None, 2))]
        for n in args.workers:
            runs.append((f"Dask LocalCluster, {n} worker(s)", run(args.docs, f"{tmp}/dask{n}", "local", n)))
    base = runs[0][1]["seconds"]
    print(f"corpus {args.docs}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at the end")
    for name, r in runs:
        print(f"  {name:<32} {r['seconds']:7.1f} s  {r['chunks'] / r['seconds']:6.1f} chunks/s  "
              f"x{r['seconds'] / base:5.2f} of in-process  ({r['indexed']} documents, {r['chunks']} chunks)")


if __name__ == "__main__":
    main()
