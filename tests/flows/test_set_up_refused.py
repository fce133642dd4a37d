"""A full disk before the first document: the run's set-up writes (the writer
lock's pid, the table created, the migrations and sweep, the synced root) and Prefect's home end
in one line naming the cause and the path, exit 1 — not a 62-line traceback, nor two minutes of
retries ending ``Timed out while attempting to connect to ephemeral Prefect API server``.

Real full file systems are small tmpfs mounts (root and ``mount`` needed, skipped otherwise);
the writes a real full disk cannot reach one by one are failpoints (index/faults.py).
"""
import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citeline.flows.ingest import index_folder
from citeline.runtime.temporary_server import prefect_home_problem
from citeline.index import faults
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.schemas.errors import StorageRefused
from citeline.schemas.settings import IndexSettings
from fakes import FAKE

pytestmark = [pytest.mark.usefixtures("prefect_harness")]
FAKE_CLI = Path(__file__).resolve().parents[1] / "fixtures" / "fake_cli.py"


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(FAKE_CLI), *args], env=env, capture_output=True, text=True,
                          timeout=300)


def index(env, folder: Path, db: Path) -> subprocess.CompletedProcess:
    return cli(env, "index", str(folder), "--db", str(db), "--model", FAKE, "--no-progress")


@pytest.fixture
def full_disk(tmp_path):
    """A 2 MiB tmpfs, and a function that fills it to the last byte."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root and mount privileges")

    def fill():
        with open(disk / "filler", "wb", buffering=0) as out:
            try:
                while True:
                    out.write(b"\0" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    try:
        yield disk, fill
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.parametrize("point", ["setup.create", "setup.migrate", "setup.root"])
@pytest.mark.parametrize("action", ["enospc", "lance-enospc"])
def test_a_set_up_write_the_disk_refuses_stops_the_run_in_one_line(docs, tmp_path, monkeypatch, point, action):
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    monkeypatch.setattr(faults, "_ARMED", {point: action})
    state = index_folder(str(docs), settings, return_state=True)
    refused = state.result(raise_on_failure=False)
    assert isinstance(refused, StorageRefused), refused
    assert str(refused) == (f"the index at {settings.db} could not be written: No space left on device"
                            f"{' (os error 28)' if action == 'lance-enospc' else ''} (failpoint {point}); "
                            "nothing was indexed or forgotten. Free the space and run it again")
    monkeypatch.setattr(faults, "_ARMED", {})
    assert index_folder(str(docs), settings, return_state=True).is_completed()
    assert check_index(Store(settings.db)) == []


def test_the_cli_says_a_refused_set_up_write_in_one_line(docs, tmp_path, cli_env):
    db = tmp_path / "index"
    run = index({**cli_env, "CITELINE_FAILPOINT": "setup.migrate:lance-enospc"}, docs, db)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        f"Error: the index at {db} could not be written: No space left on device (os error 28) (failpoint "
        "setup.migrate); nothing was indexed or forgotten. Free the space and run it again"], run.stderr


def test_an_index_on_a_full_disk_is_refused_in_one_line(docs, tmp_path, cli_env, full_disk):
    """A fresh index: the writer lock's pid is the first write; an index that exists, synced with a
    second folder: the synced root (the lock file keeps its page), refused by LanceDB."""
    disk, fill = full_disk
    db = disk / "index"
    assert index(cli_env, docs, db).returncode == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "note.md").write_text("# Note\n\nA note about the harbour.\n")
    fill()
    run = index(cli_env, other, db)
    assert (run.returncode, run.stderr.strip().splitlines()) == (1, [
        f"Error: the index at {db} could not be written: No space left on device (os error 28); nothing was "
        "indexed or forgotten. Free the space and run it again"]), run.stderr
    run = index(cli_env, docs, disk / "fresh")
    assert (run.returncode, run.stderr.strip().splitlines()) == (1, [
        f"Error: cannot write an index at {disk / 'fresh'}: No space left on device "
        f"({disk / 'fresh' / '.citeline-writer.lock'})"]), run.stderr
    (disk / "filler").unlink()
    assert index(cli_env, other, db).returncode == 0
    assert check_index(Store(str(db))) == []


def test_prefect_home_on_a_full_disk_is_said_before_the_temporary_server_starts(docs, tmp_path, full_disk):
    """No PREFECT_API_URL: the flow run would start Prefect's temporary server with its database
    in a fresh PREFECT_HOME on the full disk."""
    disk, fill = full_disk
    home = disk / "prefect-home"
    env = {**{k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}, "PREFECT_HOME": str(home),
           "CITELINE_PREFECT_SERVER": "off"}
    assert "only 2.0 MiB free, 16 MiB needed" in prefect_home_problem(home)
    fill()
    began = time.monotonic()
    run = index(env, docs, tmp_path / "index")
    assert (run.returncode, run.stderr.strip().splitlines()) == (1, [
        f"Error: Prefect's home {home} cannot hold the temporary Prefect server's database: No space left on "
        "device. Free space there, set PREFECT_HOME to a folder on another disk, or point PREFECT_API_URL at a "
        "running server"]), run.stderr[-3000:]
    print(f"refused in {time.monotonic() - began:.1f} s")
    assert not (tmp_path / "index").exists()


def test_prefect_home_that_cannot_be_a_folder_is_said_in_one_line(tmp_path):
    """Without a mount: a PREFECT_HOME under a file (what root's permissions cannot hide)."""
    (tmp_path / "file").write_text("")
    assert prefect_home_problem(tmp_path / "file" / "home").startswith(
        f"Prefect's home {tmp_path / 'file' / 'home'} cannot hold the temporary Prefect server's database: "
        f"Not a directory: {tmp_path / 'file' / 'home'}.")
    assert prefect_home_problem(tmp_path / "fine", min_free=0) is None


@pytest.mark.parametrize("command", [["rm", "{docs}/broken.pdf"], ["gc", "--yes", "--grace-days", "0"], ["retry"],
                                     ["reindex", "--model", FAKE, "--strategy", "C"]])
def test_every_writing_command_says_a_full_disk_in_one_line(docs, tmp_path, cli_env, full_disk, command):
    """rm, gc, retry and reindex on an index whose disk is full: one line naming the cause (and the
    index), exit 1, and the index as it was: a run afterwards, with space, completes and checks clean."""
    disk, fill = full_disk
    db = disk / "index"
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7 not really")  # a failed document for retry
    (docs / "note.md").write_text("# Note\n\nA note about the harbour.\n")
    assert index(cli_env, docs, db).returncode == 3
    (docs / "note.md").unlink()  # forgotten, its rows kept for the grace period: gc's work
    assert index(cli_env, docs, db).returncode == 0  # broken.pdf still failing: not new, not read again
    fill()
    args = [a.format(docs=docs) for a in command]
    run = cli(cli_env, *args, "--db", str(db))
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr[-3000:]
    assert lines[0].startswith("Error: ") and "No space left on device" in lines[0], lines
    assert ".rs:" not in lines[0] and "Traceback" not in run.stderr
    (disk / "filler").unlink()
    assert check_index(Store(str(db))) == []
    again = index(cli_env, docs, db)
    assert again.returncode == 0, again.stdout + again.stderr
    assert check_index(Store(str(db))) == []
