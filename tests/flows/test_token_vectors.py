"""Stored word-piece vectors: filled by the index flow, kept in step by later runs, used by MaxSim
(on the fake embedder: what is checked is that stored and fresh vectors agree, not retrieval)."""
import numpy as np
import pytest

from citeline.flows.ingest import index_folder
from citeline.flows.reindex import reindex
from citeline.index.store import Store
from citeline.index.tokens import TokenVectors
from citeline.pipeline.embed import get_embedder
from citeline.query.rerank import MaxSimReranker, Passage
from citeline.query.search import Searcher
from citeline.schemas.settings import IndexSettings
from fakes import FAKE, FAKE_DIM

pytestmark = pytest.mark.usefixtures("prefect_harness")
QUESTION = "Why does dropout only apply during training?"


def chunk_ids(store: Store) -> set[str]:
    return {r["chunk_id"] for r in store.chunk_rows(["chunk_id"])}


def test_index_stores_token_vectors_and_later_runs_keep_them_in_step(docs, tmp_path):
    settings = IndexSettings(model=FAKE, db=str(tmp_path / "db"), token_vectors=True)
    index_folder(str(docs), settings)
    store = Store(settings.db)
    tokens = TokenVectors(store, store.stamp())
    assert tokens.stored_ids() == chunk_ids(store)
    chunks, size = tokens.size()
    assert chunks == store.count_chunks() and size > chunks * FAKE_DIM * 2  # more than one fp16 vector each

    # A plain re-sync (no --token-vectors) after an edit and a deletion still keeps them current.
    victim = sorted(p for p in docs.iterdir() if p.suffix == ".md")[0]
    victim.unlink()
    edited = sorted(p for p in docs.iterdir() if p.suffix == ".md")[0]
    edited.write_text(edited.read_text() + "\n\nA new closing paragraph about gradient clipping thresholds.\n")
    index_folder(str(docs), IndexSettings(model=FAKE, db=settings.db))
    assert TokenVectors(store, store.stamp()).stored_ids() == chunk_ids(store)


def test_maxsim_on_stored_vectors_matches_on_the_fly_scoring(docs, tmp_path):
    db = str(tmp_path / "db")
    index_folder(str(docs), IndexSettings(model=FAKE, db=db, token_vectors=True))
    embedder = get_embedder(FAKE)
    stored = Searcher.open(db, embedder)
    assert stored.reader.tokens is not None
    fresh = Searcher.open(db, embedder)
    fresh.reader.tokens = None  # as an index without stored vectors
    a, b = stored.rerank(QUESTION, 8), fresh.rerank(QUESTION, 8)
    assert [r.chunk_id for r in a[:3]] == [r.chunk_id for r in b[:3]]
    assert np.allclose([r.rerank_score for r in a], [r.rerank_score for r in b], atol=2e-3)


def test_chunks_without_stored_vectors_are_scored_on_the_fly(docs, tmp_path):
    db = str(tmp_path / "db")
    index_folder(str(docs), IndexSettings(model=FAKE, db=db, token_vectors=True))
    searcher = Searcher.open(db, get_embedder(FAKE))
    pool = searcher.hybrid(QUESTION, 5)
    ids = [r.chunk_id for r in pool]
    texts, stored = searcher.reader.texts(ids), searcher.reader.tokens.read(ids[:2])
    plain = [Passage(texts[i]) for i in ids]
    mixed = [Passage(p.text, stored.get(i)) for i, p in zip(ids, plain)]
    reranker = MaxSimReranker(get_embedder(FAKE))
    assert len(stored) == 2 and np.allclose(reranker.score(QUESTION, mixed), reranker.score(QUESTION, plain), atol=2e-3)


def test_the_query_reader_decodes_each_chunks_vectors_once_within_its_budget(docs, tmp_path):
    """Reading 100 candidates' vectors was a third of a warm ask; a chunk id's vectors never change."""
    db = str(tmp_path / "db")
    index_folder(str(docs), IndexSettings(model=FAKE, db=db, token_vectors=True))
    store = Store(db)
    ids = sorted(chunk_ids(store))[:5]
    tokens = store.reader(store.stamp(), ["chunk_id"]).tokens
    first, again = tokens.read(ids[:3]), tokens.read(ids)
    plain = TokenVectors(store, store.stamp()).read(ids)
    assert all(again[i] is first[i] for i in ids[:3])  # not read or decoded again
    assert all(np.array_equal(again[i], plain[i]) and again[i].dtype == np.float32 for i in ids)

    size = {i: plain[i].nbytes for i in ids}
    small = TokenVectors(store, store.stamp(), cache_bytes=size[ids[0]] + size[ids[1]] + size[ids[2]] - 1)
    a, b = small.read(ids[:1])[ids[0]], small.read(ids[1:2])[ids[1]]
    small.read(ids[2:3])  # over the budget: the least recently read goes
    assert small.read(ids[1:2])[ids[1]] is b and small.read(ids[:1])[ids[0]] is not a


def test_gc_drops_the_token_table_with_its_chunks_table(docs, tmp_path):
    db = str(tmp_path / "db")
    index_folder(str(docs), IndexSettings(model=FAKE, db=db, token_vectors=True))
    store = Store(db)
    old = store.stamp()
    reindex(IndexSettings(model=FAKE, db=db, strategy="C"))
    assert TokenVectors(store, store.stamp()).stored_ids() == chunk_ids(store)  # carried over to the new table
    name = [n for n, s, active in store.chunk_tables() if s == old][0]
    store.drop_table(name)
    assert not TokenVectors(store, old).exists()


def test_retry_fills_the_vectors_of_documents_it_indexes(docs, tmp_path):
    from citeline.flows.retry import retry_failed

    broken = docs / "late.md"
    broken.write_bytes(b"# Late\n\nCaf\xe9 latin-1 bytes fail as undecodable.\x00\x01\n")
    db = str(tmp_path / "db")
    index_folder(str(docs), IndexSettings(model=FAKE, db=db, token_vectors=True), return_state=True)
    broken.write_text("# Late\n\nMomentum accumulates an exponentially decaying average of past gradients.\n")
    retry_failed(IndexSettings(model=FAKE, db=db))
    store = Store(db)
    assert {d["status"] for d in store.document_rows(["status"])} == {"indexed"}
    assert TokenVectors(store, store.stamp()).stored_ids() == chunk_ids(store)


def test_a_fresh_index_stores_every_chunks_vectors_from_its_one_encoding_pass(docs, tmp_path):
    """Token vectors are on by default and come from the pass that embeds each chunk: no second pass."""
    settings = IndexSettings(model=FAKE, db=str(tmp_path / "db"))  # no flag: the default
    embedder = get_embedder(FAKE, settings.precision, settings.batch_size)  # the instance the flow uses
    texts_before, second_before = embedder.stats.texts, embedder.token_texts
    index_folder(str(docs), settings)
    store = Store(settings.db)
    rows = store.chunk_rows(["chunk_id", "text"])
    tokens = TokenVectors(store, store.stamp())
    assert tokens.stored_ids() == {r["chunk_id"] for r in rows} and not tokens.legacy()
    # one pass per embedded text: texts repeated within a document are encoded once
    assert embedder.stats.texts - texts_before <= len(rows)
    assert embedder.stats.texts - texts_before >= len({r["text"] for r in rows})
    assert embedder.token_texts - second_before == 0  # nothing was encoded a second time
    stored = tokens.read(sorted(chunk_ids(store)))
    fresh = dict(zip([r["chunk_id"] for r in rows], embedder.token_vectors([r["text"] for r in rows])))
    assert all(np.abs(stored[i] - fresh[i]).max() < 5e-3 for i in fresh)


def test_no_token_vectors_gives_the_disk_back_and_sticks_until_asked_again(docs, tmp_path):
    db = str(tmp_path / "db")
    index_folder(str(docs), IndexSettings(model=FAKE, db=db))
    store = Store(db)
    assert TokenVectors(store, store.stamp()).exists()
    index_folder(str(docs), IndexSettings(model=FAKE, db=db, token_vectors=False))
    assert not TokenVectors(store, store.stamp()).exists()
    edited = sorted(p for p in docs.iterdir() if p.suffix == ".md")[0]
    edited.write_text(edited.read_text() + "\n\nA new closing paragraph about gradient clipping thresholds.\n")
    index_folder(str(docs), IndexSettings(model=FAKE, db=db))  # a plain sync keeps the choice
    assert not TokenVectors(store, store.stamp()).exists()
    index_folder(str(docs), IndexSettings(model=FAKE, db=db, token_vectors=True))
    assert TokenVectors(store, store.stamp()).stored_ids() == chunk_ids(store)


def test_a_float16_table_of_version_1_is_read_then_rebuilt_as_int8(docs, tmp_path):
    import pyarrow as pa

    db = str(tmp_path / "db")
    index_folder(str(docs), IndexSettings(model=FAKE, db=db))
    store = Store(db)
    stamp = store.stamp()
    tokens = TokenVectors(store, stamp)
    ids = sorted(chunk_ids(store))
    int8 = tokens.read(ids)
    tokens.drop()  # as version 1 left it: float16 bytes, no scale, no version
    old = pa.schema([pa.field("chunk_id", pa.string(), nullable=False), pa.field("count", pa.int32(), nullable=False),
                     pa.field("vectors", pa.large_binary(), nullable=False)])
    store.db.create_table(tokens.name, data=pa.Table.from_pylist(
        [{"chunk_id": i, "count": len(v), "vectors": v.astype(np.float16).tobytes()} for i, v in int8.items()],
        schema=old))
    legacy = TokenVectors(store, stamp)
    assert legacy.legacy() and all(np.abs(legacy.read([i])[i] - int8[i]).max() < 1e-3 for i in ids)
    assert legacy.write([(ids[0], int8[ids[0]])]) == 0  # not written to: its rows hold no scale
    index_folder(str(docs), IndexSettings(model=FAKE, db=db))  # nothing changed but the table
    rebuilt = TokenVectors(store, stamp)
    assert not rebuilt.legacy() and rebuilt.stored_ids() == set(ids)
    assert all(np.array_equal(rebuilt.read([i])[i], int8[i]) for i in ids)


@pytest.mark.model
def test_rerank_from_stored_int8_vectors_equals_rerank_on_the_fly_with_the_real_model(docs, tmp_path):
    """MiniLM: the index's int8 word-piece vectors (from the pass that embedded each chunk) rank the
    candidates as encoding them per question does, scores within int8 rounding."""
    db = str(tmp_path / "db")
    index_folder(str(docs), IndexSettings(model="all-MiniLM-L6-v2", db=db, precision="fp32"))
    embedder = get_embedder("all-MiniLM-L6-v2", "fp32")
    store = Store(db)
    assert TokenVectors(store, store.stamp()).stored_ids() == chunk_ids(store)
    stored, fresh = Searcher.open(db, embedder), Searcher.open(db, embedder)
    fresh.reader.tokens = None  # as an index without stored vectors: every candidate encoded now
    for question in (QUESTION, "How does a cosine learning-rate schedule with warmup behave?",
                     "what is the keep probability of dropout at inference"):
        a, b = stored.rerank(question, 8), fresh.rerank(question, 8)
        assert [r.chunk_id for r in a] == [r.chunk_id for r in b]
        assert np.allclose([r.rerank_score for r in a], [r.rerank_score for r in b], atol=1e-3)


def test_reindex_keeps_the_new_tables_vectors_from_its_own_pass(docs, tmp_path):
    db = str(tmp_path / "db")
    index_folder(str(docs), IndexSettings(model=FAKE, db=db))
    embedder = get_embedder(FAKE, "auto", 16)
    before = embedder.token_texts
    reindex(IndexSettings(model=FAKE, db=db, strategy="C"))
    store = Store(db)
    assert TokenVectors(store, store.stamp()).stored_ids() == chunk_ids(store)
    assert embedder.token_texts == before  # no second pass over the new table's chunks


def test_a_large_index_reads_word_pieces_by_id_through_a_btree_and_warms_them(docs, tmp_path):
    """From ``ann_min_rows`` chunks on, the token table gets a BTREE on ``chunk_id`` (a question's
    candidates were a scan of the id column); the vectors read through it are the same, and a
    warmed searcher holds a question's worth of them before its first question."""
    db = str(tmp_path / "db")
    index_folder(str(docs), IndexSettings(model=FAKE, db=db, token_vectors=True))
    small = Store(db)
    ids = sorted(chunk_ids(small))
    before = TokenVectors(small, small.stamp()).read(ids)
    assert not TokenVectors(small, small.stamp())._table().list_indices()  # under ann_min_rows: no index

    large = Store(db, ann_min_rows=len(ids))
    tokens = TokenVectors(large, large.stamp())
    tokens.optimize()
    assert any(ix.columns == ["chunk_id"] for ix in tokens._table().list_indices())
    after = TokenVectors(large, large.stamp()).read(ids)
    assert after.keys() == before.keys() and all(np.array_equal(after[i], before[i]) for i in ids)

    searcher = Searcher.open(db, get_embedder(FAKE))
    searcher.warm()
    warmed = searcher.reader.tokens._cache.get(ids)
    assert len(warmed) == min(len(ids), 2 * searcher.rerank_config.depth)


def test_reads_through_the_dataset_equal_lancedbs_and_see_the_objects_own_writes(docs, tmp_path):
    """The reader takes rows from the Lance dataset and decodes them from Arrow's buffers: the same
    floats as LanceDB's query decoded row by row; a write through the same object is read back."""
    from citeline.index.filters import one_of
    from citeline.schemas.tokens import dequantize

    db = str(tmp_path / "db")
    index_folder(str(docs), IndexSettings(model=FAKE, db=db, token_vectors=True))
    store = Store(db)
    ids = sorted(chunk_ids(store))
    tokens = TokenVectors(store, store.stamp())
    direct = tokens.read(ids)
    assert tokens._dataset  # the dataset was read, not LanceDB's query
    through_lancedb = TokenVectors(store, store.stamp())
    through_lancedb._dataset = False  # as in a forked child, or on object storage
    rows = tokens._table().search().where(one_of("chunk_id", ids)).limit(None).to_list()
    by_row = {r["chunk_id"]: dequantize(r["count"], FAKE_DIM, r["scale"], r["vectors"]) for r in rows}
    for read in (direct, through_lancedb.read(ids)):
        assert read.keys() == by_row.keys() == set(ids)
        assert all(np.array_equal(read[i], by_row[i]) for i in ids)

    replaced = np.eye(3, FAKE_DIM, dtype=np.float32)
    tokens.write([(ids[0], replaced)])
    assert np.allclose(tokens.read([ids[0]])[ids[0]], replaced, atol=1e-2)
