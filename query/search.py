"""Every retriever behind one door, each returning ``Hit``s of the same shape.

The reader's table rows become ``Hit``s here, once (:func:`hits_from_rows`); after
that every stage returns new hits (``dataclasses.replace``) and never edits one.
A hit carries its ``ChunkRow``, ``rank`` (from 1), ``score`` (the retriever's own
number) and ``retriever``; ``distance`` (1 - cosine), which the refusal gate needs
whatever retriever ordered the list, is filled for BM25-only hits by
:meth:`Searcher.fill_distances`. Reranked hits also carry ``rerank_score`` and
``candidate_rank`` (see ``Hit``).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from citeline.index.filters import sql_string
from citeline.index.reader import ChunkReader
from citeline.index.store import Store
from citeline.pipeline.embed import Embedder
from citeline.query.fuse import rrf
from citeline.query.rerank import MaxSimReranker, Passage, Reranker, rerank
from citeline.schemas.errors import IndexMismatch
from citeline.schemas.retrieval import (
    BM25, CHUNK_COLUMNS, DEFAULT_RERANK, DENSE, HYBRID, RERANK, UNION, ChunkRow, Filters, Hit, RerankConfig,
)
from citeline.schemas.stamp import IndexStamp

RRF_K = 60
FUSION_DEPTH = 100  # each list fused is this long, as in the study
_beside: ThreadPoolExecutor | None = None
_beside_lock = threading.Lock()


def beside() -> ThreadPoolExecutor:
    """The threads BM25 runs on beside the dense search (:meth:`Searcher.union`): a few that
    wait on LanceDB, shared by the process."""
    global _beside
    with _beside_lock:
        if _beside is None:
            _beside = ThreadPoolExecutor(max_workers=4, thread_name_prefix="citeline-bm25")
        return _beside


def _forget_beside() -> None:
    """In a forked child: a pool's threads do not survive the fork while its count of idle
    ones does, so the child's first union would wait on a thread that is not there."""
    global _beside, _beside_lock
    _beside, _beside_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_beside)


@dataclass
class Searcher:
    """Retrieval over one index with the embedder it was built with."""

    store: Store
    embedder: Embedder
    stamp: IndexStamp
    reranker: Reranker | None = None  # None: MaxSim over the embedder, built on first use
    rerank_config: RerankConfig = DEFAULT_RERANK
    _last_query: tuple | None = field(default=None, init=False, repr=False, compare=False)
    _last_nearest: tuple | None = field(default=None, init=False, repr=False, compare=False)
    _calibration: tuple[str | None] | None = field(default=None, init=False, repr=False, compare=False)
    reader: ChunkReader = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.embedder.name != self.stamp.embed_model or self.embedder.dim != self.stamp.embed_dim:
            raise IndexMismatch(
                f"query model {self.embedder.name} ({self.embedder.dim}-d) differs from the index's "
                f"{self.stamp.embed_model} ({self.stamp.embed_dim}-d): their vectors are not comparable"
            )
        # Opened once: per-query table opening and stamp reading cost more than a search.
        self.reader = self.store.reader(self.stamp, list(CHUNK_COLUMNS))

    @classmethod
    def open(cls, uri: str, embedder: Embedder) -> "Searcher":
        store = Store(uri)
        return cls(store, embedder, store.require_stamp())

    def calibration(self) -> str | None:
        """The stored gate calibration (JSON) of the table this searcher reads, read once.

        Reading it took a third of a warm ``ask`` (two scans of the meta table); a calibration
        committed later is seen by a new searcher (``Index.refresh`` opens one).
        """
        if self._calibration is None:
            self._calibration = (self.store.calibration(self.reader.table.name),)
        return self._calibration[0]

    def query_vector(self, query: str):
        """The query's embedding; the last one is kept, so hybrid and rerank embed once."""
        last = self._last_query  # read once: the service asks from several threads
        if last is not None and last[0] == query:
            return last[1]
        vector = self.embedder.embed_query(query)
        self._last_query = (query, vector)
        return vector

    def dense(self, query: str, k: int = 8, filters: Filters | None = None) -> list[Hit]:
        """The ``k`` nearest chunks; ``filters`` (every retriever takes them) apply before ranking,
        so ``k`` hits come back whenever ``k`` chunks match."""
        where = self.store.predicate(filters)
        last = self._last_nearest
        if not self.reader.exact and last is not None and last[:2] == (query, where) and len(last[2]) >= k:
            # ask's gate reads the nearest k of the question it just reranked: the candidates'
            # search, the same HNSW search with more refined, already ranked them
            return self.with_rows(ranked_hits(last[2][:k], DENSE))
        return hits_from_rows(self.reader.dense(self.query_vector(query), k, where), DENSE, "distance")

    def nearest(self, query: str, k: int, where: str | None) -> list[tuple[str, float]]:
        """``(chunk_id, distance)`` of the ``k`` nearest chunks, no row read; the last list is kept."""
        ranked = self.reader.dense_ranked(self.query_vector(query), k, where)
        self._last_nearest = (query, where, ranked)
        return ranked

    def dense_many(self, queries: Sequence[str], k: int = 8) -> dict[str, list[Hit]]:
        """Each query's ``k`` nearest chunks, the queries embedded in batches (unfiltered)."""
        unique = list(dict.fromkeys(queries))
        vectors = self.embedder.embed_queries(unique) if unique else []
        return {q: hits_from_rows(self.reader.dense(v, k, None), DENSE, "distance") for q, v in zip(unique, vectors)}

    def bm25(self, query: str, k: int = 8, filters: Filters | None = None) -> list[Hit]:
        return hits_from_rows(self.reader.bm25(query, k, self.store.predicate(filters)), BM25, "score")

    def mentions(self, word: str, filters: Filters | None = None, outside: str | None = None) -> bool:
        """Whether any chunk (of those ``filters`` keep, and not of document ``outside``) holds
        ``word`` by the full-text index's analyser (lower case, stemmed, accents folded): one
        look-up, no row read."""
        where = self.store.predicate(filters)
        if outside is not None:
            other = f"doc_id != {sql_string(outside)}"
            where = other if where is None else f"({where}) AND {other}"
        return bool(self.reader.bm25_ranked(word, 1, where))

    def hybrid(self, query: str, k: int = 8, depth: int = FUSION_DEPTH, dense_weight: float = 1.0,
               filters: Filters | None = None) -> list[Hit]:
        """Reciprocal rank fusion of dense and BM25: ranks, never their incomparable scores.

        ``dense_weight`` weighs the dense list's RRF terms against BM25's 1.
        """
        return self.with_rows(self.fused(query, k, dense_weight, filters, depth))

    def fused(self, query: str, k: int, dense_weight: float = 1.0, filters: Filters | None = None,
              depth: int = FUSION_DEPTH) -> list[Hit]:
        """:meth:`hybrid`'s top ``k`` as ranked ids with their distances, no row read: the rows
        of 2 x ``depth`` ranked candidates were most of hybrid's time at a million chunks."""
        where = self.store.predicate(filters)
        dense = self.nearest(query, depth, where)
        lexical = self.reader.bm25_vectors(query, depth, where)
        fused = rrf([[cid for cid, _ in dense], [cid for cid, *_ in lexical]], k=RRF_K, limit=k,
                    weights=(dense_weight, 1.0))
        # the gate needs every hit's distance: those only BM25 found have it from their vector
        q = self.query_vector(query)
        distances = {cid: float(1.0 - vector @ q) for cid, _, vector in lexical} | dict(dense)
        return [Hit(f.chunk_id, f.rank, f.score, HYBRID, distance=distances[f.chunk_id]) for f in fused]

    def union(self, query: str, depth: int, filters: Filters | None = None,
              fetch: Callable[[list[str]], object] | None = None) -> list[Hit]:
        """The dense top ``depth``, then the BM25 top ``depth`` that dense did not find (up to
        2 x depth), as ranked ids with their distances: no hit carries its row
        (:meth:`with_rows` reads those of the hits kept).

        BM25 runs in a thread of its own beside the question's embedding and HNSW search (it
        needs neither); ``fetch`` (what the reranker will read, by id) is then called once on
        the union: at 100k chunks a read of each list's word pieces beside the other searches
        took 14 and 17 ms, one read of both after them ~13 (docs/benchmarks.md section 27).
        """
        where = self.store.predicate(filters)
        pending = beside().submit(self.reader.bm25_vectors, query, depth, where)
        dense = self.nearest(query, depth, where)
        seen = {cid for cid, _ in dense}
        lexical = [found for found in pending.result() if found[0] not in seen]
        if fetch is not None:
            fetch([*seen, *(cid for cid, *_ in lexical)])
        return [*ranked_hits(dense, DENSE), *lexical_hits(lexical, self.query_vector(query), len(dense) + 1)]

    def candidates(self, query: str, config: RerankConfig, filters: Filters | None = None,
                   fetch: Callable[[list[str]], object] | None = None) -> list[Hit]:
        """The list ``config`` hands the reranker (only chunks ``filters`` keep), every hit with its
        ``distance``; hits carry no row, so reranking 100 candidates reads the rows of the ``k`` it
        keeps (at 100k chunks, reading them all was a third of a question's time)."""
        if config.candidates == UNION:
            return self.union(query, config.depth, filters, fetch)
        if config.candidates == HYBRID:
            return self.fused(query, config.depth, config.dense_weight, filters)
        where = self.store.predicate(filters)
        if config.candidates == DENSE:
            return ranked_hits(self.nearest(query, config.depth, where), DENSE)
        return lexical_hits(self.reader.bm25_vectors(query, config.depth, where), self.query_vector(query))

    def with_rows(self, hits: Sequence[Hit]) -> list[Hit]:
        """The hits, each carrying its chunk's row (one read for those without); a row gone is left out."""
        missing = [hit.chunk_id for hit in hits if hit.chunk is None]
        if not missing:
            return list(hits)
        rows = self.reader.rows_of(missing)
        return [hit if hit.chunk is not None else replace(hit, chunk=ChunkRow.from_row(rows[hit.chunk_id]))
                for hit in hits if hit.chunk is not None or hit.chunk_id in rows]

    def fill_distances(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        """The hits, those that only BM25 found given their cosine distance, so the gate can judge every one."""
        missing = [hit.chunk_id for hit in hits if hit.distance is None]
        if not missing:
            return list(hits)
        vectors = self.reader.vectors(missing)
        q = self.query_vector(query)
        return [hit if hit.distance is not None
                else replace(hit, distance=float(1.0 - vectors[hit.chunk_id] @ q)) for hit in hits]

    def rerank(
        self, query: str, k: int = 8, candidates: str | None = None, depth: int | None = None,
        reranker: Reranker | None = None, config: RerankConfig | None = None, filters: Filters | None = None,
    ) -> list[Hit]:
        """The candidates of ``config`` (default: the searcher's ``rerank_config``), reordered
        by a reranker; top ``k`` kept. ``candidates`` and ``depth`` override the config's.

        Hits carry ``rerank_score``, ``candidate_rank`` and, as every hit here,
        ``distance``; the reranker reads each candidate's embedded ``text`` (MaxSim reads
        the stored word-piece vectors instead where the index keeps them).
        """
        if candidates == RERANK:
            raise ValueError("rerank candidates must come from dense, bm25, hybrid or union")
        config = config or self.rerank_config
        if candidates is not None and candidates != config.candidates:  # the weight was the other list's
            config = RerankConfig(candidates, config.depth, cosine_weight=config.cosine_weight)
        config = replace(config, depth=max(depth or config.depth, k))
        reranker = reranker or self.default_reranker()
        pool = self.candidates(query, config, filters, self.stored_tokens(reranker))
        return self.with_rows(rerank(query, pool, reranker, k, self.passages(pool, reranker)))

    def stored_tokens(self, reranker: Reranker) -> Callable[[list[str]], object] | None:
        """What reads (and keeps, in the reader's cache) the stored word pieces ``reranker`` scores, if any."""
        return self.reader.tokens.read if self.reader.tokens and isinstance(reranker, MaxSimReranker) else None

    def passages(self, hits: Sequence[Hit], reranker: Reranker) -> list[Passage]:
        """What the reranker reads of each hit: its embedded text, or its stored word-piece vectors."""
        ids = [hit.chunk_id for hit in hits]
        stored = read(ids) if (read := self.stored_tokens(reranker)) else {}
        texts = self.reader.texts([i for i in ids if i not in stored])
        return [Passage(texts.get(hit.chunk_id) or (hit.chunk.content if hit.chunk else ""), stored.get(hit.chunk_id))
                for hit in hits]

    def warm(self) -> None:
        """Load what the first question would: the model, the reranker, and the table's vector,
        full-text and word-piece indexes (a service pays this at start, not its first asker;
        at 100k chunks the first read of candidates' word pieces alone took 2.3 s)."""
        vector = self.query_vector("warm up")
        # As many as a question's candidates (two top-depth lists): LanceDB's first read of that
        # many rows by id cost seconds at 100k chunks, the next ones milliseconds.
        nearest = [cid for cid, _ in self.reader.dense_ranked(vector, 2 * self.rerank_config.depth)]
        try:
            self.reader.bm25_ranked("warm up", 1)
        except Exception:  # noqa: BLE001 - no full-text index yet (a run died first): the bm25 question says so
            pass
        if self.reader.tokens is not None:
            self.reader.tokens.read(nearest)
        self.default_reranker()

    def default_reranker(self) -> Reranker:
        if self.reranker is None:
            self.reranker = MaxSimReranker(self.embedder, self.rerank_config.cosine_weight)
        return self.reranker

    def search(self, query: str, retriever: str = DENSE, k: int = 8, filters: Filters | None = None) -> list[Hit]:
        methods = {DENSE: self.dense, BM25: self.bm25, HYBRID: self.hybrid, RERANK: self.rerank}
        if retriever not in methods:
            raise ValueError(f"unknown retriever {retriever!r}; choose one of {sorted(methods)}")
        return methods[retriever](query, k, filters=filters)


def ranked_hits(ranked: Sequence[tuple[str, float]], retriever: str) -> list[Hit]:
    """``(chunk_id, distance)`` pairs, nearest first, as hits without rows, ranked from 1.

    >>> [(h.chunk_id, h.rank, h.distance) for h in ranked_hits([("a", 0.2), ("b", 0.3)], "dense")]
    [('a', 1, 0.2), ('b', 2, 0.3)]
    """
    return [Hit(cid, rank, distance, retriever, distance=distance) for rank, (cid, distance) in enumerate(ranked, 1)]


def lexical_hits(found: Sequence[tuple[str, float, np.ndarray]], query: np.ndarray, start: int = 1) -> list[Hit]:
    """BM25's ``(chunk_id, score, vector)`` as hits without rows, ranked from ``start``, each with
    its cosine distance to the ``query`` vector (the gate judges every hit by it)."""
    return [Hit(cid, rank, score, BM25, distance=float(1.0 - vector @ query))
            for rank, (cid, score, vector) in enumerate(found, start)]


def hits_from_rows(rows: Sequence[Mapping], retriever: str, score: str) -> list[Hit]:
    """The reader's rows as hits, ranked from 1 in their order.

    Args:
        rows: table rows (the chunk columns plus the retriever's number), best first.
        retriever: the retriever's name, stamped on each hit.
        score: the row key holding the retriever's number; "distance" also fills
            ``Hit.distance``.
    """
    return [
        Hit(row["chunk_id"], rank, float(row[score]), retriever, ChunkRow.from_row(row),
            distance=float(row["distance"]) if score == "distance" else None)
        for rank, row in enumerate(rows, 1)
    ]
