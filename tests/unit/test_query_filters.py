"""Query-time filters: the predicate renderer, and prefilters on real LanceDB tables in both reader modes."""
import re
from datetime import datetime, timezone

import numpy as np
import pytest

from citeline.index.filters import chunk_predicate, like_pattern
from citeline.index.store import Store, chunk_table
from citeline.schemas.retrieval import Filters, parse_since
from citeline.schemas.stamp import IndexStamp

STAMP = IndexStamp(embed_model="synthetic", embed_dim=16)
COLUMNS = ["chunk_id", "doc_id", "path"]
# Paths a LIKE pattern, a string literal or a glob would misread if a value were not escaped.
HOSTILE = [
    "it's/a.md", "its/a.md", "100%_done/b.md", "100xydone/b.md", "100%Xdone/b.md", "a_b/c.md", "aXb/c.md",
    "back\\slash/d.md", "back/slash/d.md", "new\nline/e.md", "x' OR '1'='1/f.md", "[ab]/g.md", "a/g.md",
    "star*/h.PDF", "starry/h.pdf", "q?/i.csv", "qq/i.csv", "ünï/j.md",
]


def test_values_are_quoted_and_escaped():
    assert like_pattern("100%_x\\") == "100\\%\\_x\\\\"
    assert like_pattern("a*b?[c]%", glob=True) == "a%b_[c]\\%"
    sql = chunk_predicate(Filters(paths=("x' OR '1'='1",)))
    assert sql == "(path LIKE 'x'' OR ''1''=''1%' ESCAPE '\\')"
    assert chunk_predicate(Filters()) is None


def test_kinds_combine_with_and_values_with_or():
    sql = chunk_predicate(Filters(paths=("a/", "b/"), types=("pdf", "md")), None)
    assert sql == ("(path LIKE 'a/%' ESCAPE '\\' OR path LIKE 'b/%' ESCAPE '\\') AND "
                   "((lower(path) LIKE '%.pdf' ESCAPE '\\' OR extractor = 'pdf') OR "
                   "(lower(path) LIKE '%.md' ESCAPE '\\' OR extractor = 'md'))")


def test_modified_since_renders_the_ids_the_documents_table_gave():
    since = Filters(modified_since=parse_since("2024-05-01"))
    assert chunk_predicate(since, ["d2", "d1"]) == "(doc_id IN ('d1', 'd2'))"
    assert chunk_predicate(since, []) == "FALSE"
    with pytest.raises(ValueError):
        chunk_predicate(since)


@pytest.mark.parametrize("bad", [dict(since="yesterday"), dict(since="2024-13-01"), dict(types=["p df"]),
                                 dict(types=["%"]), dict(paths=[""])])
def test_bad_values_are_refused(bad):
    with pytest.raises(ValueError):
        Filters.parse(**bad)


def test_a_date_without_zone_is_utc():
    assert Filters.parse(since="2024-05-01T10:00").modified_since == datetime(2024, 5, 1, 10, tzinfo=timezone.utc)


def fill(store: Store, paths: list[str], per_path: int, rng) -> np.ndarray:
    vectors = rng.normal(size=(len(paths) * per_path, STAMP.embed_dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    docs = {}
    for d, path in enumerate(paths):
        docs[f"doc{d}"] = chunk_table([{
            "chunk_id": f"doc{d}-{i}", "doc_id": f"doc{d}", "path": path, "title": None, "section": None,
            "ordinal": i, "start": 0, "end": 1, "content": "c", "text": f"common word{i} doc{d}",
            "locators": "[]", "tokens": 3, "truncated": False, "vector": vectors[d * per_path + i].tolist(),
            **STAMP.columns(), "extractor": "pdf" if path.lower().endswith(".pdf") else "text",
            "extractor_version": "1",
        } for i in range(per_path)], STAMP)
    store.replace_chunks_of(STAMP, docs)
    store.finish_run(STAMP)
    return vectors


def expected(value: str) -> set[str]:
    if "*" in value or "?" in value:
        rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in value)
        return {p for p in HOSTILE if re.fullmatch(rx, p, re.S)}
    return {p for p in HOSTILE if p.startswith(value)}


@pytest.fixture(scope="module", params=["exact", "hnsw"])
def hostile_store(request, tmp_path_factory):
    ann = 10_000 if request.param == "exact" else 100
    store = Store(str(tmp_path_factory.mktemp(request.param) / "db"), ann_min_rows=ann)
    fill(store, HOSTILE, 10, np.random.default_rng(3))
    reader = store.reader(STAMP, COLUMNS)
    assert reader.exact == (request.param == "exact")
    return store, reader


@pytest.mark.parametrize("value", [
    "it's/", "100%_", "a_b", "back\\", "new\n", "x' OR '1'='1", "[ab]", "star*/*", "*.pdf", "q?/*", "q\\?",
    "ünï/", "%", "_", "'", "*'*",
])
def test_hostile_path_values_match_only_what_they_say(hostile_store, value):
    store, reader = hostile_store
    where = store.predicate(Filters(paths=(value,)))
    dense = {r["path"] for r in reader.dense(np.ones(STAMP.embed_dim, np.float32) / 4, 500, where)}
    lexical = {r["path"] for r in reader.bm25("common", 500, where)}
    assert dense == lexical == expected(value)


def test_types_match_extension_in_any_case_or_extractor(hostile_store):
    store, reader = hostile_store
    q = np.ones(STAMP.embed_dim, np.float32) / 4
    pdf = {r["path"] for r in reader.dense(q, 500, store.predicate(Filters(types=("pdf",))))}
    assert pdf == {"star*/h.PDF", "starry/h.pdf"}
    text = {r["path"] for r in reader.dense(q, 500, store.predicate(Filters(types=("text", "csv"))))}
    assert text == set(HOSTILE) - pdf


def test_k_results_come_back_when_the_unfiltered_top_k_all_fail_the_filter(hostile_store):
    store, reader = hostile_store
    rng = np.random.default_rng(11)
    for _ in range(10):
        q = rng.normal(size=STAMP.embed_dim).astype(np.float32)
        q /= np.linalg.norm(q)
        top = reader.dense(q, 5)
        outside = next(p for p in HOSTILE if p not in {r["path"] for r in top})
        where = store.predicate(Filters(paths=(outside,)))
        found = reader.dense(q, 5, where)
        assert len(found) == 5 and {r["path"] for r in found} == {outside}
        assert len(reader.bm25("common", 5, where)) == 5


def test_the_filtered_columns_have_scalar_indexes(hostile_store):
    store, _ = hostile_store
    kinds = {tuple(ix.columns): ix.index_type for ix in store.chunks(STAMP).list_indices()}
    assert kinds[("path",)] == "BTree" and kinds[("extractor",)] == "Bitmap" and kinds[("doc_id",)] == "BTree"
