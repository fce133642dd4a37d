"""``from citeline import Index``: the library surface over a small mixed folder (fake embedder)."""
from __future__ import annotations

import json
import threading

import pytest

import make
from citeline.query.cite import verify_quote
from citeline.schemas.errors import IndexMismatch, NoIndex
from citeline.pipeline import embed
from fakes import HashEmbedder
from testkit import synced_index

pytestmark = pytest.mark.usefixtures("prefect_harness")
CUT = 0.95  # the fake embedder has no calibrated cut


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    (root / "notes.md").write_text("# Notes\n\nThe harbour committee meets on Fridays at the pier.\n")
    (root / "report.pdf").write_bytes(make.two_column_pdf())
    (root / "sales.xlsx").write_bytes(make.workbook())
    (root / "bad.pdf").write_bytes(make.truncated_pdf())
    return root


@pytest.fixture(scope="module")
def index(folder, tmp_path_factory, prefect_harness):
    return synced_index(folder, tmp_path_factory, indexed=3, failed=1)


def test_import_is_lazy_and_the_class_is_the_api_one():
    import citeline
    from citeline.library import Index

    assert citeline.Index is Index
    with pytest.raises(AttributeError):
        citeline.Nope  # noqa: B018


def test_search_citations_carry_offsets_and_a_uri_at_the_place(index, folder):
    (hit,) = index.search("harbour committee Fridays pier", k=1)
    assert hit.path == "notes.md" and hit.chunk_id
    assert index.canonical(hit.document_id)[hit.start:hit.end] == hit.quote
    assert hit.uri == f"{(folder / 'notes.md').as_uri()}#char={hit.start},{hit.end}"
    data = hit.to_dict()
    assert {"chunk_id", "document_id", "path", "start", "end", "fragment", "label", "quote", "distance",
            "rerank_score", "uri"} <= set(data)
    json.dumps(data)


def test_uri_of_pdf_and_sheet_citations(index, folder):
    by_path = {c.path: c for c in index.search("turbine inspection interval hours auditors signed off", k=20)}
    assert by_path["report.pdf"].uri.startswith((folder / "report.pdf").as_uri() + "#page=")
    assert by_path["sales.xlsx"].uri.startswith((folder / "sales.xlsx").as_uri() + "#")
    assert "!" in by_path["sales.xlsx"].uri


def test_ask_is_the_ask_json_object(index):
    answer = index.ask("When does the harbour committee meet?", cut=CUT, k=2)
    data = answer.to_dict()
    assert data["refused"] is False and data["citations"][0]["uri"].startswith("file://")
    assert data["prompt"].startswith("Answer using ONLY")
    refused = index.ask("zzyzx qwertyuiop", cut=0.01)
    assert refused.refused and refused.to_dict()["citations"] == []


def test_documents_failed_first_document_and_chunks(index):
    docs = index.documents()
    assert docs[0].path == "bad.pdf" and docs[0].failed and docs[0].reason.startswith("truncated")
    assert {d.path for d in docs[1:]} == {"notes.md", "report.pdf", "sales.xlsx"}
    notes = index.document("notes.md")
    assert index.document(notes.document_id) == notes == index.document(notes.source)
    chunks = index.chunks("notes.md")
    assert len(chunks) == notes.chunk_count > 0
    canonical = index.canonical(notes.document_id)
    assert all(canonical[c.start:c.end] == c.content for c in chunks)
    assert chunks[0].to_dict()["fragment"].startswith("#char=")
    with pytest.raises(KeyError):
        index.document("missing.md")


def test_check_is_clean(index):
    report = index.check()
    assert report.ok, report.to_dict()


def test_searches_from_many_threads_agree(index):
    expected = [c.chunk_id for c in index.search("quarterly sales region revenue", k=3)]
    got, errors = [], []

    def worker():
        try:
            for _ in range(10):
                got.append([c.chunk_id for c in index.search("quarterly sales region revenue", k=3)])
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and got == [expected] * 40


def test_sync_and_delete_reopen_the_snapshot(index, folder):
    (folder / "late.md").write_text("# Late\n\nA zeppelin landed in the orchard.\n")
    summary = index.sync(str(folder))
    assert summary.indexed == 1
    assert index.search("zeppelin orchard", k=1)[0].path == "late.md"
    removal = index.delete(str(folder / "late.md"))
    assert removal.paths
    assert all(c.path != "late.md" for c in index.search("zeppelin orchard", k=5))
    (folder / "late.md").unlink()


def test_sync_takes_the_commands_include_and_exclude(index, folder):
    """`Index.sync` could not pass `citeline index`'s --include / --exclude."""
    (folder / "drafts").mkdir()
    (folder / "drafts" / "plan.md").write_text("# Plan\n\nThe zeppelin hangar stays a draft.\n")
    (folder / "memo.txt").write_text("A memo about the zeppelin hangar.\n")
    try:
        with pytest.raises(ValueError, match="'!' is not a gitignore-style pattern"):
            index.sync(str(folder), include=["!"])
        with pytest.raises(TypeError, match="a list of patterns"):
            index.sync(str(folder), exclude="drafts/")
        summary = index.sync(str(folder), exclude=["drafts/"])
        paths = {d.path for d in index.documents()}
        assert summary.indexed == 1 and "memo.txt" in paths and "drafts/plan.md" not in paths
        assert index.sync(str(folder), exclude=["memo.txt"]).deleted == 1  # excluded now: forgotten
        assert "memo.txt" not in {d.path for d in index.documents()}
    finally:
        (folder / "drafts" / "plan.md").unlink()
        (folder / "drafts").rmdir()
        (folder / "memo.txt").unlink()
        index.sync(str(folder))


def test_open_refuses_a_missing_index_and_another_model(index, tmp_path):
    from citeline import Index

    with pytest.raises(NoIndex):
        Index.open(str(tmp_path / "nothing"))
    assert not (tmp_path / "nothing").exists()
    other = "fake/other-model"  # same dimension, other model: the dangerous case
    with embed.registered(other, lambda precision, batch_size: HashEmbedder(name=other)):
        with pytest.raises(IndexMismatch):
            Index.open(index.uri, model=other)


def test_quotes_verify_against_canonical(index):
    for c in index.search("the", k=10):
        assert verify_quote(c, index.canonical(c.document_id))


def test_a_calibration_committed_while_serving_is_used_after_refresh(folder, tmp_path_factory):
    """The gate is read once per snapshot (it cost a third of a warm ask); ``citeline calibrate``
    commits to the meta table, and the service's refresh must see it."""
    from citeline.index.store import Store

    served = synced_index(folder, tmp_path_factory, indexed=3, failed=1)
    store = Store(served.uri)
    table = store.active_table()
    stored = json.loads(store.calibration(table))  # the sync calibrated its gate
    before = served.ask("harbour committee Fridays").threshold
    assert before == pytest.approx(stored["cut"])
    store.set_calibration(table, json.dumps({**stored, "cut": round(stored["cut"] / 2, 4)}))
    assert served.ask("harbour committee Fridays").threshold == before  # the snapshot keeps its gate
    assert served.refresh()
    assert served.ask("harbour committee Fridays").threshold == pytest.approx(stored["cut"] / 2, abs=1e-4)
    assert not served.refresh()
