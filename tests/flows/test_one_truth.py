"""One version of the truth per document: chunk rows committed without
their record — a writer stopped between its two commits — are never served, and the next sync
deletes them before it plans, whatever the folder did since (a file deleted, an edit undone).

The stop is the failpoint's ``crash`` (index/faults.py): an exception no handler keeps, raised
where ``kill`` would end a process, so the run commits nothing more. tests/e2e/test_failpoints.py
kills real processes at every point.
"""
import os
from pathlib import Path

import pytest

from citeline.flows.ingest import index_folder
from citeline.flows.reindex import reindex
from citeline.flows.remove import remove_path
from citeline.index import faults
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.pipeline.embed import get_embedder
from citeline.query.search import Searcher
from citeline.schemas.settings import IndexSettings
from citeline.flows.sync_plan import unchanged
from fakes import FAKE

pytestmark = [pytest.mark.usefixtures("prefect_harness")]

ZEBRAS = "Zebras graze beside the quarantined lighthouse every Thursday."


@pytest.fixture
def indexed(docs: Path, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    assert index_folder(str(docs), settings, return_state=True).is_completed()
    return docs, settings


def crash_at(monkeypatch, point: str) -> None:
    monkeypatch.setattr(faults, "_ARMED", {point: "crash"})


def stored_texts(settings: IndexSettings) -> str:
    """Every chunk row's content as the table holds it, owned or not."""
    return " ".join(r["content"] for r in Store(settings.db).chunk_rows(["content"]))


def served(settings: IndexSettings, text: str) -> set[str]:
    """Paths of the chunks search returns for ``text``, by BM25 and by vector."""
    searcher = Searcher.open(settings.db, get_embedder(settings.model))
    return {h.chunk.path for h in [*searcher.bm25(text, 5), *searcher.dense(text, 5)]
            if "zebras" in h.chunk.content.lower()}


def sync(folder: Path, settings: IndexSettings):
    state = index_folder(str(folder), settings, return_state=True)
    assert state.is_completed(), state.message
    return state.result()


def test_rows_of_a_stopped_batch_are_not_served_and_the_next_sync_deletes_them(indexed, monkeypatch):
    docs, settings = indexed
    (docs / "new.md").write_text(f"# New\n\n{ZEBRAS}\n")
    crash_at(monkeypatch, "write.between")
    state = index_folder(str(docs), settings, return_state=True)
    assert state.is_failed() and "failpoint write.between" in state.message
    assert "Zebras" in stored_texts(settings)  # the rows committed, their record did not
    assert served(settings, ZEBRAS) == set()
    assert check_index(Store(settings.db)) == []

    (docs / "new.md").unlink()  # the file goes: no record, no plan entry, yet its rows went
    monkeypatch.setattr(faults, "_ARMED", {})
    summary = sync(docs, settings)
    assert (summary.indexed, summary.deleted) == (0, 0)
    assert "Zebras" not in stored_texts(settings)
    assert check_index(Store(settings.db)) == []


def test_an_edit_undone_after_a_stopped_write_is_indexed_again(indexed, monkeypatch):
    docs, settings = indexed
    victim = docs / "04-dropout.md"
    original = victim.read_bytes()
    victim.write_bytes(original + f"\n\n{ZEBRAS}\n".encode())
    crash_at(monkeypatch, "write.between")
    assert index_folder(str(docs), settings, return_state=True).is_failed()
    assert served(settings, ZEBRAS) == set()  # the edit's rows: no record owns them

    victim.write_bytes(original)  # the edit undone: the bytes the record's hash names
    monkeypatch.setattr(faults, "_ARMED", {})
    summary = sync(docs, settings)
    assert (summary.indexed, summary.skipped) == (1, 1)
    assert "Zebras" not in stored_texts(settings)
    searcher = Searcher.open(settings.db, get_embedder(settings.model))
    assert "04-dropout.md" in {h.chunk.path for h in searcher.bm25("dropout", 3)}
    assert check_index(Store(settings.db)) == []
    assert sync(docs, settings).skipped == 2  # and the sync after it has nothing to do


def test_a_no_op_sync_does_not_skip_rows_no_record_owns(indexed, monkeypatch):
    """The shortcut that answers a sync with nothing to do (flows/sync_plan.py) runs the flow."""
    docs, settings = indexed
    victim = docs / "04-dropout.md"
    original, stat = victim.read_bytes(), victim.stat()
    victim.write_bytes(original + f"\n\n{ZEBRAS}\n".encode())
    crash_at(monkeypatch, "write.between")
    assert index_folder(str(docs), settings, return_state=True).is_failed()
    victim.write_bytes(original)
    os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # size and mtime as recorded: unread

    monkeypatch.setattr(faults, "_ARMED", {})
    assert unchanged(str(docs), settings) is None
    assert sync(docs, settings).indexed == 1
    assert "Zebras" not in stored_texts(settings)
    assert unchanged(str(docs), settings) is not None


def test_rm_stopped_between_its_commits_leaves_nothing_served(indexed, monkeypatch):
    docs, settings = indexed
    victim = docs / "04-dropout.md"
    victim.unlink()
    crash_at(monkeypatch, "delete.between")
    with pytest.raises(faults.Crashed):
        remove_path(str(victim), settings.db)
    store = Store(settings.db)
    assert [r["path"] for r in store.document_rows(["path"])] == ["10-lr-scheduler.md"]
    assert check_index(store) == []  # no record says "indexed" for rows that are gone
    searcher = Searcher.open(settings.db, get_embedder(settings.model))
    assert {h.chunk.path for h in searcher.bm25("dropout", 5)} <= {"10-lr-scheduler.md"}

    monkeypatch.setattr(faults, "_ARMED", {})
    sync(docs, settings)
    assert set(store.rows_per_document()) == {r["doc_id"] for r in store.document_rows(["doc_id"])}
    assert check_index(store) == []


def test_a_records_commit_the_disk_refuses_fails_the_documents_without_serving_their_rows(indexed, monkeypatch):
    """Item 8: the rows committed, the records commit met a full disk (LanceDB's wording): the
    documents fail at ``write`` with the cause in plain words, and the rows nobody owns are not served."""
    docs, settings = indexed
    with (docs / "04-dropout.md").open("a") as f:
        f.write(f"\n\n{ZEBRAS}\n")
    monkeypatch.setattr(faults, "_ARMED", {"write.between": "lance-enospc"})
    state = index_folder(str(docs), settings, return_state=True)
    summary = state.result(raise_on_failure=False)
    assert state.name == "DocumentsFailed" and [(f.path, f.stage) for f in summary.failures] == [
        ("04-dropout.md", "write")]
    reason = summary.failures[0].reason
    assert reason.startswith("storage: No space left on device (os error 28)"), reason
    assert ".rs:" not in reason and "lance error" not in reason and "Task run" not in reason
    assert served(settings, ZEBRAS) == set()
    assert check_index(Store(settings.db)) == []

    monkeypatch.setattr(faults, "_ARMED", {})
    assert sync(docs, settings).indexed == 1
    assert served(settings, ZEBRAS) == {"04-dropout.md"}
    assert check_index(Store(settings.db)) == []


def test_a_reindex_the_disk_refuses_names_the_write_and_its_cause(indexed, monkeypatch):
    """Item 8: not ``[embed] Task run encountered an exception RuntimeError: lance error: … structural.rs``."""
    _, settings = indexed
    monkeypatch.setattr(faults, "_ARMED", {"reindex.document": "lance-enospc"})
    state = reindex(IndexSettings(db=settings.db, model=FAKE, strategy="C"), return_state=True)
    failures = state.result(raise_on_failure=False).failures
    assert failures and {f.stage for f in failures} == {"write"}
    assert all(f.reason.startswith("No space left on device (os error 28)") and ".rs:" not in f.reason
               and "Task run" not in f.reason for f in failures), failures


def test_an_index_from_before_generations_is_read_as_it_is_and_migrated_by_a_sync(indexed):
    docs, settings = indexed
    store = Store(settings.db)
    store.documents().drop_columns(["generation"])  # as an older citeline wrote it
    store.db.open_table(store.active_table()).drop_columns(["generation"])
    searcher = Searcher.open(settings.db, get_embedder(settings.model))
    assert "04-dropout.md" in {h.chunk.path for h in searcher.bm25("dropout", 3)}
    assert check_index(store) == [] and store.needs_migration()

    assert unchanged(str(docs), settings) is None  # the flow migrates
    assert sync(docs, settings).skipped == 2  # null generations are owned: nothing read again
    assert not store.needs_migration() and unchanged(str(docs), settings) is not None
    assert check_index(store) == []


def test_the_views_of_a_document_show_only_the_rows_its_record_owns(indexed, monkeypatch):
    """``citeline chunks`` and the service's document view read what search reads."""
    from citeline.library import Index

    docs, settings = indexed
    with (docs / "04-dropout.md").open("a") as f:
        f.write(f"\n\n{ZEBRAS}\n")
    crash_at(monkeypatch, "write.between")
    assert index_folder(str(docs), settings, return_state=True).is_failed()
    chunks = Index(settings.db).chunks("04-dropout.md")
    assert not any("Zebras" in c.content for c in chunks)
