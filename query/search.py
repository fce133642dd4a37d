"""Every retriever behind one door, each returning chunk rows in the same shape.

A returned row carries the chunk columns plus ``rank`` (from 1), ``score`` (the
retriever's own number) and ``retriever``; dense rows also carry ``distance``
(1 - cosine), which the refusal gate needs whatever retriever ordered the list.
Reranked rows also carry ``rerank_score`` (the reranker's absolute score) and
``candidate_rank`` (the row's rank in the list that was reranked).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from citeline.index.reader import ChunkReader
from citeline.index.store import Store
from citeline.pipeline.embed import Embedder
from citeline.query.fuse import rrf
from citeline.query.rerank import DEFAULT_DEPTH, MaxSimReranker, Reranker, rerank
from citeline.schemas.errors import IndexMismatch
from citeline.schemas.retrieval import BM25, DENSE, HYBRID, RERANK
from citeline.schemas.stamp import IndexStamp

RESULT_COLUMNS = ["chunk_id", "doc_id", "path", "title", "section", "start", "end", "content", "locators"]
RRF_K = 60
FUSION_DEPTH = 100  # each list fused is this long, as in the study
RERANK_CANDIDATES = HYBRID  # the list the rerank retriever reorders (docs/query.md)


@dataclass
class Searcher:
    """Retrieval over one index with the embedder it was built with."""

    store: Store
    embedder: Embedder
    stamp: IndexStamp
    reranker: Reranker | None = None  # None: MaxSim over the embedder, built on first use
    _last_query: tuple | None = field(default=None, init=False, repr=False, compare=False)
    reader: ChunkReader = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.embedder.name != self.stamp.embed_model or self.embedder.dim != self.stamp.embed_dim:
            raise IndexMismatch(
                f"query model {self.embedder.name} ({self.embedder.dim}-d) differs from the index's "
                f"{self.stamp.embed_model} ({self.stamp.embed_dim}-d): their vectors are not comparable"
            )
        # Opened once: per-query table opening and stamp reading cost more than a search.
        self.reader = self.store.reader(self.stamp, RESULT_COLUMNS)

    @classmethod
    def open(cls, uri: str, embedder: Embedder) -> "Searcher":
        store = Store(uri)
        return cls(store, embedder, store.require_stamp())

    def query_vector(self, query: str):
        """The query's embedding; the last one is kept, so hybrid and rerank embed once."""
        if self._last_query is not None and self._last_query[0] == query:
            return self._last_query[1]
        vector = self.embedder.embed_query(query)
        self._last_query = (query, vector)
        return vector

    def dense(self, query: str, k: int = 8) -> list[dict]:
        rows = self.reader.dense(self.query_vector(query), k)
        for rank, row in enumerate(rows, 1):
            row.update(rank=rank, score=row["distance"], retriever=DENSE)
        return rows

    def bm25(self, query: str, k: int = 8) -> list[dict]:
        rows = self.reader.bm25(query, k)
        for rank, row in enumerate(rows, 1):
            row.update(rank=rank, retriever=BM25)
        return rows

    def hybrid(self, query: str, k: int = 8, depth: int = FUSION_DEPTH) -> list[dict]:
        """Reciprocal rank fusion of dense and BM25: ranks, never their incomparable scores."""
        dense, lexical = self.dense(query, depth), self.bm25(query, depth)
        by_id = {row["chunk_id"]: row for row in lexical}
        by_id.update({row["chunk_id"]: row for row in dense})
        fused = rrf([[r["chunk_id"] for r in dense], [r["chunk_id"] for r in lexical]], k=RRF_K, limit=k)
        rows = []
        for hit in fused:
            row = dict(by_id[hit.chunk_id])
            row.update(rank=hit.rank, score=hit.score, retriever=HYBRID)
            rows.append(row)
        self.fill_distances(query, rows)
        return rows

    def fill_distances(self, query: str, rows: list[dict]) -> None:
        """Cosine distance for rows that only BM25 found, so the gate can judge every row."""
        missing = [row for row in rows if "distance" not in row]
        if not missing:
            return
        vectors = self.reader.vectors([row["chunk_id"] for row in missing])
        q = self.query_vector(query)
        for row in missing:
            row["distance"] = float(1.0 - vectors[row["chunk_id"]] @ q)

    def rerank(
        self, query: str, k: int = 8, candidates: str = RERANK_CANDIDATES, depth: int = DEFAULT_DEPTH,
        reranker: Reranker | None = None,
    ) -> list[dict]:
        """The top ``depth`` of the ``candidates`` retriever, reordered by a reranker; top ``k`` kept.

        Rows carry ``rerank_score``, ``candidate_rank`` and, as every row here,
        ``distance``; the reranker reads each candidate's embedded ``text`` (MaxSim reads
        the stored word-piece vectors instead where the index keeps them).
        """
        if candidates == RERANK:
            raise ValueError("rerank candidates must come from dense, bm25 or hybrid")
        pool = self.search(query, candidates, max(depth, k))
        if candidates == BM25:
            self.fill_distances(query, pool)
        reranker = reranker or self.default_reranker()
        ids = [row["chunk_id"] for row in pool]
        stored = self.reader.tokens.read(ids) if self.reader.tokens and isinstance(reranker, MaxSimReranker) else {}
        texts = self.reader.texts([i for i in ids if i not in stored])
        for row in pool:
            row["text"] = texts.get(row["chunk_id"], row["content"])
            if row["chunk_id"] in stored:
                row["token_vectors"] = stored[row["chunk_id"]]
        rows = rerank(query, pool, reranker, k)
        for row in rows:  # same shape as the other retrievers' rows
            del row["text"]
            row.pop("token_vectors", None)
        return rows

    def default_reranker(self) -> Reranker:
        if self.reranker is None:
            self.reranker = MaxSimReranker(self.embedder)
        return self.reranker

    def search(self, query: str, retriever: str = DENSE, k: int = 8) -> list[dict]:
        methods = {DENSE: self.dense, BM25: self.bm25, HYBRID: self.hybrid, RERANK: self.rerank}
        if retriever not in methods:
            raise ValueError(f"unknown retriever {retriever!r}; choose one of {sorted(methods)}")
        return methods[retriever](query, k)
