"""What one sync costs the Prefect server's database: rows and bytes, SQLite and PostgreSQL.

    .venv/bin/python bench/prefect_growth.py [N] [CHANGED]   # N notes (default 10000), CHANGED of them edited (default N/100)
    .venv/bin/python bench/prefect_growth.py --smoke         # 10 notes, 1 edited, counts stable for 2 s: no figure

A folder of N notes (bench/small_files.py's) is indexed once, serverless (not measured). Then,
for each server database (SQLite: `prefect server start`'s default; PostgreSQL: a throwaway
cluster, tests/fixtures/pgcluster.py), a server is started on an empty database, a copy of the
index is synced once (not measured: it allocates every table's first pages), then twice more in
a fresh process each, as a scheduled run does: once with nothing changed (a no-op sync) and
once after CHANGED notes were edited. After each sync, once the server has
written its events (counts stable for 10 s), every table's rows and bytes are read from the
database (SQLite's dbstat, PostgreSQL's pg_total_relation_size) and printed as the difference
the sync made. The fake embedder of the tests stands in for the model: the runs' records, not
the encoding, are what is measured.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
sys.path.insert(0, str(BENCH))

TABLES = ("flow_run", "flow_run_state", "task_run", "task_run_state", "log", "artifact", "artifact_collection",
          "events", "event_resources")
ENV = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
QUIET_S = [10.0]  # how long the counts must stay still before they are read (the smoke waits less)


def child(mode: str, folder: str, db: str) -> None:
    """In a fresh process: index ``folder`` into ``db`` (serverless for ``build``, else against
    PREFECT_API_URL), printing the summary line."""
    from citeline.runtime import env

    env.apply()
    from fakes import FAKE, HashEmbedder

    from citeline.flows.ingest import index_folder
    from citeline.pipeline import embed
    from citeline.schemas.settings import IndexSettings
    from citeline.runtime.log import configure

    configure()
    if mode == "build":
        from small_files import write_corpus

        write_corpus(Path(folder), int(db.split("#")[1]))
        db = db.split("#")[0]
    with embed.registered(FAKE, lambda precision, batch_size: HashEmbedder()):
        state = index_folder(folder, IndexSettings(db=db, model=FAKE), return_state=True)
    print(state.name, state.result(raise_on_failure=False).line(), flush=True)


def run_child(mode: str, folder: Path, db: str, env: dict) -> str:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", mode, str(folder), db], env={**os.environ, **env},
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{mode} failed: {done.stderr[-3000:]}")
    return f"{done.stdout.strip().splitlines()[-1]} ({time.perf_counter() - started:.0f} s)"


def sqlite_sizes(path: Path) -> dict[str, tuple[int, int]]:
    """rows and bytes per table (indexes counted with their table: dbstat names each b-tree)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        trees = dict(con.execute("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')"))
        sizes: dict[str, int] = {}
        for name, size in con.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
            table = trees.get(name, name)
            sizes[table] = sizes.get(table, 0) + size
        return {t: (con.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0], sizes.get(t, 0)) for t in TABLES}
    finally:
        con.close()


def postgres_sizes(psql: list[str]) -> dict[str, tuple[int, int]]:
    query = " UNION ALL ".join(f"SELECT '{t}', (SELECT COUNT(*) FROM \"{t}\"), pg_total_relation_size('\"{t}\"')"
                               for t in TABLES)
    out = subprocess.run([*psql, "-c", query], check=True, capture_output=True, text=True).stdout
    return {name: (int(rows), int(size)) for name, rows, size in (line.split("\t") for line in out.splitlines())}


def settled(read, limit_s: float = 180.0) -> dict:
    """The sizes once they stopped changing for ``QUIET_S`` (the server writes events in batches)."""
    quiet_s = QUIET_S[0]
    last, since, deadline = read(), time.monotonic(), time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(2)
        now = read()
        if {t: r for t, (r, _) in now.items()} != {t: r for t, (r, _) in last.items()}:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return now
    return last


def start_server(home: Path, env: dict) -> tuple[subprocess.Popen, str]:
    from testkit import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                             str(port)], env={**os.environ, **env, "PREFECT_HOME": str(home)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the Prefect server did not start in 300 s")


def edit(folder: Path, count: int, offset: int) -> None:
    """Append a line to ``count`` notes spread over the folder, starting at the ``offset``-th."""
    notes = sorted(folder.glob("note-*.md"))
    step = max(len(notes) // max(count, 1), 1)
    for note in notes[offset::step][:count]:
        note.write_text(note.read_text() + "\nEdited: warm restarts.\n")


def measure(backend: str, tmp: Path, docs: Path, index: Path, changed: int, offset: int) -> Path:
    """Both syncs against a new server on ``backend``, on a copy of ``index`` (current with
    ``docs``: the same folder, so every stat matches); the copy, current again, is returned."""
    from pgcluster import postgres_cluster

    home = tmp / f"home-{backend}"
    db = tmp / f"index-{backend}"
    shutil.copytree(index, db)
    if backend == "postgres":
        cluster = postgres_cluster()
        url, psql = cluster.__enter__()
        env, read = {**ENV, "PREFECT_API_DATABASE_CONNECTION_URL": url}, lambda: postgres_sizes(psql)
    else:
        cluster = None
        env, read = dict(ENV), lambda: sqlite_sizes(home / "prefect.db")
    proc, api = start_server(home, env)
    try:
        # one sync first, not measured: a table's first row allocates its (and its indexes') first
        # pages, which a fresh database would otherwise charge to the no-op sync
        run_child("sync", docs, str(db), {**env, "PREFECT_API_URL": api})
        before = settled(read)
        lines = []
        for label, prepare in (("no-op sync", lambda: None), (f"{changed} files changed", lambda: edit(docs, changed, offset))):
            prepare()
            line = run_child("sync", docs, str(db), {**env, "PREFECT_API_URL": api})
            after = settled(read)
            lines.append((label, line, {t: (after[t][0] - before[t][0], after[t][1] - before[t][1]) for t in TABLES}))
            before = after
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        if cluster is not None:
            cluster.__exit__(None, None, None)
    print(f"\n## {backend}")
    for label, line, delta in lines:
        print(f"\n{label}: {line}")
        print("| table | rows | bytes |\n|---|---:|---:|")
        for table, (rows, size) in delta.items():
            print(f"| {table} | {rows:+,} | {size:+,} |")
        print(f"| **all** | **{sum(r for r, _ in delta.values()):+,}** | **{sum(s for _, s in delta.values()):+,}** |")
    return db


def main(n: int, changed: int) -> None:
    print(f"machine: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; {n} notes, {changed} changed")
    with tempfile.TemporaryDirectory(prefix="citeline-growth-") as tmp:
        tmp = Path(tmp)
        folder, index = tmp / "docs", tmp / "index"
        print("first index (serverless, not measured):", run_child("build", folder, f"{index}#{n}", ENV), flush=True)
        for offset, backend in enumerate(("sqlite", "postgres")):
            index = measure(backend, tmp, folder, index, changed, offset)
    print(f"\nload at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*sys.argv[2:5])
    elif sys.argv[1:2] == ["--smoke"]:
        QUIET_S[0] = 2.0
        main(10, 1)
    else:
        count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
        main(count, int(sys.argv[2]) if len(sys.argv) > 2 else max(count // 100, 1))
