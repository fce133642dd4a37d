"""Scale-out: a folder indexed in-process vs on a Dask LocalCluster of 1 and 2 workers,
with small documents prepared one per task run or in groups (flows/ingest.py ``work_groups``).

Each run is a fresh index in its own child process (as `citeline index` would run),
so cluster start-up and the model load in every worker are counted in the wall time: that
is what an operator pays. Reported per run: wall seconds; the documents phase alone
(prepare on the workers and the batch writes, from the run's ``run.finished`` event) as
documents and chunks per second; and, from each document's ``document.indexed`` event,
the write seconds per chunk (the flow process's share of its batch's two commits) and the
encode seconds per chunk (on the worker that prepared it).

    .venv/bin/python bench/dask_throughput.py [DOCS] [--small N] [--workers 1 2] [--grouping on off]
                                              [--no-threads] [--no-calibrate]

``--small N`` indexes N generated notes of one or two chunks each (bench/small_files.py's)
instead of DOCS. ``--smoke`` (tests/flows/test_bench_smoke.py): 6 notes, in process and on one
worker, on the tests' fake embedder (each worker preloads bench/smokekit.py to register it), against
the Prefect server of PREFECT_API_URL when one is set: runs, no figure.
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
sys.path.insert(0, str(ROOT / "bench"))

from small_files import cpu_model, write_corpus  # noqa: E402

from citeline.schemas.settings import IndexSettings  # noqa: E402

FAKE = "fake/hashed-bag-of-words"  # tests/fixtures/fakes.py's name, registered by bench/smokekit.py

DEFAULT_DOCS = ROOT.parent / "shared" / "corpora" / "dev" / "docs"

RUN = """
import json, logging, sys, time
from citeline.runtime import env
env.apply()
from citeline.flows import ingest
from citeline.flows.runners import task_runner_for
from citeline.schemas.settings import IndexSettings
from citeline.runtime.log import LOGGER, configure
docs, db, dask, workers, grouping = sys.argv[1], sys.argv[2], sys.argv[3] or None, int(sys.argv[4]), sys.argv[5]
model = sys.argv[7]
if model != IndexSettings.model:  # the smoke's fake, registered here as its workers register it
    sys.path.insert(0, "bench")
    import smokekit
    smokekit.register_fakes()
if grouping == "off":
    ingest.GROUP_DOCS = 1  # every document its own task run, as before grouping
if sys.argv[6] == "skip":
    ingest.calibrate_gate = lambda settings, stamp: None  # minutes of queries in the flow process, after the documents

class Events(logging.Handler):
    seen = {"write": 0.0, "embed": 0.0, "documents": None}
    def emit(self, record):
        try:
            event = json.loads(record.getMessage())
        except ValueError:
            return
        if event.get("event") == "document.indexed":
            for stage in ("write", "embed"):
                self.seen[stage] += event["seconds"].get(stage, 0.0)
        if event.get("event") == "run.finished":
            self.seen["documents"] = event["seconds"]["documents"]

configure()
logging.getLogger(LOGGER).addHandler(Events())
flow = ingest.index_folder.with_options(task_runner=task_runner_for(dask, workers))
started = time.perf_counter()
summary = flow(docs, IndexSettings(db=db, model=model))
print(json.dumps({"seconds": time.perf_counter() - started, "chunks": summary.chunks, "indexed": summary.indexed,
                  **Events.seen}))
"""


SMOKE_ENV = {"DASK_DISTRIBUTED__WORKER__PRELOAD": json.dumps([str(ROOT / "bench" / "smokekit.py")])}


def run(docs: str, db: str, dask: str | None, workers: int, grouping: str, calibrate: bool,
        smoke: bool = False) -> dict:
    # a temporary Prefect server per run, as an operator's `citeline index` starts one (a smoke keeps the caller's)
    env = {k: v for k, v in os.environ.items() if smoke or k != "PREFECT_API_URL"}
    if smoke:
        env.update(SMOKE_ENV)
    done = subprocess.run([sys.executable, "-c", RUN, docs, db, dask or "", str(workers), grouping,
                           "run" if calibrate else "skip", FAKE if smoke else IndexSettings.model], cwd=ROOT,
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(name: str, r: dict, base: float) -> str:
    chunks, phase = max(r["chunks"], 1), r["documents"]
    return (f"  {name:<42} {r['seconds']:7.1f} s wall x{r['seconds'] / base:5.2f} | documents phase {phase:6.1f} s: "
            f"{r['indexed'] / phase:6.1f} docs/s {r['chunks'] / phase:6.1f} chunks/s | per chunk: write "
            f"{1000 * r['write'] / chunks:6.1f} ms, encode {1000 * r['embed'] / chunks:6.1f} ms "
            f"({r['indexed']} documents, {r['chunks']} chunks)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", nargs="?", default=str(DEFAULT_DOCS))
    parser.add_argument("--small", type=int, default=0, help="index this many generated small notes instead")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--grouping", nargs="+", default=["on"], choices=["on", "off"])
    parser.add_argument("--no-threads", action="store_true", help="skip the in-process run")
    parser.add_argument("--no-calibrate", action="store_true",
                        help="skip the refusal gate's calibration after the documents (wall time only)")
    parser.add_argument("--smoke", action="store_true", help="6 notes, one worker, the fake embedder")
    args = parser.parse_args()
    if args.smoke:
        args.small, args.workers, args.grouping = 6, [1], ["on"]
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        docs = args.docs
        if args.small:
            docs = f"{tmp}/notes"
            write_corpus(Path(docs), args.small)
        runs = [] if args.no_threads else [("in-process (2 threads)", run(docs, f"{tmp}/threads", None, 2, "on",
                                                                          not args.no_calibrate, args.smoke))]
        for n in args.workers:
            for grouping in args.grouping:
                name = f"LocalCluster, {n} worker(s), grouping {grouping}"
                runs.append((name, run(docs, f"{tmp}/dask{n}{grouping}", "local", n, grouping, not args.no_calibrate,
                                       args.smoke)))
                print(report(name, runs[-1][1], runs[0][1]["seconds"]), flush=True)
    print(f"corpus {docs if not args.small else f'{args.small} generated notes'}; {os.cpu_count()} CPUs "
          f"({cpu_model()}); load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    base = runs[0][1]["seconds"]
    for name, r in runs:
        print(report(name, r, base))


if __name__ == "__main__":
    main()
