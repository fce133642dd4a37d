"""Hundreds of failing files in one run: failures recorded in batches, not a commit each."""
from pathlib import Path

import pytest

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("prefect_harness")]
EMPTY = 300


def test_hundreds_of_failures_cost_a_bounded_number_of_commits(docs: Path, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "index"))
    index_folder(str(docs), settings)  # a live index: the documents table exists
    store = Store(settings.db)
    before = store.documents().version
    for i in range(EMPTY):
        (docs / f"empty-{i:04}.md").write_bytes(b"")

    summary = index_folder(str(docs), settings, return_state=True).result(raise_on_failure=False)

    assert (summary.failed, summary.skipped) == (EMPTY, 2)
    commits = store.documents().version - before
    # One commit per RECORD_BATCH (500) failures plus the run's compaction; was one per failure.
    assert commits <= 3, commits
    failed = store.document_rows(["status", "reason"], "status = 'failed'")
    assert len(failed) == EMPTY and {r["reason"] for r in failed} == {"empty: empty file (0 bytes)"}
    assert check_index(store) == []


class Killed(BaseException):
    """Stands for kill -9 between the documents' commits and the end of the run."""


def test_a_first_run_killed_before_it_finishes_leaves_a_full_text_index(docs: Path, tmp_path, monkeypatch):
    settings = IndexSettings(db=str(tmp_path / "index"))

    def killed(*args, **kwargs):
        raise Killed()

    monkeypatch.setattr(Store, "finish_run", killed)
    with pytest.raises(Killed):
        index_folder(str(docs), settings)
    store = Store(settings.db)
    assert store.count_chunks() > 0 and store.has_fts()
    assert check_index(store) == []  # BM25 finds every sampled chunk, if from unindexed rows
