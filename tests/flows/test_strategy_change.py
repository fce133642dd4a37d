"""A chunking-strategy change re-chunks the stored canonical text: nothing is extracted again."""
import pytest

from citeline.pipeline import prepare as prepare_module
from citeline.flows.ingest import index_folder
from citeline.flows.reindex import reindex
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings
from fakes import FAKE

pytestmark = [pytest.mark.usefixtures("prefect_harness")]


def test_strategy_change_never_extracts_again(docs, tmp_path, monkeypatch):
    settings = IndexSettings(model=FAKE, db=str(tmp_path / "index"))
    index_folder(str(docs), settings)
    store = Store(settings.db)
    canonical = {r["doc_id"]: r["canonical"] for r in store.document_rows(["doc_id", "canonical"])}

    def no_extraction(*args, **kwargs):
        raise AssertionError("a strategy change must not extract documents again")

    monkeypatch.setattr(prepare_module, "extract_bytes", no_extraction)
    for path in docs.iterdir():  # the source files are not even needed any more
        path.unlink()
    summary = reindex(IndexSettings(model=FAKE, db=settings.db, strategy="C"))

    assert summary.switched and store.stamp().strategy == "C"
    rows = store.chunk_rows(["doc_id", "text", "content"])
    assert {r["doc_id"] for r in rows} == set(canonical)
    assert all(r["text"] == r["content"] for r in rows)  # strategy C: no "[Title > Section]" header
    assert {r["canonical"] for r in store.document_rows(["canonical"])} == set(canonical.values())
    assert check_index(store) == []
