"""Scale-out: the same sync prepared on a Dask LocalCluster gives the same rows and counts.

Both runs go through the CLI in child processes, as an operator would: Dask workers
are separate processes that import the project and load the model themselves. Both use the
test session's Prefect server (``cli_env``), as test_dask_cluster does: a temporary server
per run cost tens of seconds each and is not what this test is about (test_orphan_server
and test_terminal_* cover it).
"""
import subprocess
import sys

import pytest

from citeline.index.check import check_index
from citeline.index.store import Store

pytestmark = [pytest.mark.model, pytest.mark.slow]


def index(folder, db, env: dict[str, str], *extra):
    done = subprocess.run([sys.executable, "-m", "citeline", "index", str(folder), "--db", str(db),
                           "--no-progress", *extra], capture_output=True, text=True, timeout=400, env=env)
    assert done.returncode == 3, done.stderr[-3000:]  # 3: the run finished, bad.md failed
    return done.stdout


def test_dask_local_cluster_matches_in_process(docs, tmp_path, cli_env):
    (docs / "bad.md").write_bytes(b"caf\xe9 latin-1\x00\x01")
    here, there = tmp_path / "threads", tmp_path / "dask"
    threads_out = index(docs, here, cli_env)
    dask_out = index(docs, there, cli_env, "--dask", "local")
    assert threads_out == dask_out and "FAILED bad.md [extract] undecodable" in dask_out
    rows = lambda db: sorted((r["chunk_id"], r["content"]) for r in Store(str(db)).chunk_rows(["chunk_id", "content"]))
    assert rows(here) == rows(there) and len(rows(there)) > 0
    assert check_index(Store(str(there))) == []
