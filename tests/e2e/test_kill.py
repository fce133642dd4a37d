"""kill -9 at different moments of `citeline index`, then a rerun: nothing lost, nothing doubled."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from index.check import check_index
from index.store import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
pytestmark = [pytest.mark.model, pytest.mark.slow]


def start(folder, db):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    return subprocess.Popen([sys.executable, "-m", "citeline", "index", str(folder), "--db", str(db),
                             "--no-progress"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True, text=True)


def wait_for_rows(db: Path, timeout: float = 120) -> None:
    """Until the first chunks are committed, so the kill lands mid-run, between or inside writes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists() and Store(str(db)).stamp() is not None and Store(str(db)).count_chunks() > 0:
            return
        time.sleep(0.05)


@pytest.mark.parametrize("delay", [0.0, 0.4])
def test_kill_minus_9_then_rerun_leaves_a_consistent_index(tmp_path, delay):
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLES, folder)
    db = tmp_path / "db"
    victim = start(folder, db)
    wait_for_rows(db)
    time.sleep(delay)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()

    store = Store(str(db))
    for doc in store.document_rows(["doc_id", "status", "chunk_count"]):
        if doc["status"] == "indexed":  # never "indexed" with rows missing
            assert store.count_chunks(doc["doc_id"]) == doc["chunk_count"]

    rerun = start(folder, db)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert check_index(Store(str(db))) == []
    assert not list(db.glob("*.lance/data/.tmp*"))
    statuses = {d["path"]: d["status"] for d in Store(str(db)).document_rows(["path", "status"])}
    assert statuses and set(statuses.values()) == {"indexed"}
