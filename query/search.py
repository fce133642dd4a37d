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

from collections.abc import Mapping, Sequence
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


@dataclass
class Searcher:
    """Retrieval over one index with the embedder it was built with."""

    store: Store
    embedder: Embedder
    stamp: IndexStamp
    reranker: Reranker | None = None  # None: MaxSim over the embedder, built on first use
    rerank_config: RerankConfig = DEFAULT_RERANK
    _last_query: tuple | None = field(default=None, init=False, repr=False, compare=False)
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
        if self._last_query is not None and self._last_query[0] == query:
            return self._last_query[1]
        vector = self.embedder.embed_query(query)
        self._last_query = (query, vector)
        return vector

    def dense(self, query: str, k: int = 8, filters: Filters | None = None) -> list[Hit]:
        """The ``k`` nearest chunks; ``filters`` (every retriever takes them) apply before ranking,
        so ``k`` hits come back whenever ``k`` chunks match."""
        where = self.store.predicate(filters)
        return hits_from_rows(self.reader.dense(self.query_vector(query), k, where), DENSE, "distance")

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
        where = self.store.predicate(filters)
        dense = self.reader.dense_ranked(self.query_vector(query), depth, where)
        lexical = self.reader.bm25_ranked(query, depth, where)
        fused = rrf([[cid for cid, _ in dense], [cid for cid, _ in lexical]], k=RRF_K, limit=k,
                    weights=(dense_weight, 1.0))
        # Only the fused rows are read, with the vectors of those only BM25 found (the gate needs
        # every hit's distance): a few rows instead of 2 x depth. A row gone meanwhile is left out.
        distances = dict(dense)
        rows = self.reader.rows_of([f.chunk_id for f in fused], vectors=any(f.chunk_id not in distances for f in fused))
        q = self.query_vector(query)
        return [Hit(f.chunk_id, f.rank, f.score, HYBRID, ChunkRow.from_row(rows[f.chunk_id]),
                    distance=distances[f.chunk_id] if f.chunk_id in distances
                    else float(1.0 - np.asarray(rows[f.chunk_id]["vector"], dtype=np.float32) @ q))
                for f in fused if f.chunk_id in rows]

    def union(self, query: str, depth: int, filters: Filters | None = None) -> list[Hit]:
        """The dense top ``depth``, then the BM25 top ``depth`` that dense did not find (up to 2 x depth)."""
        dense = self.dense(query, depth, filters)
        seen = {hit.chunk_id for hit in dense}
        lexical = [hit for hit in self.bm25(query, depth, filters) if hit.chunk_id not in seen]
        pool = [*dense, *lexical]
        return self.fill_distances(query, [replace(h, rank=i) for i, h in enumerate(pool, 1)])

    def candidates(self, query: str, config: RerankConfig, filters: Filters | None = None) -> list[Hit]:
        """The list ``config`` hands the reranker, every hit with its ``distance`` (only chunks ``filters`` keep)."""
        if config.candidates == UNION:
            return self.union(query, config.depth, filters)
        if config.candidates == HYBRID:
            return self.hybrid(query, config.depth, dense_weight=config.dense_weight, filters=filters)
        if config.candidates == DENSE:
            return self.dense(query, config.depth, filters)
        return self.fill_distances(query, self.bm25(query, config.depth, filters))

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
        pool = self.candidates(query, config, filters)
        reranker = reranker or self.default_reranker()
        return rerank(query, pool, reranker, k, self.passages(pool, reranker))

    def passages(self, hits: Sequence[Hit], reranker: Reranker) -> list[Passage]:
        """What the reranker reads of each hit: its embedded text, or its stored word-piece vectors."""
        ids = [hit.chunk_id for hit in hits]
        stored = self.reader.tokens.read(ids) if self.reader.tokens and isinstance(reranker, MaxSimReranker) else {}
        texts = self.reader.texts([i for i in ids if i not in stored])
        return [Passage(texts.get(hit.chunk_id) or hit.chunk.content, stored.get(hit.chunk_id)) for hit in hits]

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
