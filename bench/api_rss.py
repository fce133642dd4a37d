"""Resident memory of ``citeline api`` over the dev index (~1k chunks) and the same index grown to 100k.

The 100k index is a copy of the dev index plus synthetic chunks written and finished
through ``Store`` as bench/ann_scaling.py makes them (mixes of two real chunk vectors plus
noise, each carrying one real chunk's text), so the HNSW and full-text indexes are the
ones a real run builds; its documents table still lists only the real documents. Each
index is served by ``citeline api`` in its own process (the real model loaded), then
asked ``--requests`` questions through ``GET /search`` and ``POST /ask``; VmRSS is read
after start and after the requests, and VmHWM (the peak) at the end.

    .venv/bin/python bench/api_rss.py --db DEV_INDEX [--rows 100000] [--requests 50] [--work DIR]

DEV_INDEX is only read: it is copied into --work (a temporary folder by default).
``--smoke`` (tests/flows/test_bench_smoke.py): the tiny corpus of bench/smokekit.py indexed with the tests'
fake embedder, grown to 300 rows, served by ``citeline`` on that fake (tests/fixtures/fake_cli.py), 2
requests of each kind: runs, no figure.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from citeline.runtime import env  # noqa: E402

env.apply()

from ann_scaling import synthetic_rows  # noqa: E402
from http_latency import CITELINE, DEFAULT_CORPUS, cpu_name, questions, request, start_service  # noqa: E402

from citeline.index.store import Store, chunk_table  # noqa: E402


def grow(dev: str, db: str, rows: int) -> dict:
    """A copy of ``dev`` with synthetic chunks added up to ``rows`` in all; how long it took."""
    shutil.copytree(dev, db)
    store = Store(db)
    stamp = store.stamp()
    source = store.chunk_rows()
    started = time.perf_counter()
    for doc, batch, *_ in synthetic_rows(source, max(rows - len(source), 0)):
        store.replace_chunks(stamp, doc, chunk_table(batch, stamp))
    store.finish_run(stamp)  # the HNSW and full-text indexes, as a run past ann_min_rows builds them
    return {"chunks": store.count_chunks(), "build_s": round(time.perf_counter() - started, 1)}


def status_mb(pid: int) -> dict:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = round(int(value.split()[0]) / 1024, 1)
    return fields


def measure(db: str, qs: list[str], requests: int, citeline: tuple[str, ...] = CITELINE) -> dict:
    proc, port = start_service(db, citeline)
    try:
        started = status_mb(proc.pid)["VmRSS"]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        began = time.perf_counter()
        for i in range(requests):
            request(conn, "search", qs[i % len(qs)])
            request(conn, "ask", qs[i % len(qs)])
        took = time.perf_counter() - began
        after = status_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"chunks": Store(db).count_chunks(), "rss_mb_started": started, "rss_mb_after": after["VmRSS"],
            "peak_mb": after["VmHWM"], "requests": 2 * requests, "seconds": round(took, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a dev-corpus index (only read)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=50, help="searches, and as many asks, per index")
    parser.add_argument("--work", help="where the grown copy goes (default: a temporary folder)")
    parser.add_argument("--smoke", action="store_true", help="a tiny corpus on the fake embedder, 300 rows")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            args.db, args.corpus, args.rows, args.requests = smokekit.tiny_index(), smokekit.tiny_corpus(), 300, 2
            run(args, (sys.executable, str(smokekit.FAKE_CLI)))
    elif args.db:
        run(args, CITELINE)
    else:
        parser.error("--db is required")


def run(args, citeline: tuple[str, ...]) -> None:
    work = args.work or tempfile.mkdtemp(prefix="api-rss-")
    qs = questions(args.corpus)
    report = {"cpu": cpu_name(), "cores": os.cpu_count(), "load_before": os.getloadavg()}
    report["grown"] = grow(args.db, os.path.join(work, "big"), args.rows)
    report["services"] = [measure(db, qs, args.requests, citeline) for db in (args.db, os.path.join(work, "big"))]
    report["load_after"] = os.getloadavg()
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
