"""SIGTERM and SIGINT stop `citeline index` within seconds, with its summary, leaving an index `check` accepts.

A real `citeline index` process (tests/fixtures/fake_cli.py: the fake embedder and the test
extractors) stalls on a document whose extractor sleeps in its worker process (a parser stuck
in one C call), and gets a real signal, as `timeout`, `docker stop` or Ctrl-C send it.
"""
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citeline.index.check import check_index
from citeline.index.store import Store

from fakes import FAKE
from testkit import marked

FAKE_CLI = Path(__file__).resolve().parents[1] / "fixtures" / "fake_cli.py"
pytestmark = [pytest.mark.slow]
# Generous: before the fix SIGTERM to the command took 277 s (the stuck worker's 300 s --timeout).
STOPS_WITHIN_S = 20
SLOW = "fake/slow-hashed-bag-of-words"  # registered by fake_cli.py only (importing it here would register FAKE twice)


def stalled_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nThe pier office opens at nine.\n")
    (folder / "b.md").write_text("# B\n\nThe ferry leaves at ten.\n")
    (folder / "stuck.hang").write_bytes(b"HANG FOREVER")  # tests/fixtures/hostile_extractors.py
    return folder


def start_index(folder: Path, db: Path, env: dict[str, str], *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(FAKE_CLI), "index", str(folder), "--db", str(db), "--model", FAKE,
                             "--no-progress", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def wait_until_stalled(db: Path, run: subprocess.Popen, timeout: float = 240) -> None:
    """Until both good documents are written: the run is then waiting on the stuck one alone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and run.poll() is None:
        with contextlib.suppress(Exception):  # the index may be half-created on the first looks
            if Store(str(db)).count_chunks() >= 2:
                time.sleep(0.5)  # past the write's second commit (the records)
                return
        time.sleep(0.1)
    raise AssertionError(f"the run did not reach its stuck document: {run.poll()}")


def stop(run: subprocess.Popen, signum: int, group: bool) -> tuple[float, str, str]:
    """Send ``signum`` (to the process group, as `timeout` and Ctrl-C do, or to the command
    alone, as `docker stop` does); the seconds until it exited, its stdout and stderr."""
    sent = time.monotonic()
    (os.killpg if group else os.kill)(run.pid, signum)
    try:
        out, err = run.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
    return time.monotonic() - sent, out, err


def assert_stopped_cleanly(db: Path, seconds: float, code: int, out: str, err: str, signum: int) -> None:
    name = signal.Signals(signum).name
    assert code == 128 + signum, (code, out, err)
    assert seconds < STOPS_WITHIN_S, seconds
    assert "indexed 2, failed 0" in out, out
    assert f"stopped by signal {name}: 1 documents not done" in err, err
    assert "Error logging to API" not in out + err and "Traceback" not in err, err
    assert check_index(Store(str(db))) == []


def test_sigterm_to_the_process_group_stops_a_stalled_run_with_its_summary(tmp_path):
    """As `timeout 90 citeline index …` does it: the temporary Prefect server (no
    PREFECT_API_URL) is in the group too. Before: exit by the signal (-15), no summary;
    with the server killed first, `--- Error logging to API ---` twice."""
    folder, db, mark = stalled_folder(tmp_path), tmp_path / "db", secrets.token_hex(8)
    env = {**{k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}, "CITELINE_TEST_MARK": mark}
    run = start_index(folder, db, env)
    try:
        wait_until_stalled(db, run)
        seconds, out, err = stop(run, signal.SIGTERM, group=True)
        assert_stopped_cleanly(db, seconds, run.returncode, out, err, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while marked(mark) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not marked(mark), "the server or an extractor worker outlived the command"
    finally:
        for pid in marked(mark):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_command_alone_stops_it_and_the_next_run_resumes(tmp_path, cli_env, signum):
    """As `docker stop` (SIGTERM to PID 1 only) or `kill -INT PID`: before, SIGTERM waited for
    the stuck extractor's --timeout (300 s: exit after 277 s, no summary)."""
    folder, db = stalled_folder(tmp_path), tmp_path / "db"
    run = start_index(folder, db, cli_env)
    wait_until_stalled(db, run)
    seconds, out, err = stop(run, signum, group=False)
    assert_stopped_cleanly(db, seconds, run.returncode, out, err, signum)

    again = start_index(folder, db, cli_env, "--timeout", "1")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 3, out + err  # the stuck document fails at its limit; the others are current
    assert "indexed 0, failed 1, skipped 2" in out and "stuck.hang [extract] timeout" in out, out
    assert check_index(Store(str(db))) == []


def fake_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(FAKE_CLI), *args], env=env, capture_output=True, text=True,
                          timeout=300)


def test_ctrl_c_of_a_reindex_mid_way_then_gc_keeps_its_table_and_the_next_reindex_resumes(tmp_path, cli_env):
    """Ctrl-C (SIGINT to the process group) once the new table holds a document, as
    tests/e2e/test_kill.py does with kill -9. Before: KeyboardInterrupt wherever the main
    thread was, no summary, exit 1."""
    folder, db = tmp_path / "docs", tmp_path / "db"
    folder.mkdir()
    for n in range(12):
        (folder / f"note-{n:02}.md").write_text(f"# Note {n}\n\nThe ferry number {n} leaves at {n} o'clock.\n")
    assert fake_cli(cli_env, "index", str(folder), "--db", str(db), "--model", FAKE, "--no-progress").returncode == 0
    store = Store(str(db))
    live = store.active_table()
    run = subprocess.Popen([sys.executable, str(FAKE_CLI), "reindex", "--db", str(db), "--model", SLOW], env=cli_env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and run.poll() is None and not staged_documents(db):
        time.sleep(0.05)
    assert run.poll() is None, "the re-index ended before it could be interrupted"
    seconds, out, err = stop(run, signal.SIGINT, group=True)

    assert run.returncode == 130 and seconds < STOPS_WITHIN_S, (run.returncode, seconds, out, err)
    assert "NOT switched to" in out and "stopped by signal SIGINT before the switch" in err, out + err
    assert "Traceback" not in err, err
    assert store.active_table() == live and check_index(store) == []
    staged = store.staging_table()
    kept = fake_cli(cli_env, "gc", "--db", str(db), "--yes")
    assert kept.returncode == 0 and f"keeping {staged}" in kept.stdout, kept.stdout + kept.stderr
    resumed = fake_cli(cli_env, "reindex", "--db", str(db), "--model", SLOW)
    assert resumed.returncode == 0 and "switched to" in resumed.stdout, resumed.stdout + resumed.stderr
    assert store.active_table() == staged != live and check_index(store) == []


def staged_documents(db: Path) -> set[str]:
    """The documents a running re-index has written to its new table so far."""
    with contextlib.suppress(Exception):  # the table may be mid-creation
        store = Store(str(db))
        table = store.staging_table()
        if table and table != store.active_table() and store.has_table(table):
            return set(store.rows_per_document(table))
    return set()
