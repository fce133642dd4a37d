"""Prefect's own share of a sync against a running server: the flow call's wall
time minus the run's start-to-end time as the server recorded it.

    CITELINE_HOME=DIR .venv/bin/citeline server start
    CITELINE_HOME=DIR .venv/bin/python bench/prefect_start.py [--runs 6] [--db PATH] [--smoke]

examples/docs is indexed into ``--db`` once (MiniLM; kept for the next call), then synced ``--runs``
times in this process with nothing changed. Per call: the wall time of ``index_folder(...)``, the
run's ``end_time - start_time`` read back from the server (the baseline: the flow's own work and its
task runs), and the difference — creating the flow run, its state changes and the client, what a
command pays for Prefect beyond its import. The first call is what a fresh command pays (a new
client, the flow registered); the later ones, a warm process. The import of Prefect itself is
reported apart (``-X importtime`` of ``import prefect`` in a fresh interpreter).

The server is the one ``PREFECT_API_URL`` names, else the citeline server under ``CITELINE_HOME``
(runtime/prefect_server.py); without either the bench stops (a temporary server is what
bench/cold_commands.py measures). ``--smoke`` (tests/flows/test_bench_smoke.py): two calls on the
tests' fake embedder against the tests' server, no figure asserted.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "docs"
sys.path.insert(0, str(ROOT / "bench"))

from cold_commands import build, cpu_model  # noqa: E402


def prefect_import_seconds() -> float:
    """``import prefect``'s cumulative time in a fresh interpreter, from ``-X importtime``."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import prefect"], capture_output=True, text=True)
    for line in done.stderr.splitlines():
        fields = [f.strip() for f in line.removeprefix("import time:").split("|")]
        if len(fields) == 3 and fields[2] == "prefect":
            return int(fields[1]) / 1e6
    raise RuntimeError("no 'prefect' line in -X importtime's output")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--db", default=str(Path(tempfile.gettempdir()) / "citeline-prefect-start"))
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()

    from citeline.runtime import prefect_server
    from citeline.runtime import log

    log.configure()
    if not (os.environ.get("PREFECT_API_URL") or prefect_server.connect()):
        sys.exit("no Prefect server: set PREFECT_API_URL or start one (`citeline server start`)")
    model = "all-MiniLM-L6-v2"
    if args.smoke:
        import smokekit

        smokekit.register_fakes()
        model, args.runs, args.db = smokekit.FAKE, 2, tempfile.mkdtemp() + "/db"

    from prefect.client.orchestration import get_client

    from citeline.flows.ingest import index_folder
    from citeline.schemas.settings import IndexSettings

    settings = IndexSettings(db=args.db, model=model, strategy="E")
    if args.smoke:
        index_folder(str(EXAMPLES), settings, return_state=True)
    else:
        build(args.db)  # in its own process, so the first call measured here is a fresh command's
    load = os.getloadavg()[0]
    calls = []
    for _ in range(args.runs):
        started = time.perf_counter()
        state = index_folder(str(EXAMPLES), settings, return_state=True)
        wall = time.perf_counter() - started

        async def recorded():
            async with get_client() as client:
                return await client.read_flow_run(state.state_details.flow_run_id)

        run = asyncio.run(recorded())
        calls.append((wall, (run.end_time - run.start_time).total_seconds()))
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; "
          f"{args.runs} no-op syncs of examples/docs in one process against {os.environ['PREFECT_API_URL']}")
    print(f"{'call':<6} {'wall':>7} {'run (baseline)':>15} {'Prefect outside the run':>24}")
    for i, (wall, body) in enumerate(calls, 1):
        print(f"{i:<6} {wall:>6.2f}s {body:>14.2f}s {wall - body:>23.2f}s")
    later = [w - b for w, b in calls[1:]] or [calls[0][0] - calls[0][1]]
    print(f"prefect outside the run: first call {calls[0][0] - calls[0][1]:.2f} s, later calls median "
          f"{statistics.median(later):.2f} s; import prefect {prefect_import_seconds():.2f} s")


if __name__ == "__main__":
    main()
