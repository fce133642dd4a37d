"""How long Prefect's temporary server takes to answer, with and without block registration.

    .venv/bin/python bench/temporary_server_start.py [--rounds 3]
    .venv/bin/python bench/temporary_server_start.py --smoke    # one round: runs, no figure

Each round starts the server as citeline does (runtime/temporary_server.py) in a fresh process,
twice, alternating: once as shipped (no block registration) and once with Prefect's defaults
(``PREFECT_API_BLOCKS_REGISTER_ON_START`` and ``PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION`` true:
every start imports each installed Prefect collection to hash the block registry). Printed per
start: seconds until ``/health`` answered, then three trivial flow runs on it (a task each), so
the first run's extra cost on a fresh server shows beside the next two. One untimed start first
creates the database of the bench's own PREFECT_HOME. The CPU and the load are printed with it.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_commands import cpu_model  # noqa: E402

ONE_START = """
import sys, time
from citeline.runtime import env; env.apply()
from citeline.runtime import temporary_server
started = time.perf_counter()
server = temporary_server.start()
from prefect import flow, task
from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

@task
def one():
    return 1

@flow
def trivial():
    return one()

url = server.wait_ready()
ready = time.perf_counter() - started
runs = []
with temporary_settings({PREFECT_API_URL: url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
    for _ in range(3):
        begun = time.perf_counter()
        trivial()
        runs.append(time.perf_counter() - begun)
print(f"{ready:.2f} " + " ".join(f"{r:.2f}" for r in runs))
"""
DEFAULTS = {"PREFECT_API_BLOCKS_REGISTER_ON_START": "true", "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "true"}


def start(home: str, extra: dict[str, str]) -> list[float]:
    env = {**{k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}, "PREFECT_HOME": home, **extra}
    done = subprocess.run([sys.executable, "-c", ONE_START], env=env, capture_output=True, text=True, check=True)
    return [float(x) for x in done.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="one round (tests/flows/test_bench_smoke.py)")
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 1
    home = tempfile.mkdtemp(prefix="citeline-bench-prefect-")
    start(home, DEFAULTS)  # creates the database and registers the block types once, untimed
    print(f"{cpu_model()}; load average {os.getloadavg()[0]:.2f} before")
    print("                         answered   flow runs 1 / 2 / 3 (s)")
    for round_ in range(1, args.rounds + 1):
        for label, extra in (("no block registration", {}), ("Prefect's defaults", DEFAULTS)):
            ready, *runs = start(home, extra)
            print(f"round {round_} {label:22s} {ready:6.2f} s   " + " / ".join(f"{r:.2f}" for r in runs))
    print(f"load average {os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
