"""Cold commands: each citeline command in a fresh process, as a person at a terminal or cron runs it.

    .venv/bin/python bench/cold_commands.py [--runs N] [--db PATH] [--smoke]

Indexes examples/docs with the packaged MiniLM into ``--db`` (once; kept for the next call),
then runs every command ``--runs`` times, each in a new interpreter (``python -m citeline``),
the variants of one command alternating so they see the same load:

- ``search`` and ``ask`` with the question embedded by the ONNX export (the default) and
  by torch (``CITELINE_QUERY_ONNX=0``, what every question cost before);
- ``status`` answered from the report kept beside an unchanged index (``kept``) and
  reading the tables as after a change (``tables``);
- ``--help`` and a no-op ``index examples/docs``: as it runs (``quick``: a sync that would
  write nothing is answered without Prefect, flows/sync_plan.py), and with a flow run
  (``--always-run``) on Prefect's temporary server and, with ``--server-home``, against the
  citeline server running there (``CITELINE_HOME=DIR citeline server start``; runtime/prefect_server.py).

Printed per command and variant: best and median wall seconds, best CPU seconds (user + sys
of the child, ``os.wait4``: the figure that moves least on a shared machine), and the
ratio of the best wall to ``--help``'s; the CPU model and the load average before and after.
``--smoke`` runs each once on a throwaway index built with the tests' fake embedder and
asserts only that they exit 0 (tests/flows/test_bench_smoke.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from citeline.index.status_cache import CACHE_FILE

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "docs"
QUESTION = "Why does dropout only apply during training?"
# The status variant that reads the tables, as the first status after a change does: the
# report kept beside them (index/status_cache.py) is removed before each such run.
READ = "tables"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the child, exit status) of one fresh process."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        print(child.stderr.read().decode(errors="replace")[-2000:], file=sys.stderr)
    child.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime, child.returncode


def commands(db: str, server_home: str | None = None) -> dict[str, list[tuple[str, list[str], dict[str, str]]]]:
    """Each command's variants: (label, argv, extra environment); the no-op index as it runs
    (``quick``: answered without Prefect), and with a flow run (``--always-run``) on Prefect's
    temporary server and against the citeline server running under ``server_home`` if given."""
    cli = [sys.executable, "-m", "citeline"]
    sync = [*cli, "index", str(EXAMPLES), "--db", db, "--no-progress"]
    onnx, torch = {}, {"CITELINE_QUERY_ONNX": "0"}
    return {
        "--help": [("", [*cli, "--help"], {})],
        "status": [("kept", [*cli, "status", "--db", db], {}), (READ, [*cli, "status", "--db", db], {})],
        "search": [("onnx", [*cli, "search", "dropout", "-k", "1", "--db", db], onnx),
                   ("torch", [*cli, "search", "dropout", "-k", "1", "--db", db], torch)],
        "ask": [("onnx", [*cli, "ask", QUESTION, "--db", db], onnx),
                ("torch", [*cli, "ask", QUESTION, "--db", db], torch)],
        "index (no-op)": [("quick", sync, {}), ("temp", [*sync, "--always-run"], {"CITELINE_PREFECT_SERVER": "off"})]
        + ([("server", [*sync, "--always-run"], {"CITELINE_HOME": server_home})] if server_home else []),
    }


def build(db: str) -> None:
    """Index examples/docs into ``db`` with the packaged MiniLM, unless it holds an index already."""
    if not (Path(db) / "meta.lance").is_dir():
        subprocess.run([sys.executable, "-m", "citeline", "index", str(EXAMPLES), "--db", db], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--db", default=str(Path(tempfile.gettempdir()) / "citeline-cold-bench"))
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--server-home", help="a CITELINE_HOME whose citeline server runs (`citeline server start`)")
    args = parser.parse_args()
    if args.smoke:
        smoke(args.db if args.db != parser.get_default("db") else tempfile.mkdtemp() + "/db")
        return
    build(args.db)
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    load = os.getloadavg()
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    table = commands(args.db, args.server_home)
    for _ in range(args.runs):
        for name, variants in table.items():
            for label, argv, extra in variants:
                if (name, label) == ("status", READ):
                    (Path(args.db) / CACHE_FILE).unlink(missing_ok=True)
                wall, cpu, code = timed(argv, {**env, **extra})
                assert code in (0, 3), f"{name} {label} exited {code}"
                results.setdefault((name, label), []).append((wall, cpu))
    help_best = min(w for w, _ in results[("--help", "")])
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; load average {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after; "
          f"{args.runs} fresh processes each")
    print(f"{'command':<16} {'variant':<6} {'best wall':>9} {'median':>8} {'best CPU':>9} {'x --help':>8}")
    for (name, label), runs in results.items():
        walls = [w for w, _ in runs]
        print(f"{name:<16} {label:<6} {min(walls):>8.2f}s {statistics.median(walls):>7.2f}s "
              f"{min(c for _, c in runs):>8.2f}s {min(walls) / help_best:>8.1f}")


def smoke(db: str) -> None:
    """Each command once on an index of the fake embedder: they run and exit 0 (no timing)."""
    fake = str(ROOT / "tests" / "fixtures" / "fake_cli.py")
    subprocess.run([sys.executable, fake, "index", str(EXAMPLES), "--db", db, "--model", "fake/hashed-bag-of-words"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    for argv in (["--help"], ["status", "--db", db], ["search", "dropout", "-k", "1", "--db", db]):
        wall, cpu, code = timed([sys.executable, fake, *argv], env)
        assert code == 0, f"{argv[0]} exited {code}"
        print(f"smoke {argv[0]}: exit 0, {wall:.2f} s")


if __name__ == "__main__":
    main()
