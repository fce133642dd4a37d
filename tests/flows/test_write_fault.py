"""A write that fails for one document keeps its old version searchable; the rest go on."""
from pathlib import Path

import pytest

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.pipeline.embed import get_embedder
from citeline.pipeline.prepare import doc_id_for
from citeline.query.search import Searcher
from citeline.schemas.settings import IndexSettings
from fakes import FAKE

pytestmark = [pytest.mark.usefixtures("prefect_harness")]


def test_a_failed_write_leaves_the_old_version_searchable(docs: Path, tmp_path, monkeypatch):
    settings = IndexSettings(model=FAKE, db=str(tmp_path / "index"))
    assert index_folder(str(docs), settings, return_state=True).is_completed()
    store = Store(settings.db)
    victim, bystander = docs / "04-dropout.md", docs / "10-lr-scheduler.md"
    victim_id = doc_id_for(str(victim))
    old_rows = {r["chunk_id"]: r for r in store.chunk_rows(where=f"doc_id = '{victim_id}'")}
    old_chunk = next(r for r in old_rows.values() if "dropout" in r["content"].lower())
    victim.write_text(victim.read_text() + "\n\nA new closing paragraph about zebras crossing.\n")
    bystander.write_text(bystander.read_text() + "\n\nA new closing paragraph about giraffes.\n")

    real_replace = Store.replace_chunks_of

    def disk_full_for_the_victim(self, stamp, docs, *args, **kwargs):
        if victim_id in docs:  # the victim's batch is refused, so it is written again one by one
            raise OSError(28, "No space left on device (injected fault)")
        return real_replace(self, stamp, docs, *args, **kwargs)

    monkeypatch.setattr(Store, "replace_chunks_of", disk_full_for_the_victim)
    state = index_folder(str(docs), settings, return_state=True)
    summary = state.result(raise_on_failure=False)

    assert state.name == "DocumentsFailed" and (summary.indexed, summary.failed) == (1, 1)
    assert summary.failures[0].path == "04-dropout.md" and summary.failures[0].stage == "write"
    record = store.document_rows(where=f"doc_id = '{victim_id}'")[0]
    assert (record["status"], record["stage"]) == ("failed", "write")
    assert record["reason"] == "os-error (OSError): No space left on device (injected fault)"
    assert record["chunk_count"] == len(old_rows) == store.count_chunks(victim_id)
    assert {r["chunk_id"] for r in store.chunk_rows(["chunk_id"], f"doc_id = '{victim_id}'")} == set(old_rows)
    searcher = Searcher.open(settings.db, get_embedder(settings.model))
    assert old_chunk["chunk_id"] in {h.chunk_id for h in searcher.dense(old_chunk["content"], 3)}
    assert old_chunk["chunk_id"] in {h.chunk_id for h in searcher.bm25(old_chunk["content"], 3)}
    contents = " ".join(r["content"] for r in store.chunk_rows(["content"]))
    assert "zebras" not in contents and "giraffes" in contents
    assert check_index(store) == []

    monkeypatch.setattr(Store, "replace_chunks_of", real_replace)
    rerun = index_folder(str(docs), settings, return_state=True).result()
    assert (rerun.indexed, rerun.failed, rerun.skipped) == (1, 0, 1)
    assert store.document_rows(["status"], f"doc_id = '{victim_id}'")[0]["status"] == "indexed"
    assert "zebras" in " ".join(r["content"] for r in store.chunk_rows(["content"]))
    assert check_index(store) == []
