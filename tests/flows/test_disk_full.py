"""Disk full at every write point of a sync: a summary always, and a state the next run heals.

The fault is sticky, as a full disk is: from the first write at the chosen point on,
every write of the index raises ``OSError(ENOSPC)`` — the failure recorder's too.
"""
import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from lancedb.table import LanceTable

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.index import compaction
from citeline.index.tokens import TokenVectors
from citeline.schemas.settings import IndexSettings
from citeline.schemas.status import RunSummary

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("prefect_harness")]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"

# Every method through which a sync writes the index; the first of the pair is where the disk fills.
WRITES = {
    "chunk-commit": (Store, "replace_chunks_of"),
    "record-upsert": (Store, "upsert_documents"),
    "fts-build": (LanceTable, "create_index"),
    "optimize": (LanceTable, "optimize"),
    "token-vectors": (TokenVectors, "write_rows"),
    "delete": (Store, "delete_documents"),
    "token-prune": (TokenVectors, "prune"),
    "token-compaction": (compaction, "optimize"),
}


class DiskFull:
    """Once ``point`` is reached, every write raises ENOSPC (until the test ends)."""

    def __init__(self, point: str, monkeypatch):
        self.full = False
        for name, (owner, method) in WRITES.items():
            monkeypatch.setattr(owner, method, self._wrap(getattr(owner, method), name == point))

    def _wrap(self, real, fills):
        def write(*args, **kwargs):
            self.full = self.full or fills
            if self.full:
                raise OSError(errno.ENOSPC, "No space left on device (injected)")
            return real(*args, **kwargs)
        return write


@pytest.fixture
def synced(tmp_path):
    """An index of three documents with token vectors; then one is edited, one added, one deleted."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("04-dropout.md", "07-lstm.md"):
        shutil.copy(EXAMPLES / name, folder / name)
    (folder / "old.md").write_text("# Old\n\nA retired note about the archive shelves.\n")
    settings = IndexSettings(db=str(tmp_path / "index"), token_vectors=True)
    assert index_folder(str(folder), settings, return_state=True).is_completed()
    (folder / "04-dropout.md").write_text((folder / "04-dropout.md").read_text() + "\n\nZebras cross at dawn.\n")
    shutil.copy(EXAMPLES / "10-lr-scheduler.md", folder / "10-lr-scheduler.md")
    (folder / "old.md").unlink()
    return folder, settings


def assert_healed(folder: Path, settings: IndexSettings) -> None:
    store = Store(settings.db)
    assert check_index(store) == []
    records = {r["path"]: r["status"] for r in store.document_rows(["path", "status"])}
    assert records == {"04-dropout.md": "indexed", "07-lstm.md": "indexed", "10-lr-scheduler.md": "indexed"}
    # what readers see: a deleted file's rows are kept, unowned, for the grace period
    contents = " ".join(r["content"] for r in store.chunk_rows(["content"], owned=True))
    assert "Zebras cross at dawn" in contents and "archive shelves" not in contents
    assert TokenVectors(store, store.stamp()).missing() == []


@pytest.mark.parametrize("point", ["chunk-commit", "record-upsert", "fts-build", "optimize", "token-vectors",
                                   "token-compaction"])
def test_disk_full_at_each_write_point_ends_with_a_summary_and_the_next_run_heals(point, synced, monkeypatch):
    folder, settings = synced
    store = Store(settings.db)
    if point == "fts-build":  # an index whose full-text index must be (re)built by this run
        store.db.open_table(store.active_table()).drop_index("text_idx")
    fault = DiskFull(point, monkeypatch)

    state = index_folder(str(folder), settings, return_state=True)

    summary = state.result(raise_on_failure=False)
    assert fault.full and isinstance(summary, RunSummary), summary
    assert state.is_failed() and "No space left on device" in state.message
    print(point, "->", state.message, "| check:", sorted({v.rule for v in check_index(store)}))
    monkeypatch.undo()
    rerun = index_folder(str(folder), settings, return_state=True)
    assert rerun.is_completed(), rerun.message
    assert_healed(folder, settings)


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    return os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                                                capture_output=True).returncode == 0


def test_a_really_full_disk_ends_with_a_summary_and_the_next_run_heals(synced, tmp_path):
    folder, settings = synced
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "64m"):
        pytest.skip("mounting a tmpfs needs root and mount privileges")
    try:
        shutil.copytree(settings.db, disk / "index")
        settings = IndexSettings(db=str(disk / "index"), token_vectors=True)
        filler = disk / "filler"
        with open(filler, "wb", buffering=0) as out:  # fill the disk to the last byte
            try:
                while True:
                    out.write(b"\0" * (1 << 16))
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        state = index_folder(str(folder), settings, return_state=True)
        summary = state.result(raise_on_failure=False)
        assert isinstance(summary, RunSummary), summary
        assert not state.is_completed() and "No space left on device" in state.message
        print("tmpfs ->", state.message, "| check:", sorted({v.rule for v in check_index(Store(settings.db))}))
        filler.unlink()
        rerun = index_folder(str(folder), settings, return_state=True)
        assert rerun.is_completed(), rerun.message
        assert_healed(folder, settings)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
