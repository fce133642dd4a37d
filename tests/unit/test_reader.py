"""The query reader on real LanceDB tables: exact scan below the ANN threshold, HNSW above it."""
import numpy as np
import pytest

from citeline.index.store import Store, chunk_table
from citeline.schemas.stamp import IndexStamp

STAMP = IndexStamp(embed_model="synthetic", embed_dim=32)
COLUMNS = ["chunk_id", "doc_id", "content"]
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def fill(store: Store, vectors: np.ndarray, per_doc: int = 100) -> None:
    for start in range(0, len(vectors), per_doc):
        doc = f"doc{start // per_doc}"
        rows = [{
            "chunk_id": f"{doc}-{i}", "doc_id": doc, "path": f"{doc}.md", "title": doc, "section": None,
            "ordinal": i - start, "start": 0, "end": 1, "content": f"{WORDS[i % len(WORDS)]} {i}",
            "text": f"{WORDS[i % len(WORDS)]} item{i}", "locators": "[]", "tokens": 3, "truncated": False,
            "vector": vectors[i].tolist(), "embed_model": STAMP.embed_model, "embed_dim": STAMP.embed_dim,
            "pipeline_version": STAMP.pipeline_version, "strategy": STAMP.strategy, "extractor": "synthetic",
            "extractor_version": "1",
        } for i in range(start, min(start + per_doc, len(vectors)))]
        store.replace_chunks(STAMP, doc, chunk_table(rows, STAMP))
    store.finish_run(STAMP)


def exact_top(vectors: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    return list(np.argsort(-(vectors @ query), kind="stable")[:k])


@pytest.fixture(scope="module")
def clustered():
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(20, STAMP.embed_dim))
    vectors = unit(centres[rng.integers(0, 20, 800)] + rng.normal(0, 0.3, (800, STAMP.embed_dim)))
    queries = unit(centres[rng.integers(0, 20, 25)] + rng.normal(0, 0.3, (25, STAMP.embed_dim)))
    return vectors, queries


def test_small_tables_are_scanned_exactly_in_memory(tmp_path, clustered):
    vectors, queries = clustered
    store = Store(str(tmp_path / "db"), ann_min_rows=10_000)
    fill(store, vectors)
    reader = store.reader(STAMP, COLUMNS)
    assert reader.exact and reader.rows == len(vectors)
    for q in queries:
        found = reader.dense(q, 10)
        assert [int(r["chunk_id"].split("-")[1]) for r in found] == exact_top(vectors, q, 10)
        best = int(found[0]["chunk_id"].split("-")[1])
        assert found[0]["distance"] == pytest.approx(1 - float(vectors[best] @ q), abs=1e-5)
        assert set(found[0]) == {*COLUMNS, "distance"}


def test_large_tables_get_an_hnsw_index_with_high_recall(tmp_path, clustered):
    vectors, queries = clustered
    store = Store(str(tmp_path / "db"), ann_min_rows=500)
    fill(store, vectors)
    reader = store.reader(STAMP, COLUMNS)
    assert not reader.exact
    recalls = []
    for q in queries:
        found = reader.dense(q, 10)
        ids = [int(r["chunk_id"].split("-")[1]) for r in found]
        recalls.append(len(set(ids) & set(exact_top(vectors, q, 10))) / 10)
        assert found[0]["distance"] == pytest.approx(1 - float(vectors[ids[0]] @ q), abs=1e-3)
    assert np.mean(recalls) >= 0.9


def test_bm25_and_lookups_return_the_same_row_shape_in_both_modes(tmp_path, clustered):
    vectors, _ = clustered
    for threshold in (500, 10_000):
        store = Store(str(tmp_path / f"db{threshold}"), ann_min_rows=threshold)
        fill(store, vectors)
        reader = store.reader(STAMP, COLUMNS)
        hits = reader.bm25("foxtrot item13", 5)
        assert hits[0]["chunk_id"] == "doc0-13" and set(hits[0]) == {*COLUMNS, "score"}
        assert all("foxtrot" in h["content"] for h in hits[1:])
        assert np.allclose(reader.vectors(["doc3-301"])["doc3-301"], vectors[301], atol=1e-6)
        assert reader.texts(["doc3-301"]) == {"doc3-301": "foxtrot item301"}


def test_rows_added_after_the_index_are_still_found(tmp_path, clustered):
    vectors, _ = clustered
    store = Store(str(tmp_path / "db"), ann_min_rows=500)
    fill(store, vectors[:600])
    fill(store, vectors, per_doc=100)  # docs 6 and 7 are new since the index was built
    reader = store.reader(STAMP, COLUMNS)
    assert not reader.exact and reader.rows == 800
    assert reader.dense(vectors[750], 1)[0]["chunk_id"] == "doc7-750"


@pytest.mark.parametrize("threshold", [500, 10_000], ids=["hnsw", "exact"])
def test_ranked_ids_and_rows_of_match_the_whole_row_reads(tmp_path, clustered, threshold):
    """Hybrid fuses ids and reads only the rows it keeps: the ids, distances, scores and rows
    must be those the whole-row reads give, with and without a filter, in both modes."""
    vectors, queries = clustered
    store = Store(str(tmp_path / "db"), ann_min_rows=threshold)
    fill(store, vectors)
    reader = store.reader(STAMP, COLUMNS)
    assert reader.exact == (threshold == 10_000)
    for where in (None, "doc_id = 'doc2'"):
        for q in queries[:5]:
            whole = reader.dense(q, 20, where)
            ranked = reader.dense_ranked(q, 20, where)
            assert [cid for cid, _ in ranked] == [r["chunk_id"] for r in whole]
            assert [d for _, d in ranked] == pytest.approx([r["distance"] for r in whole], abs=1e-6)
        lexical = reader.bm25("foxtrot item13", 10, where)
        assert reader.bm25_ranked("foxtrot item13", 10, where) == [(r["chunk_id"], r["score"]) for r in lexical]
    rows = reader.rows_of(["doc3-301", "doc0-13", "no-such"], vectors=True)
    assert set(rows) == {"doc3-301", "doc0-13"}
    assert rows["doc0-13"]["content"] == "foxtrot 13" and set(rows["doc0-13"]) == {*COLUMNS, "vector"}
    assert np.allclose(rows["doc3-301"]["vector"], vectors[301], atol=1e-6)


class FixedQuery:
    """An embedder whose every question is one of the clustered test vectors (plumbing only)."""

    name, dim = STAMP.embed_model, STAMP.embed_dim

    def __init__(self, vector):
        self.vector = vector

    def embed_query(self, text):
        return self.vector


def test_hybrid_reading_only_the_fused_rows_equals_fusing_whole_rows(tmp_path, clustered):
    from dataclasses import replace

    from citeline.query.fuse import rrf
    from citeline.query.search import RRF_K, Searcher
    from citeline.schemas.retrieval import HYBRID

    vectors, queries = clustered
    store = Store(str(tmp_path / "db"), ann_min_rows=500)
    fill(store, vectors)
    for q, text in zip(queries[:5], ["foxtrot item13", "alpha", "golf hotel", "bravo item40", "echo"]):
        searcher = Searcher(store, FixedQuery(q), STAMP)
        assert not searcher.reader.exact
        dense, lexical = searcher.dense(text, 100), searcher.bm25(text, 100)  # the whole-row fusion
        by_id = {**{h.chunk_id: h for h in lexical}, **{h.chunk_id: h for h in dense}}
        fused = rrf([[h.chunk_id for h in dense], [h.chunk_id for h in lexical]], k=RRF_K, limit=10)
        expected = searcher.fill_distances(text, [replace(by_id[f.chunk_id], rank=f.rank, score=f.score,
                                                          retriever=HYBRID) for f in fused])
        got = searcher.hybrid(text, 10)
        assert [(h.chunk_id, h.rank, h.score, h.chunk) for h in got] == \
            [(h.chunk_id, h.rank, h.score, h.chunk) for h in expected]
        assert [h.distance for h in got] == pytest.approx([h.distance for h in expected], abs=1e-6)


@pytest.mark.parametrize("threshold", [500, 10_000], ids=["hnsw", "exact"])
def test_bm25_with_vectors_is_bm25_ranked_and_each_hits_stored_vector(tmp_path, clustered, threshold):
    vectors, _ = clustered
    store = Store(str(tmp_path / "db"), ann_min_rows=threshold)
    fill(store, vectors)
    reader = store.reader(STAMP, COLUMNS)
    for where in (None, "doc_id = 'doc0'"):
        found = reader.bm25_vectors("foxtrot item13", 10, where)
        assert [(cid, score) for cid, score, _ in found] == reader.bm25_ranked("foxtrot item13", 10, where)
        assert all(np.allclose(v, vectors[int(cid.split("-")[1])], atol=1e-6) for cid, _, v in found)
    assert reader.bm25_vectors("zulu", 10) == [] and reader.bm25_vectors(" ", 10) == []


class ByText:
    """An embedder whose questions are the clustered test vectors, one per question text."""

    name, dim = STAMP.embed_model, STAMP.embed_dim

    def __init__(self, vectors: dict):
        self.vectors = vectors

    def embed_query(self, text):
        return self.vectors[text]


class WordCount:
    """A reranker counting the question's words in each passage's text (plumbing only)."""

    name = "word-count"

    def __init__(self, cosine_weight: float):
        self.cosine_weight = cosine_weight

    def score(self, query, passages):
        return [float(sum(p.text.split().count(w) for w in query.split())) for p in passages]


TEXTS = ["foxtrot item13", "alpha", "golf hotel", "bravo item40", "echo"]


@pytest.mark.parametrize("threshold", [500, 10_000], ids=["hnsw", "exact"])
def test_rerank_reads_the_rows_of_the_hits_it_keeps_as_whole_row_candidates_would(tmp_path, clustered, threshold):
    """The union's candidates are ranked ids (no row read); reranked, the hits kept carry their
    rows, and every id, rank, score, distance and row is what reranking the whole-row union gives."""
    from dataclasses import replace

    from citeline.query.rerank import Passage, rerank
    from citeline.query.search import Searcher, hits_from_rows
    from citeline.schemas.retrieval import RerankConfig

    vectors, queries = clustered
    store = Store(str(tmp_path / "db"), ann_min_rows=threshold)
    fill(store, vectors)
    searcher = Searcher(store, ByText(dict(zip(TEXTS, queries))), STAMP)
    for text in TEXTS:
        reranker = WordCount(cosine_weight=0.5)
        dense = searcher.reader.dense(queries[TEXTS.index(text)], 30)
        seen = {r["chunk_id"] for r in dense}
        lexical = [r for r in searcher.reader.bm25(text, 30) if r["chunk_id"] not in seen]
        pool = [*hits_from_rows(dense, "dense", "distance"), *hits_from_rows(lexical, "bm25", "score")]
        pool = searcher.fill_distances(text, [replace(h, rank=i) for i, h in enumerate(pool, 1)])
        texts = searcher.reader.texts([h.chunk_id for h in pool])
        expected = rerank(text, pool, reranker, 8, [Passage(texts[h.chunk_id]) for h in pool])

        candidates = searcher.candidates(text, RerankConfig("union", 30))
        assert all(h.chunk is None for h in candidates)
        assert [h.chunk_id for h in candidates] == [h.chunk_id for h in pool]
        got = searcher.rerank(text, 8, reranker=reranker, config=RerankConfig("union", 30, cosine_weight=0.5))
        assert [(h.chunk_id, h.rank, h.candidate_rank, h.chunk) for h in got] == \
            [(h.chunk_id, h.rank, h.candidate_rank, h.chunk) for h in expected]
        assert [x for h in got for x in (h.score, h.distance)] == \
            pytest.approx([x for h in expected for x in (h.score, h.distance)], abs=1e-5)
        # the gate's nearest k after it: the candidates' list reused, rows read, as exact as a scan
        nearest = searcher.dense(text, 8)
        assert [int(h.chunk_id.split("-")[1]) for h in nearest] == exact_top(vectors, queries[TEXTS.index(text)], 8)
        assert all(h.chunk is not None and h.chunk.chunk_id == h.chunk_id for h in nearest)


def test_one_searcher_answers_questions_from_many_threads_as_one_at_a_time(tmp_path, clustered):
    """The service asks one searcher from several threads: its kept question vector and nearest
    list must never hand one question another's."""
    from concurrent.futures import ThreadPoolExecutor

    from citeline.query.search import Searcher

    vectors, queries = clustered
    store = Store(str(tmp_path / "db"), ann_min_rows=500)
    fill(store, vectors)
    texts = [f"{WORDS[i % len(WORDS)]} item{i}" for i in range(len(queries))]
    searcher = Searcher(store, ByText(dict(zip(texts, queries))), STAMP)

    def answer(text):
        hits = searcher.rerank(text, 5, reranker=WordCount(cosine_weight=0.5))
        return [h.chunk_id for h in hits], [h.chunk_id for h in searcher.dense(text, 5)]

    alone = {t: answer(t) for t in texts}
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(answer, texts * 4))
    assert together == [alone[t] for t in texts * 4]


def test_a_forked_child_reranks_after_its_parent_did(tmp_path, clustered):
    """BM25 runs on a thread pool beside the dense search; a child forked after the parent used it
    (a process that serves, then forks a worker) must get threads of its own, not wait forever."""
    import multiprocessing

    from citeline.query.search import Searcher

    vectors, queries = clustered
    store = Store(str(tmp_path / "db"), ann_min_rows=500)
    fill(store, vectors)
    searcher = Searcher(store, ByText(dict(zip(TEXTS, queries))), STAMP)
    parent = [h.chunk_id for h in searcher.rerank(TEXTS[0], 5, reranker=WordCount(0.5))]
    ctx = multiprocessing.get_context("fork")
    answers = ctx.Queue()

    def child():
        answers.put([h.chunk_id for h in searcher.rerank(TEXTS[0], 5, reranker=WordCount(0.5))])

    process = ctx.Process(target=child)
    process.start()
    process.join(timeout=60)
    alive = process.is_alive()
    if alive:
        process.kill()
    assert not alive and answers.get(timeout=5) == parent


# A question's reads through the Lance dataset itself (index/lance_direct.py): the same rows and
# scores as LanceDB's query builders, and the kept rows read by the addresses the searches found.

WHERES = (None, "doc_id = 'doc2'")


def through_lancedb(store: Store):
    """A reader that searches through LanceDB's query builders only (as a remote table would)."""
    reader = store.reader(STAMP, COLUMNS)
    reader._dataset = False
    return reader


def test_the_dataset_finds_what_lancedbs_builders_find(tmp_path, clustered):
    vectors, queries = clustered
    store = Store(str(tmp_path / "db"), ann_min_rows=500)
    fill(store, vectors)
    direct, builders = store.reader(STAMP, COLUMNS), through_lancedb(store)
    assert not direct.exact
    for where in WHERES:
        for q in queries[:8]:
            got, want = direct.dense_ranked(q, 25, where), builders.dense_ranked(q, 25, where)
            assert [c for c, _ in got] == [c for c, _ in want]
            assert [d for _, d in got] == pytest.approx([d for _, d in want], abs=1e-6)
            rows, whole = direct.dense(q, 10, where), builders.dense(q, 10, where)
            assert [{**r, "distance": pytest.approx(r["distance"], abs=1e-6)} for r in rows] == whole
        for text in ("foxtrot item13", "alpha bravo", "zulu"):
            assert direct.bm25_ranked(text, 20, where) == builders.bm25_ranked(text, 20, where)
            assert direct.bm25(text, 20, where) == builders.bm25(text, 20, where)
            got, want = direct.bm25_vectors(text, 20, where), builders.bm25_vectors(text, 20, where)
            assert [(c, s) for c, s, _ in got] == [(c, s) for c, s, _ in want]
            assert all(np.array_equal(a, b) for (*_, a), (*_, b) in zip(got, want))
    assert direct._dataset and builders._dataset is False


def test_the_rows_a_question_keeps_are_read_by_the_addresses_its_searches_found(tmp_path, clustered, monkeypatch):
    vectors, queries = clustered
    store = Store(str(tmp_path / "db"), ann_min_rows=500)
    fill(store, vectors)
    reader, builders = store.reader(STAMP, COLUMNS), through_lancedb(store)
    by_filter = []
    filtered = reader._where
    monkeypatch.setattr(reader, "_where", lambda ids, columns: by_filter.extend(ids) or filtered(ids, columns))
    found = [cid for cid, _ in reader.dense_ranked(queries[0], 6)]
    found += [cid for cid, *_ in reader.bm25_vectors("foxtrot item13", 4)]
    rows = reader.rows_of(found)
    assert by_filter == [] and set(rows) == set(found)
    assert rows == builders.rows_of(found)  # LanceDB's filter on the ids: the same rows, column for column
    mixed = reader.rows_of([found[0], "doc5-555", "no-such"], vectors=True)
    assert by_filter == ["doc5-555", "no-such"] and set(mixed) == {found[0], "doc5-555"}
    assert np.allclose(mixed["doc5-555"]["vector"], vectors[555], atol=1e-6)
