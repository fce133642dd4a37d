"""A document deleted between two re-indexes stays deleted."""
import shutil
from pathlib import Path

import pytest
from testkit import INT8, needs_int8

from citeline.flows.ingest import index_folder
from citeline.flows.reindex import reindex
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.pipeline.prepare import doc_id_for
from citeline.schemas.settings import IndexSettings
from citeline.schemas.tables import chunks_table_name
from citeline.tasks.reembed import reembed_document
from citeline.runtime.handles import stamp_for

pytestmark = [
    pytest.mark.model,
    pytest.mark.usefixtures("prefect_harness"),
    needs_int8,
]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
DEFAULT = "all-MiniLM-L6-v2"
SECRET = "dropout"  # a word only the deleted document (04-dropout.md) is about


@pytest.fixture
def three(tmp_path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("04-dropout.md", "07-lstm.md", "10-lr-scheduler.md"):
        shutil.copy(EXAMPLES / name, folder / name)
    return folder


def assert_gone(store: Store, doc_id: str) -> None:
    """No chunks table the index serves holds the document, and the books balance (a forgotten
    document's rows are kept, unowned and unserved, for the grace period: readers' view is ``owned``)."""
    assert store.count_chunks(doc_id, owned=True) == 0
    assert not [r for r in store.chunk_rows(["content"], owned=True) if SECRET in r["content"].lower()]
    assert check_index(store) == []


def test_a_document_deleted_between_two_reindexes_is_not_served_again(three, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "index"))
    index_folder(str(three), settings)
    store = Store(settings.db)
    assert reindex(IndexSettings(db=settings.db, model=INT8)).switched
    victim = three / "04-dropout.md"
    victim.unlink()
    assert index_folder(str(three), IndexSettings(db=settings.db, model=INT8)).deleted == 1
    assert_gone(store, doc_id_for(str(victim)))

    summary = reindex(IndexSettings(db=settings.db, model=DEFAULT))  # reuses the first table

    assert summary.switched and store.stamp().embed_model.endswith(DEFAULT)
    assert summary.rows == store.count_chunks() == sum(r["chunk_count"] for r in store.document_rows())
    assert_gone(store, doc_id_for(str(victim)))


def test_a_resumed_reindex_does_not_publish_a_document_deleted_meanwhile(three, tmp_path):
    """An interrupted re-index staged the document; it is deleted and synced; the resumed
    re-index must not bring it back (the kill itself: tests/e2e/test_kill.py)."""
    settings = IndexSettings(db=str(tmp_path / "index"))
    index_folder(str(three), settings)
    store = Store(settings.db)
    target = IndexSettings(db=settings.db, model=INT8)
    new = stamp_for(target)
    store.staging(new)
    victim = three / "04-dropout.md"
    record = store.document_rows(where=f"doc_id = '{doc_id_for(str(victim))}'")[0]
    reembed_document.fn(record, new, target)  # a run that died after one document
    assert store.count_chunks(record["doc_id"], table=chunks_table_name(new)) > 0
    victim.unlink()
    assert index_folder(str(three), settings).deleted == 1

    summary = reindex(target)

    assert summary.switched and store.stamp() == new
    assert_gone(store, record["doc_id"])
