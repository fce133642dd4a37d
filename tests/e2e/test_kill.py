"""kill -9 at different moments of `citeline index`, then a rerun: nothing lost, nothing doubled."""
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citeline.index.check import check_index
from citeline.index.store import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
pytestmark = [pytest.mark.model, pytest.mark.slow]


def start(folder, db, env: dict[str, str]):
    return subprocess.Popen([sys.executable, "-m", "citeline", "index", str(folder), "--db", str(db),
                             "--no-progress"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True, text=True)


def wait_for_progress(db: Path, victim: subprocess.Popen, rows_before: int, timeout: float = 120) -> None:
    """Until the run has committed chunks beyond ``rows_before`` (so the kill lands mid-run,
    between or inside writes), or has exited on its own."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and victim.poll() is None:
        if db.exists() and Store(str(db)).stamp() is not None and Store(str(db)).count_chunks() > rows_before:
            return
        time.sleep(0.05)


def assert_no_indexed_document_misses_rows(db: Path) -> None:
    store = Store(str(db))
    for doc in store.document_rows(["doc_id", "status", "chunk_count"]):
        if doc["status"] == "indexed":
            assert store.count_chunks(doc["doc_id"]) == doc["chunk_count"]


def test_kill_minus_9_three_times_then_rerun_leaves_a_consistent_index(tmp_path, cli_env):
    """Killed at three different moments of successive runs: right at the first new
    commit, 0.4 s and 1 s after it; each restart resumes the previous one's work."""
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLES, folder)
    db = tmp_path / "db"
    for delay in (0.0, 0.4, 1.0):
        rows_before = Store(str(db)).count_chunks() if db.exists() else 0
        victim = start(folder, db, cli_env)
        wait_for_progress(db, victim, rows_before)
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):  # a run may finish before its kill
            os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        assert_no_indexed_document_misses_rows(db)

    rerun = start(folder, db, cli_env)
    out, _ = rerun.communicate(timeout=600)  # 137 s alone; over 300 s once beside another xdist worker
    assert rerun.returncode == 0, out
    assert check_index(Store(str(db))) == []
    assert not list(db.glob("*.lance/data/.tmp*"))
    statuses = {d["path"]: d["status"] for d in Store(str(db)).document_rows(["path", "status"])}
    assert statuses and set(statuses.values()) == {"indexed"}


def citeline(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "citeline", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def staged_documents(db: Path) -> tuple[str | None, set[str]]:
    """The table a re-index is building and the documents it holds so far."""
    store = Store(str(db))
    table = store.staging_table()
    if table is None or table == store.active_table() or not store.has_table(table):
        return table, set()
    return table, set(store.rows_per_document(table))


def test_kill_minus_9_of_a_reindex_then_a_delete_and_a_sync_then_resume_serves_no_deleted_text(tmp_path, cli_env):
    """The interrupted re-index's table survives `gc --yes`, and the resumed
    re-index drops the rows of the document deleted meanwhile instead of publishing them."""
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLES, folder)
    db = tmp_path / "db"
    assert citeline(cli_env, "index", str(folder), "--db", str(db), "--no-progress").returncode == 0
    victim = subprocess.Popen([sys.executable, "-m", "citeline", "reindex", "--db", str(db), "--model", "minilm-int8"],
                              env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline, staged = time.monotonic() + 240, set()
    while time.monotonic() < deadline and victim.poll() is None and not staged:
        table, staged = staged_documents(db)
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    assert staged, "the re-index switched (or died) before it could be killed mid-way"
    store = Store(str(db))
    assert store.active_table() != table
    gone = next(d for d in store.document_rows(["doc_id", "source"]) if d["doc_id"] in staged)
    Path(gone["source"]).unlink()
    assert "deleted 1" in citeline(cli_env, "index", str(folder), "--db", str(db), "--no-progress").stdout

    kept = citeline(cli_env, "gc", "--db", str(db), "--yes")
    assert kept.returncode == 0 and f"keeping {table}" in kept.stdout, kept.stdout + kept.stderr
    resumed = citeline(cli_env, "reindex", "--db", str(db), "--model", "minilm-int8")

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert store.active_table() == table and store.count_chunks(gone["doc_id"]) == 0
    assert check_index(store) == []
