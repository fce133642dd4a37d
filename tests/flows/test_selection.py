"""Excluded files are never read, and those indexed before are forgotten on the next sync."""
from pathlib import Path

import pytest

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.pipeline.walk import Selection
from citeline.schemas.settings import IndexSettings
from fakes import FAKE
from testkit import invoke

pytestmark = [pytest.mark.usefixtures("prefect_harness")]


def sync(folder: Path, settings: IndexSettings, **kw):
    state = index_folder(str(folder), settings, return_state=True, **kw)
    assert state.is_completed(), state.message
    return state.result()


def paths(settings: IndexSettings) -> list[str]:
    return sorted(r["path"] for r in Store(settings.db).document_rows(["path"]))


def test_an_indexed_file_excluded_later_is_forgotten(docs: Path, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    (docs / "node_modules").mkdir()
    (docs / "node_modules" / "dep.md").write_text("# Dependency\n\nNot ours to index.\n")
    (docs / "scratch.tmp").write_text("an unsupported scratch file that would fail every run\n")
    first = sync(docs, settings, selection=Selection(exclude=("*.tmp",)))
    assert (first.indexed, first.failed) == (2, 0)
    assert paths(settings) == ["04-dropout.md", "10-lr-scheduler.md"]

    (docs / ".citelineignore").write_text("*.tmp\n10-*.md\n")
    again = sync(docs, settings)
    assert (again.deleted, again.skipped, again.failed) == (1, 1, 0)
    store = Store(settings.db)
    assert paths(settings) == ["04-dropout.md"]
    assert {r["path"] for r in store.chunk_rows(["path"], owned=True)} == {"04-dropout.md"}  # as readers see
    assert check_index(store) == []


def test_cli_include_exclude_and_verify(docs: Path, tmp_path):
    db = tmp_path / "index"
    (docs / "notes.txt").write_text("Plain notes about zebras.\n")
    result = invoke("index", docs, "--db", db, "--model", FAKE, "--no-progress", "--include", "*.md",
                    "--exclude", "10-*")
    assert result.exit_code == 0, result.output
    assert sorted(r["path"] for r in Store(str(db)).document_rows(["path"])) == ["04-dropout.md"]
    result = invoke("index", docs, "--db", db, "--model", FAKE, "--no-progress", "--verify")
    assert result.exit_code == 0, result.output
    assert sorted(r["path"] for r in Store(str(db)).document_rows(["path"])) == [
        "04-dropout.md", "10-lr-scheduler.md", "notes.txt"]
    bad = invoke("index", docs, "--db", db, "--model", FAKE, "--exclude", "!")
    assert bad.exit_code == 2 and "'!' is not a gitignore-style pattern" in bad.output
