"""The active chunks table as queries read it: opened and stamp-checked once, searched many times.

Two ways to rank by cosine, chosen by whether the table has a vector index:

- without one (tables under ``Store.ann_min_rows``), the reader holds the vectors and
  the result columns in memory and scans them exactly: a dot product over 1k x 384
  floats takes ~0.05 ms, while one LanceDB flat search costs ~3 ms here
  (docs/benchmarks.md);
- with one (``Store.finish_run`` builds it once a table reaches that size), LanceDB's
  HNSW search with a refine step that re-ranks candidates on their full vectors.

BM25 is always LanceDB's full-text index. A reader is a snapshot of the table version
it opened (LanceDB tables do not re-check for new versions by default): a long-lived
process opens a new reader to see later writes.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from citeline.index import lance_direct
from citeline.index.filters import one_of
from citeline.index.schema_once import schema_once
from citeline.index.tokens import TokenVectors

# HNSW candidates per search. 400 gave recall@10 .99 at 100k chunks but .88 at 1M, 1,600 gives
# .97 there for a few ms more (bench/ann_scaling.py; docs/benchmarks.md section 14); LanceDB's
# default (1.5 k) gave .67 at 100k.
ANN_EF = 1600
ANN_REFINE = 5  # candidates per result re-ranked on the full vectors (the index stores them quantised)
# Row addresses kept of the chunks searches found (~100 bytes each): a question's kept rows are
# read by address, not by a filter on their ids (at 100k chunks 1 ms against 4.5 ms).
ADDRESSES_KEPT = 100_000


class ChunkReader:
    """Dense, BM25 and by-id reads of one opened chunks table, rows as dicts of ``columns``.

    Args:
        table: an open LanceDB chunks table (``Store.chunks`` checked its stamp).
        columns: the chunk columns every returned row carries (``chunk_id`` among them).
        tokens: the table's stored word-piece vectors, when the index keeps them.
        owned: SQL keeping only the rows a document record owns (``Store.owned_where``);
            None when every row is owned, as always but after a writer was killed between
            its chunks and its records: every read goes through it.
    """

    def __init__(self, table, columns: Sequence[str], tokens: TokenVectors | None = None, owned: str | None = None):
        self.table = schema_once(table)
        self.columns = list(columns)
        self.tokens = tokens
        self.owned = owned
        self.rows = table.count_rows()
        self.exact = not has_vector_index(table)
        self.ef, self.refine = ANN_EF, ANN_REFINE
        self._addresses: dict[str, int] = {}
        self._dataset = None
        if self.exact:
            self._load()

    def _load(self) -> None:
        search = self._search()
        if self.owned is not None:
            search = search.where(self.owned)
        data = search.select([*self.columns, "vector"]).limit(None).to_arrow()
        self.rows = data.num_rows
        dim = data.schema.field("vector").type.list_size
        self._matrix = data.column("vector").combine_chunks().values.to_numpy().reshape(-1, dim)
        self._values = {c: data.column(c).to_pylist() for c in self.columns}
        self._position = {cid: i for i, cid in enumerate(self._values["chunk_id"])}

    def _search(self, query=None, **kwargs):
        """``table.search``, row ids declined: LanceDB otherwise looks the table's schema up again
        when each query runs (a round trip to its event loop; ~16 a question, ~10 ms at 100k)."""
        return self.table.search(query, **kwargs).with_row_id(False)

    def _direct(self, columns: list[str], where: str | None, **search):
        """A search of the Lance dataset under the table (index/lance_direct.py; the version this
        reader opened), with each row's address (``_rowid``: :meth:`rows_of` reads the rows kept
        by it); None where there is none to read: LanceDB's query builders serve it then, with
        the same rows and scores (tests/unit/test_reader.py). A table scanned in memory (``exact``)
        keeps LanceDB: its only search is BM25's, and opening the dataset too cost its first
        question ~40 ms."""
        if self._dataset is None:
            self._dataset = (not self.exact and lance_direct.dataset(self.table)) or False
        if not self._dataset or not lance_direct.usable():
            return None
        kept = self._kept(where)
        found = self._dataset.to_table(columns=columns, with_row_id=True, filter=kept,
                                       prefilter=True if kept is not None else None, **search)
        if len(self._addresses) > ADDRESSES_KEPT:
            self._addresses = {}
        self._addresses.update(zip(found.column("chunk_id").to_pylist(), found.column("_rowid").to_pylist()))
        return found

    def _nearest_rows(self, vector: np.ndarray, k: int, where: str | None, columns: list[str]):
        """``columns`` of the HNSW search's ``k`` nearest (of those ``where`` keeps), as Arrow."""
        found = self._direct(columns, where, nearest=self._nearest(vector, k))
        return found if found is not None else self._ann(self._search(vector), k, where).select(columns).to_arrow()

    def _bm25_rows(self, query: str, k: int, where: str | None, columns: list[str]):
        """``columns`` of the ``k`` best by BM25 (of those ``where`` keeps), as Arrow."""
        found = self._direct(columns, where, full_text_query=query, limit=k)
        return found if found is not None else self._fts(query, k, where).select(columns).to_arrow()

    def _nearest(self, vector: np.ndarray, k: int) -> dict:
        """The dataset's vector query of :meth:`_ann`'s search."""
        return {"column": "vector", "q": vector, "k": k, "metric": "cosine", "ef": max(self.ef, k * (self.refine or 1)),
                **({"refine_factor": self.refine} if self.refine else {})}

    def _fts(self, query: str, k: int, where: str | None):
        """A BM25 search of the ``k`` best over the rows ``where`` keeps (filtered before ranking)."""
        search = self._search(query, query_type="fts").limit(k)
        kept = self._kept(where)
        return search if kept is None else search.where(kept, prefilter=True)

    def _row(self, i: int) -> dict:
        return {c: values[i] for c, values in self._values.items()}

    def dense(self, vector: np.ndarray, k: int, where: str | None = None) -> list[dict]:
        """The ``k`` nearest chunks (of those ``where`` keeps), each with ``distance`` = 1 - cosine, nearest first."""
        vector = np.asarray(vector, dtype=np.float32)
        if k <= 0:
            return []
        if where is not None:
            return self._dense_where(vector, k, where)
        if not self.exact:
            return self._ann_rows(vector, k, None)
        if not self.rows:
            return []
        similarity = self._matrix @ vector
        top = np.argpartition(-similarity, k - 1)[:k] if k < self.rows else np.arange(self.rows)
        top = top[np.argsort(-similarity[top], kind="stable")]
        return [{**self._row(i), "distance": float(1.0 - similarity[i])} for i in top]

    def _dense_where(self, vector: np.ndarray, k: int, where: str) -> list[dict]:
        """LanceDB's search over the rows ``where`` keeps, filtered before ranking: an exact scan
        of them without a vector index; with one, HNSW under the filter (it returned the exact
        top 10 for a filter keeping 10 of 6,000 rows here, so no fallback scan is needed)."""
        if not self.exact:
            return self._ann_rows(vector, k, where)
        search = self._search(vector).distance_type("cosine").where(self._kept(where), prefilter=True).limit(k)
        return [_renamed(row, "_distance", "distance") for row in search.select([*self.columns, "_distance"]).to_list()]

    def _ann_rows(self, vector: np.ndarray, k: int, where: str | None) -> list[dict]:
        """The HNSW search's ``k`` nearest rows (of those ``where`` keeps), with ``distance``."""
        found = self._nearest_rows(vector, k, where, [*self.columns, "_distance"])
        return [_renamed(row, "_distance", "distance") for row in _without_address(found).to_pylist()]

    def dense_ranked(self, vector: np.ndarray, k: int, where: str | None = None) -> list[tuple[str, float]]:
        """``(chunk_id, distance)`` of the ``k`` nearest, nearest first, no other column read: a
        fusion keeps a few of 2 x 100 ranked ids, and reading whole rows for all of them was
        most of hybrid's time at a million chunks (docs/benchmarks.md, section 14)."""
        if self.exact or k <= 0:
            return [(row["chunk_id"], row["distance"]) for row in self.dense(vector, k, where)]
        vector = np.asarray(vector, dtype=np.float32)
        found = self._nearest_rows(vector, k, where, ["chunk_id", "_distance"])
        return list(zip(found.column("chunk_id").to_pylist(), map(float, found.column("_distance").to_pylist())))

    def bm25_ranked(self, query: str, k: int, where: str | None = None) -> list[tuple[str, float]]:
        """``(chunk_id, score)`` of the ``k`` best by BM25, best first, no other column read."""
        if not query.strip() or k <= 0:
            return []
        found = self._bm25_rows(query, k, where, ["chunk_id", "_score"])
        return list(zip(found.column("chunk_id").to_pylist(), map(float, found.column("_score").to_pylist())))

    def bm25_vectors(self, query: str, k: int, where: str | None = None) -> list[tuple[str, float, np.ndarray]]:
        """``(chunk_id, score, unit vector)`` of the ``k`` best by BM25, best first: a reranker's
        candidates need each one's cosine, and reading the vectors in the search itself saved a
        second read by id of up to ``k`` rows."""
        if self.exact:
            return [(cid, score, self._matrix[self._position[cid]])
                    for cid, score in self.bm25_ranked(query, k, where) if cid in self._position]
        if not query.strip() or k <= 0:
            return []
        found = self._bm25_rows(query, k, where, ["chunk_id", "_score", "vector"])
        if not found.num_rows:
            return []
        dim = found.schema.field("vector").type.list_size
        matrix = found.column("vector").combine_chunks().values.to_numpy().reshape(-1, dim)
        return list(zip(found.column("chunk_id").to_pylist(), map(float, found.column("_score").to_pylist()), matrix))

    def rows_of(self, chunk_ids: Sequence[str], vectors: bool = False) -> dict[str, dict]:
        """The given chunks' rows (``columns``, and ``vector`` when asked), by chunk id."""
        if self.exact:
            return {cid: {**self._row(self._position[cid]), **({"vector": self._matrix[self._position[cid]]}
                                                               if vectors else {})}
                    for cid in chunk_ids if cid in self._position}
        columns = [*self.columns, *(["vector"] if vectors else [])]
        known = [self._addresses[cid] for cid in chunk_ids if cid in self._addresses]
        rows = {row["chunk_id"]: row for row in self._at(known, columns)}
        rest = [cid for cid in chunk_ids if cid not in rows]
        return rows | {row["chunk_id"]: row for row in self._where(rest, columns)}

    def _at(self, addresses: list[int], columns: list[str]) -> list[dict]:
        """The rows at ``addresses`` (from this reader's searches), ``columns`` of each.

        Lance's own take by address, not LanceDB's ``take_row_ids``: the rows of a question's
        kept chunks in ~1 ms against ~2.5 (the hop to LanceDB's event loop and back). It is
        underscored in pylance (pinned below 14); ``tests/unit/test_reader.py`` holds
        it to the rows the ids name.
        """
        if not addresses:
            return []
        if self._dataset and lance_direct.usable():
            return self._dataset._take_rows(addresses, columns=columns).to_pylist()
        return self.table.take_row_ids(addresses).select(columns).to_list()

    def _ann(self, search, k: int, where: str | None):
        """``search`` (a vector query) over the HNSW index with this reader's ef and refine factor."""
        search = search.distance_type("cosine").limit(k)
        if (kept := self._kept(where)) is not None:
            search = search.where(kept, prefilter=True)
        search = search.ef(max(self.ef, k * (self.refine or 1)))  # k x refine candidates; ef no fewer
        return search.refine_factor(self.refine) if self.refine else search

    def bm25(self, query: str, k: int, where: str | None = None) -> list[dict]:
        """The ``k`` best chunks (of those ``where`` keeps) by BM25 over the embedded ``text``, each with ``score``."""
        if not query.strip() or k <= 0:
            return []
        if not self.exact:
            found = self._bm25_rows(query, k, where, [*self.columns, "_score"])
            return [_renamed(row, "_score", "score") for row in _without_address(found).to_pylist()]
        return [{**self._row(self._position[cid]), "score": score} for cid, score in self.bm25_ranked(query, k, where)]

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored unit vectors of the given chunks, by chunk id."""
        if self.exact:
            return {cid: self._matrix[self._position[cid]] for cid in chunk_ids if cid in self._position}
        rows = self._where(chunk_ids, ["chunk_id", "vector"])
        return {r["chunk_id"]: np.asarray(r["vector"], dtype=np.float32) for r in rows}

    def texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """The embedded ``text`` (header + content) of the given chunks, by chunk id."""
        return {r["chunk_id"]: r["text"] for r in self._where(chunk_ids, ["chunk_id", "text"])}

    def _where(self, chunk_ids: Sequence[str], columns: list[str]) -> list[dict]:
        if not chunk_ids:
            return []
        where = one_of("chunk_id", chunk_ids)
        if self.owned is not None:
            where = f"({where.to_sql()}) AND {self.owned}"
        return self._search().where(where).select(columns).limit(None).to_list()

    def _kept(self, where: str | None) -> str | None:
        """``where`` and the rows a record owns, as one filter (None: every row)."""
        if self.owned is None:
            return where
        return self.owned if where is None else f"({where}) AND {self.owned}"


def _without_address(found):
    """A search's rows without the ``_rowid`` column :meth:`ChunkReader._direct` adds."""
    return found.drop_columns(["_rowid"]) if "_rowid" in found.column_names else found


def _renamed(row: dict, old: str, new: str) -> dict:
    row[new] = float(row.pop(old))
    return row


def has_vector_index(table) -> bool:
    return any(ix.columns == ["vector"] for ix in table.list_indices())
