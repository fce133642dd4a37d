"""Two `citeline index` runs on one index at once: one waits or leaves, nothing is doubled."""
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from citeline.index.check import check_index
from citeline.index.lock import writer_lock
from citeline.index.store import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
pytestmark = [pytest.mark.model, pytest.mark.slow]


def start(folder: Path, db: Path, env: dict[str, str], *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "citeline", "index", str(folder), "--db", str(db),
                             "--no-progress", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def counts(stdout: str) -> tuple[int, int]:
    """(indexed, skipped) from the run's summary line."""
    found = re.search(r"indexed (\d+), failed \d+, skipped (\d+)", stdout)
    assert found, stdout
    return int(found.group(1)), int(found.group(2))


def test_concurrent_runs_wait_or_exit_clearly_and_never_duplicate(tmp_path, cli_env):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("04-dropout.md", "10-lr-scheduler.md"):
        shutil.copy(EXAMPLES / name, folder / name)
    db = tmp_path / "db"

    # The test holds the lock, so both runs below meet a writer whatever their start-up time.
    with writer_lock(str(db)):
        waiter = start(folder, db, cli_env, "--wait", "600")
        impatient = start(folder, db, cli_env)
        out, err = impatient.communicate(timeout=300)
        assert impatient.returncode == 1, out + err
        assert f"is being written by process {os.getpid()}" in err and "--wait SECONDS" in err
        assert waiter.poll() is None  # it cannot have finished: the lock is still held
        second_waiter = start(folder, db, cli_env, "--wait", "600")
    runs = [p.communicate(timeout=600) for p in (waiter, second_waiter)]

    assert [p.returncode for p in (waiter, second_waiter)] == [0, 0], runs
    # Whichever got the lock first indexed both documents; the other found them current.
    assert sorted(counts(out) for out, _ in runs) == [(0, 2), (2, 0)]
    store = Store(str(db))
    ids = Counter(r["chunk_id"] for r in store.chunk_rows(["chunk_id"]))
    assert ids and max(ids.values()) == 1
    assert sum(r["chunk_count"] for r in store.document_rows(["chunk_count"])) == len(ids)
    assert check_index(store) == []
