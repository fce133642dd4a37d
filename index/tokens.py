"""Precomputed word-piece vectors of one chunks table, for MaxSim reranking without a forward pass.

By default an index keeps a ``tokens_<hash>`` table beside its chunks table, filled from the
same forward pass that embeds each chunk (pipeline/prepare.py), and every run keeps it in step
(runs add the new chunks' vectors and prune those of chunks that are gone; a chunk whose
vectors could not come from its embedding pass is encoded at the end of the run).
``citeline index --no-token-vectors`` drops it and stops storing them.

Vectors are int8 with one float16 scale per word-piece (``quantize``): ~39 KiB per chunk on
the dev corpus (~104 word-pieces x (384 + 2) bytes), half of the float16 rows of table
version 1, against 1.5 KiB for the chunk's sentence vector: a trade of disk for query time.
A chunk without stored vectors is scored on the fly, so a stale or partial table costs
speed, never correctness.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
from lancedb.index import BTree

from citeline.index import compaction, lance_direct
from citeline.index.filters import one_of
from citeline.index.schema_once import schema_once
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.tokens import dequantize, token_row
from citeline.schemas.tables import TOKENS_KEY, TOKENS_SCHEMA, TOKENS_VERSION_KEY, chunks_table_name, tokens_table_name

# What a query reader keeps decoded: ~1,600 MiniLM chunks (~104 word-pieces x 384 float32),
# so a 1k-chunk index reads each chunk's vectors from disk once. Reading 100 candidates' vectors
# cost a third of a warm ask (docs/benchmarks.md, section 9).
READ_CACHE_BYTES = 256 * 2**20


def keeps(store, setting: bool | None) -> bool:
    """Whether the index in ``store`` keeps token vectors: as ``setting`` says, or when None (no
    flag given) as the index says (yes, unless ``index --no-token-vectors`` recorded "off")."""
    if setting is not None:
        return setting
    return store.meta_value(TOKENS_KEY) != "off"


def token_vectors_due(store, stamp: IndexStamp, keep: bool) -> bool:
    """Whether a run has token-vector work: a table to drop, to rebuild, or short of its chunks."""
    tokens = TokenVectors(store, stamp)
    if not keep:
        return tokens.exists()
    return tokens.legacy() or tokens.count() != store.chunks(stamp).count_rows()


class TokenVectors:
    """The token table of ``stamp``'s chunks table in ``store``.

    Args:
        cache_bytes: keep up to this many bytes of vectors :meth:`read` decoded (float32), least
            recently read dropped first; 0 keeps none. A chunk id names one embedded text, so its
            vectors never change: the queries' reader keeps them (``Store.reader``).
    """

    def __init__(self, store, stamp: IndexStamp, cache_bytes: int = 0):
        self.store = store
        self.stamp = stamp
        self.name = tokens_table_name(stamp)
        self._opened = None
        self._reading = None  # the opened table as reads see it (index/schema_once.py)
        self._dataset = None  # its Lance dataset, False where there is none; a write here drops it
        self._legacy: bool | None = None  # the reads' copy of legacy(), for a table that stays open
        self._cache = _Recent(cache_bytes) if cache_bytes > 0 else None

    def exists(self) -> bool:
        return self._opened is not None or self.store.has_table(self.name)

    def _table(self):
        if self._opened is None:
            self._opened = (self.store.db.open_table(self.name) if self.store.has_table(self.name)
                            else self.store.db.create_table(self.name, schema=TOKENS_SCHEMA, exist_ok=True))
        return self._opened

    def _writable(self):
        """The table, for a write: the dataset reads went through stays at the version before it."""
        self._dataset = None
        return self._table()

    def legacy(self) -> bool:
        """Whether the table is version 1 (float16 rows, no scales): read, but not written to."""
        return self.exists() and TOKENS_VERSION_KEY not in (self._table().schema.metadata or {})

    def drop(self) -> bool:
        """Drop the table (its disk back); True when there was one."""
        if not self.exists():
            return False
        self.store.db.drop_table(self.name)
        self._opened = self._reading = self._legacy = self._dataset = None
        if self._cache is not None:
            self._cache = _Recent(self._cache.budget)
        return True

    def count(self) -> int:
        """Chunks with stored vectors (a row count: no scan)."""
        return self._table().count_rows() if self.exists() else 0

    def stored_ids(self) -> set[str]:
        if not self.exists():
            return set()
        return set(self._table().search().select(["chunk_id"]).limit(None).to_arrow().column("chunk_id").to_pylist())

    def missing(self) -> list[tuple[str, str]]:
        """(chunk id, embedded text) of the chunks that have no stored vectors yet."""
        chunks = self.store.db.open_table(chunks_table_name(self.stamp))
        ids = chunks.search().select(["chunk_id"]).limit(None).to_arrow().column("chunk_id").to_pylist()
        todo = sorted(set(ids) - self.stored_ids())
        out: list[tuple[str, str]] = []
        for start in range(0, len(todo), 500):
            rows = chunks.search().where(one_of("chunk_id", todo[start:start + 500])).select(
                ["chunk_id", "text"]).limit(None).to_list()
            out.extend((r["chunk_id"], r["text"]) for r in rows)
        return sorted(out)

    def prune(self) -> int:
        """Forget the vectors of chunks no longer in the chunks table; return how many."""
        if not self.exists():
            return 0
        chunks = self.store.db.open_table(chunks_table_name(self.stamp))
        live = set(chunks.search().select(["chunk_id"]).limit(None).to_arrow().column("chunk_id").to_pylist())
        gone = sorted(self.stored_ids() - live)
        for start in range(0, len(gone), 500):
            self._writable().delete(one_of("chunk_id", gone[start:start + 500]))
        return len(gone)

    def write(self, items: Iterable[tuple[str, np.ndarray]]) -> int:
        """Store (chunk id, (count, dim) unit vectors) pairs in one commit; return how many."""
        return self.write_rows([token_row(cid, v) for cid, v in items])

    def write_rows(self, rows: list[dict]) -> int:
        """Store rows ``token_row`` made (by chunk id, replacing) in one commit; return how many.

        A version 1 table takes none (its rows hold no scale): the run's fill rebuilds it.
        """
        if rows and self.legacy():
            return 0
        if rows:
            (self._writable().merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all()
             .execute(pa.Table.from_pylist(rows, schema=TOKENS_SCHEMA)))
        return len(rows)

    def copy(self, pairs: Mapping[str, str]) -> int:
        """Store under each new chunk id the vectors of the old one it names, in one commit; return how many.

        For chunks that kept their sentence vector because their embedded text is unchanged
        (pipeline/reuse.py): the word-piece vectors are a function of that text too. An old
        id without stored vectors is left out (its new chunk is encoded by the next fill).
        """
        if not pairs or not self.exists() or self.legacy():
            return 0
        olds = sorted(set(pairs.values()))
        stored = {}
        for start in range(0, len(olds), 500):
            for row in self._table().search().where(one_of("chunk_id", olds[start:start + 500])).limit(None).to_list():
                stored[row["chunk_id"]] = row
        rows = [{**stored[old], "chunk_id": new} for new, old in sorted(pairs.items()) if old in stored]
        if rows:
            (self._writable().merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all()
             .execute(pa.Table.from_pylist(rows, schema=TOKENS_SCHEMA)))
        return len(rows)

    def optimize(self) -> bool:
        """Compact the runs' small commits once enough piled up (index/compaction.py: LanceDB's own
        optimize rewrote the whole table each run), and keep the id index current: from
        ``ann_min_rows`` chunks on, reads by chunk id go through a BTREE index rather than a scan
        of the id column (100k chunks: rerank 109 → 97 ms a question, docs/benchmarks.md section
        17). True when it compacted."""
        if not self.exists():
            return False
        table = self._writable()
        if table.count_rows() >= self.store.ann_min_rows and not any(
                "chunk_id" in ix.columns for ix in table.list_indices()):
            table.create_index("chunk_id", config=BTree())
        return compaction.optimize(table)

    def read(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of the given chunks (float32, one row per word-piece), by chunk id."""
        if not chunk_ids or not self.exists():
            return {}
        if self._cache is None:
            return self._read(chunk_ids)
        found = self._cache.get(chunk_ids)
        missing = [cid for cid in chunk_ids if cid not in found]
        if missing:
            fresh = self._read(missing)
            self._cache.put(fresh)
            found.update(fresh)
        return found

    def _read(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        dim = self.stamp.embed_dim
        if self._legacy is None:  # read once: a schema look-up is a round trip to LanceDB's event loop
            self._legacy = self.legacy()
        if self._legacy:
            rows = self._rows(chunk_ids).to_pylist()
            return {r["chunk_id"]: _frozen(np.frombuffer(r["vectors"], dtype=np.float16).reshape(r["count"], dim)
                    .astype(np.float32)) for r in rows}
        return decoded(self._rows(chunk_ids), dim)

    def _rows(self, chunk_ids: Sequence[str]) -> pa.Table:
        """The stored rows of ``chunk_ids``: through the Lance dataset where there is one
        (index/lance_direct.py: no hop to LanceDB's event loop), else LanceDB's query."""
        if self._dataset is None:
            self._dataset = lance_direct.dataset(self._table()) or False
        if self._dataset and lance_direct.usable():
            return self._dataset.to_table(filter=one_of("chunk_id", chunk_ids).to_sql())
        if self._reading is None:
            self._reading = schema_once(self._table())
        return self._reading.search().with_row_id(False).where(one_of("chunk_id", chunk_ids)).limit(None).to_arrow()

    def size(self) -> tuple[int, int]:
        """(chunks with stored vectors, bytes of vectors stored)."""
        if not self.exists():
            return 0, 0
        counts = self._table().search().select(["count"]).limit(None).to_arrow().column("count")
        per_piece = self.stamp.embed_dim * 2 if self.legacy() else self.stamp.embed_dim + 2
        return len(counts), int(sum(counts.to_pylist())) * per_piece


def decoded(rows: pa.Table, dim: int) -> dict[str, np.ndarray]:
    """Each stored row's float32 vectors by chunk id, read from the Arrow buffers as they are:
    no Python ``bytes`` per row (with the dataset, 50 chunks' read at 100k chunks 23.2 → 21.7 ms:
    docs/benchmarks.md section 28)."""
    if not rows.num_rows:
        return {}
    values, scales = rows.column("vectors").combine_chunks(), rows.column("scale").combine_chunks()
    data, offsets = _payload(values)
    scale_data, scale_offsets = _payload(scales)
    return {cid: _frozen(dequantize(count, dim, scale_data[scale_offsets[i]:scale_offsets[i + 1]],
                                    data[offsets[i]:offsets[i + 1]]))
            for i, (cid, count) in enumerate(zip(rows.column("chunk_id").to_pylist(), rows.column("count").to_pylist()))}


def _payload(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A binary array's value bytes and its rows' offsets into them, both shared with Arrow."""
    _, offsets, data = array.buffers()
    width = np.int64 if pa.types.is_large_binary(array.type) else np.int32
    at = np.frombuffer(offsets, dtype=width)[array.offset:array.offset + len(array) + 1]
    return (np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)), at


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)  # shared by every query that reads the chunk
    return array


class _Recent:
    """Arrays by key up to a byte budget, the least recently used dropped first; thread-safe."""

    def __init__(self, budget: int):
        self.budget = budget
        self.used = 0
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        with self._lock:
            found = {k: self._items[k] for k in keys if k in self._items}
            for k in found:
                self._items.move_to_end(k)
        return found

    def put(self, items: Mapping[str, np.ndarray]) -> None:
        with self._lock:
            for key, array in items.items():
                if key not in self._items and array.nbytes <= self.budget:
                    self._items[key] = array
                    self.used += array.nbytes
            while self.used > self.budget:
                self.used -= self._items.popitem(last=False)[1].nbytes
