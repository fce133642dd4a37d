"""`citeline status` answers an unchanged local index from the report kept beside its
tables, without importing LanceDB (~0.7-1.0 s of a cold status here), and is
never stale: any commit to any table makes the next status read the tables again."""
from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import pytest

from testkit import EXAMPLES, probe_cli, synced_index
from citeline.index import status_cache

pytestmark = pytest.mark.usefixtures("prefect_harness")


def status(db: str) -> tuple[dict, bool]:
    """(the JSON report, whether the process imported lancedb) of a fresh `citeline status`."""
    report = probe_cli(["status", "--json", "--db", db], ["lancedb"], timeout=120)
    assert report.exit == 0, report.stdout
    return json.loads(report.stdout), report.imported == ["lancedb"]


@pytest.fixture
def index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("docs")
    for name in ("04-dropout.md", "10-lr-scheduler.md"):
        shutil.copy(EXAMPLES / name, folder / name)
    return folder, synced_index(folder, tmp_path_factory, indexed=2)


def names(report: dict) -> list[str]:
    return [d["name"] for d in report["documents"]]


def test_an_unchanged_index_is_reported_without_lancedb_and_identically(index):
    _, idx = index
    first, imported_first = status(idx.uri)
    second, imported_second = status(idx.uri)
    assert imported_first and not imported_second
    assert second == first and names(first) == ["04-dropout.md", "10-lr-scheduler.md"]


def test_every_change_is_seen_by_the_next_status(index):
    folder, idx = index
    status(idx.uri)
    idx.delete(str(folder / "04-dropout.md"))
    after_rm, imported = status(idx.uri)
    assert imported and names(after_rm) == ["10-lr-scheduler.md"]
    shutil.copy(EXAMPLES / "07-lstm.md", folder / "07-lstm.md")
    assert idx.sync(str(folder)).indexed == 2  # the deleted one is back, and the new one
    after_sync, imported = status(idx.uri)
    assert imported and names(after_sync) == ["04-dropout.md", "07-lstm.md", "10-lr-scheduler.md"]
    assert after_sync["rows"] > after_rm["rows"]


def test_a_corrupt_or_foreign_cache_file_is_computed_again(index):
    _, idx = index
    truth, _ = status(idx.uri)
    cache = Path(idx.uri) / status_cache.CACHE_FILE
    for junk in ("{not json", json.dumps({"key": "another", "report": {"documents": []}}), "[]"):
        cache.write_text(junk)
        report, imported = status(idx.uri)
        assert imported and report == truth
    assert status(idx.uri) == (truth, False)  # and stored again


def test_the_key_changes_with_a_commit_and_with_the_inputs(index):
    folder, idx = index
    where = Path(idx.uri)
    before = status_cache.cache_key(where, {"extractors": {"md": "1"}})
    assert before == status_cache.cache_key(where, {"extractors": {"md": "1"}})
    assert before != status_cache.cache_key(where, {"extractors": {"md": "2"}})
    idx.delete(str(folder / "04-dropout.md"))
    assert status_cache.cache_key(where, {"extractors": {"md": "1"}}) != before


def test_a_folder_it_cannot_write_leaves_status_working(tmp_path):
    status_cache.save(tmp_path / "no-such-folder", "k", {"documents": []})  # no exception
    (tmp_path / "a-file").write_text("")
    status_cache.save(tmp_path / "a-file", "k", {"documents": []})
    assert status_cache.load(tmp_path / "no-such-folder", "k") is None
    assert status_cache.cache_key(tmp_path / "no-such-folder", {}) is None
    assert status_cache.cache_key(tmp_path, {}) is None  # no table: nothing to key


def test_a_full_disk_or_a_killed_status_leaves_the_kept_report_whole(tmp_path, monkeypatch):
    status_cache.save(tmp_path, "old", {"documents": ["kept"]})
    (tmp_path / f"{status_cache.CACHE_FILE}12345.tmp").write_text('{"key": "half')  # kill -9 mid-write

    def full_disk(obj, out):
        out.write('{"key": "new", "rep')
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(status_cache.json, "dump", full_disk)
    status_cache.save(tmp_path, "new", {"documents": []})
    assert status_cache.load(tmp_path, "old") == {"documents": ["kept"]}
    assert status_cache.load(tmp_path, "new") is None
    assert [p.name for p in tmp_path.iterdir()] == [status_cache.CACHE_FILE]  # no temporary file left
