"""The store on real LanceDB tables in tmp_path: table listing and filters on hostile values."""
import pytest

from citeline.index.filters import equals
from citeline.index.store import Store, chunk_table
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.tables import chunks_table_name

STAMP = IndexStamp(embed_model="synthetic", embed_dim=4)

# Document ids and paths with each character SQL text could mistake, each beside the
# look-alikes a wrong escaping would match instead: LIKE wildcards (% _), a backslash
# read as an escape (\n vs a newline), quotes closed early, an injected clause.
HOSTILE = [
    "it's", "its", "''", "'", "\\'", "back\\slash", "back\\\\slash", "100%", "1000", "snake_case",
    "snakeXcase", "two\nlines", "two\\nlines", "two lines", 'say "hi"', "x') OR ('1'='1", "",
]


def test_the_active_table_is_found_among_many_chunks_tables(tmp_path):
    # LanceDB lists tables a page at a time (10 names by default, sorted): with 12 chunks
    # tables beside "documents", "meta" sorts onto a later page and used to go unseen.
    store = Store(str(tmp_path / "db"))
    stamps = [IndexStamp(embed_model=f"model-{i:02d}", embed_dim=8) for i in range(12)]
    for stamp in stamps:
        store.staging(stamp)
    store.documents()
    store.activate(stamps[5])
    assert store.active_table() == chunks_table_name(stamps[5])
    assert store.stamp() == stamps[5]
    listed = store.chunk_tables()
    assert [name for name, _, _ in listed] == sorted(chunks_table_name(s) for s in stamps)
    assert [name for name, _, active in listed if active] == [chunks_table_name(stamps[5])]


def chunks(doc_id: str, count: int, tag: str = "v1"):
    rows = [{
        "chunk_id": f"{tag}:{doc_id}:{i}", "doc_id": doc_id, "path": f"docs/{doc_id}.md", "title": doc_id,
        "section": None, "ordinal": i, "start": 0, "end": 1, "content": "x", "text": "x", "locators": "[]",
        "tokens": 1, "truncated": False, "vector": [0.5, 0.5, 0.5, 0.5], "embed_model": STAMP.embed_model,
        "embed_dim": STAMP.embed_dim, "pipeline_version": STAMP.pipeline_version, "strategy": STAMP.strategy,
        "extractor": "text", "extractor_version": "1",
    } for i in range(count)]
    return chunk_table(rows, STAMP)


def record(doc_id: str, count: int) -> dict:
    return {"doc_id": doc_id, "source": f"/corpus/docs/{doc_id}.md", "root": "/corpus", "path": f"docs/{doc_id}.md",
            "status": "indexed", "attempts": 1, "chunk_count": count, "truncated": 0}


@pytest.fixture
def hostile(tmp_path) -> Store:
    """One document per hostile id (path ``docs/<id>.md``), document i holding i + 1 chunks."""
    store = Store(str(tmp_path / "db"))
    for i, doc_id in enumerate(HOSTILE):
        store.replace_chunks(STAMP, doc_id, chunks(doc_id, i + 1))
    store.upsert_documents([record(d, i + 1) for i, d in enumerate(HOSTILE)])
    return store


def chunk_counts(store: Store) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in store.chunk_rows(["doc_id"]):
        counts[row["doc_id"]] = counts.get(row["doc_id"], 0) + 1
    return counts


@pytest.mark.parametrize("doc_id", HOSTILE)
def test_filters_match_exactly_the_row_named(hostile, doc_id):
    i = HOSTILE.index(doc_id)
    assert [r["path"] for r in hostile.document_rows(["path"], equals("doc_id", doc_id))] == [f"docs/{doc_id}.md"]
    assert [r["doc_id"] for r in hostile.document_rows(["doc_id"], equals("path", f"docs/{doc_id}.md"))] == [doc_id]
    assert {r["doc_id"] for r in hostile.chunk_rows(["doc_id"], equals("doc_id", doc_id))} == {doc_id}
    assert hostile.count_chunks(doc_id) == i + 1


@pytest.mark.parametrize("doc_id", HOSTILE)
def test_writes_touch_only_the_document_named(hostile, doc_id):
    before = chunk_counts(hostile)
    assert hostile.replace_chunks(STAMP, doc_id, chunks(doc_id, 2, tag="v2")) == 2
    assert {r["chunk_id"] for r in hostile.chunk_rows(["chunk_id"], equals("doc_id", doc_id))} == {
        f"v2:{doc_id}:0", f"v2:{doc_id}:1"}
    assert chunk_counts(hostile) == {**before, doc_id: 2}

    hostile.upsert_document({"doc_id": doc_id, "status": "failed"})
    assert [r["doc_id"] for r in hostile.document_rows(["doc_id"], "status = 'failed'")] == [doc_id]

    hostile.delete_documents([doc_id], STAMP)
    assert chunk_counts(hostile) == {d: n for d, n in before.items() if d != doc_id}
    assert sorted(r["doc_id"] for r in hostile.document_rows(["doc_id"])) == sorted(d for d in HOSTILE if d != doc_id)


def test_bm25_tokenizer_keeps_its_settings(tmp_path):
    # Pinned in TEXT_INDEX: stemming, stop words, lower case and ASCII folding, as every
    # index before it was built (a changed default would move BM25 scores silently).
    store = Store(str(tmp_path / "db"))
    texts = {"a": "the model runs quickly", "b": "a café near the station", "c": "Dropout regularises networks"}
    for doc_id, text in texts.items():
        table = chunks(doc_id, 1)
        store.replace_chunks(STAMP, doc_id, table.set_column(table.schema.get_field_index("text"), "text",
                                                                 [[text]]))
    store.finish_run(STAMP)

    def found(query: str) -> list[str]:
        return [hit["doc_id"] for hit in store.fts_search(STAMP, query, 5, ["doc_id"])]

    assert found("running") == ["a"]
    assert found("cafe") == ["b"]
    assert found("DROPOUT") == ["c"]
    assert found("the") == []
