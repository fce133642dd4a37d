"""`citeline check` reads one version of each table, whatever a writer commits meanwhile."""
from pathlib import Path

import lancedb
import pytest

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("prefect_harness")]


class WriterBetweenReads(Store):
    """Another process commits right after the check has read the document records and before
    it reads the chunks: it deletes one document's chunks, the first of the two commits with
    which a sync forgets a deleted document (``Store.delete_documents``). The commit is a real
    new LanceDB version of the chunks table."""

    def __init__(self, uri: str, victim: str):
        super().__init__(uri)
        self.victim, self.writes = victim, []  # a list, shared with any copy the check makes

    def document_rows(self, columns=None, where=None):
        rows = super().document_rows(columns, where)
        if not self.writes:
            self.writes.append(self.victim)
            other = lancedb.connect(self.uri)  # the writer's own connection
            other.open_table(Store(self.uri).active_table()).delete(f"doc_id = '{self.victim}'")
        return rows


def test_a_commit_during_the_check_is_not_reported_as_a_violation(docs: Path, tmp_path):
    db = str(tmp_path / "db")
    assert index_folder(str(docs), IndexSettings(db=db), return_state=True).is_completed()
    store = WriterBetweenReads(db, victim=Store(db).document_rows(["doc_id"])[0]["doc_id"])

    assert check_index(store) == []  # one version: the books balanced when the check began
    assert store.writes == [store.victim]
    after = check_index(Store(db))  # the commit did land: a check started now sees it
    assert {v.rule for v in after} >= {"chunk_count", "rows"}
