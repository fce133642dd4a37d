"""`citeline check --repair` on a real index damaged on purpose."""
import json
import shutil
from pathlib import Path

import lancedb
import pytest

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings
from fakes import FAKE
from testkit import EXAMPLES, invoke

pytestmark = [pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture(scope="module")
def original(tmp_path_factory, prefect_harness) -> tuple[Path, Path]:
    """Two documents indexed once; each test damages its own copy of the index."""
    docs = tmp_path_factory.mktemp("docs")
    for name in ("04-dropout.md", "10-lr-scheduler.md"):
        shutil.copy(EXAMPLES / name, docs / name)
    db = tmp_path_factory.mktemp("index") / "db"
    assert index_folder(str(docs), IndexSettings(model=FAKE, db=str(db)), return_state=True).is_completed()
    return docs, db


def indexed(original, tmp_path: Path) -> tuple[Store, lancedb.table.Table, dict[str, str]]:
    db = tmp_path / "db"
    shutil.copytree(original[1], db)
    store = Store(str(db))
    table = lancedb.connect(str(db)).open_table(store.active_table())
    ids = {r["path"]: r["doc_id"] for r in store.document_rows(["path", "doc_id"])}
    return store, table, ids


def rows_of(store: Store, doc_id: str) -> list[dict]:
    return sorted(store.chunk_rows(where=f"doc_id = '{doc_id}'"), key=lambda r: r["ordinal"])


def test_repair_refuses_while_another_process_writes_the_index(original, tmp_path):
    from citeline.index.lock import writer_lock

    store, _, _ = indexed(original, tmp_path)
    with writer_lock(store.uri):
        result = invoke("check", "--db", store.uri, "--repair")
    assert result.exit_code == 1 and "is being written by process" in result.output


def test_repair_fixes_a_damaged_index_and_says_what_it_did(original, tmp_path):
    store, table, ids = indexed(original, tmp_path)
    dropout, scheduler = ids["04-dropout.md"], ids["10-lr-scheduler.md"]
    lost = rows_of(store, dropout)[:2]
    table.delete(f"chunk_id IN ('{lost[0]['chunk_id']}', '{lost[1]['chunk_id']}')")
    victim = rows_of(store, scheduler)[0]
    table.update(where=f"chunk_id = '{victim['chunk_id']}'", values={"content": "tampered text"})
    orphan = {**victim, "doc_id": "f" * 32, "chunk_id": "e" * 32}
    table.add([{k: v for k, v in orphan.items() if k in table.schema.names}])
    twin = rows_of(store, dropout)[-1]
    table.add([{k: v for k, v in twin.items() if k in table.schema.names}])
    table.drop_index("text_idx")
    leftover = Path(store.uri) / f"{store.active_table()}.lance" / "data" / ".tmp_killed_writer.lance"
    leftover.write_bytes(b"half a data file")
    found = {(v.rule, v.subject) for v in check_index(store)}
    assert {("chunk_count", "04-dropout.md"), ("quote", victim["chunk_id"]), ("orphan-chunks", "f" * 32),
            ("full-text", "index"), ("duplicate", twin["chunk_id"])} <= found

    result = invoke("check", "--db", store.uri, "--repair", "--json")

    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["ok"] and report["violations"] == []
    done = {(r["action"], r["subject"]) for r in report["repairs"]}
    assert {("reindexed", "04-dropout.md"), ("reindexed", "10-lr-scheduler.md"), ("deleted-orphans", "f" * 32),
            ("rebuilt-full-text", "index"), ("removed-temp-files", str(leftover)),
            ("deleted-duplicates", twin["chunk_id"])} <= done
    assert check_index(store) == [] and not leftover.exists()
    restored = [r["chunk_id"] for r in rows_of(store, dropout)]
    assert set(restored) >= {r["chunk_id"] for r in lost} | {twin["chunk_id"]} and len(restored) == len(set(restored))
    assert rows_of(store, scheduler)[0]["content"] == victim["content"]
    hits = store.fts_search(store.stamp(), "scheduler", 50, ["chunk_id"])
    assert victim["chunk_id"] in {h["chunk_id"] for h in hits}
    assert invoke("check", "--db", store.uri).exit_code == 0


def test_what_cannot_be_repaired_is_reported_and_exits_non_zero(original, tmp_path):
    """Last in this module: it deletes a source file the other tests index from."""
    docs = original[0]
    store, table, ids = indexed(original, tmp_path)
    victim = rows_of(store, ids["04-dropout.md"])[0]
    table.update(where=f"chunk_id = '{victim['chunk_id']}'", values={"content": "tampered text"})
    (docs / "04-dropout.md").unlink()  # nothing left to index it again from

    result = invoke("check", "--db", store.uri, "--repair")

    assert result.exit_code == 1
    assert "repair: reindex-failed: 04-dropout.md: [read] vanished:" in result.output
    assert f"after repair:\nquote: {victim['chunk_id']}:" in result.output
    record = store.document_rows(["status", "chunk_count", "doc_id"], f"doc_id = '{ids['04-dropout.md']}'")[0]
    assert record["status"] == "failed" and record["chunk_count"] == store.count_chunks(record["doc_id"])
