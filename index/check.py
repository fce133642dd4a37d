"""The index's fsck: every invariant citeline promises, checked against what is stored."""
from __future__ import annotations

import copy
import os
import re
from collections import Counter
from dataclasses import dataclass

import fsspec
import numpy as np

from citeline.index.store import Store
from citeline.schemas.paths import is_remote, is_under, os_path
from citeline.schemas.stamp import INDEX_STAMP_COLUMNS, IndexStamp, is_current
from citeline.schemas.status import DocStatus
from citeline.schemas.tables import DOCUMENTS


@dataclass(frozen=True)
class Violation:
    rule: str
    subject: str  # a document path or chunk id
    detail: str
    doc_id: str | None = None  # the document it concerns (paths repeat across roots; ids do not)


def check_index(store: Store) -> list[Violation]:
    """Every violation found; an empty list means the index is consistent.

    Reads one version of every table, fixed as the check starts (``snapshot``): a writer
    committing while the check runs cannot make it compare rows of two versions.
    """
    store = snapshot(store)
    stamp = store.stamp()
    documents = store.document_rows(["doc_id", "path", "status", "chunk_count", "canonical", "notes"])
    # Rows no record owns (a writer killed between its two commits) are what no reader sees and
    # the next sync deletes (Store.sweep_unowned): the check reads the index as readers do.
    chunks = store.chunk_rows(["chunk_id", "doc_id", "start", "end", "content", "text", "vector", *INDEX_STAMP_COLUMNS],
                              owned=True)
    return [
        *_counts(documents, chunks),
        *_empty_indexed(documents),
        *_slices(documents, chunks),
        *_stamps(stamp, chunks),
        *_duplicates(chunks),
        *_unit_norm(chunks),
        *_full_text(store, stamp, chunks),
    ]


def snapshot(store: Store) -> Store:
    """A read-only view of ``store`` whose tables all stay at the version they have now.

    A check reads the documents table, then the chunks table (seconds later on a big
    index), then searches it; a writer committing in between used to show it chunk
    counts of one version beside records of another, reported as violations that were
    never there. LanceDB's ``checkout(version)`` pins each table; the meta, documents and
    active chunks tables are pinned together, up front.
    """
    pinned = copy.copy(store)
    pinned.db = _PinnedConnection(store.db, store.table_names())
    for name in (pinned.active_table(), DOCUMENTS):  # active_table() pins the meta table first
        if name in pinned.db.table_names():
            pinned.db.open_table(name)
    return pinned


class _PinnedConnection:
    """A LanceDB connection whose tables read at the version they had when first opened."""

    def __init__(self, db, names: list[str]):
        self._db = db
        self._names = names
        self._tables: dict = {}

    def table_names(self) -> list[str]:
        return self._names

    def open_table(self, name: str):
        if name not in self._tables:
            table = self._db.open_table(name)
            table.checkout(table.version)
            self._tables[name] = table
        return self._tables[name]

    def __getattr__(self, name: str):
        return getattr(self._db, name)  # anything else (a check never writes) as the connection does


def _empty_indexed(documents: list[dict]) -> list[Violation]:
    """An indexed document without rows must say why (a silent recording, an empty sheet)."""
    return [
        Violation("empty", d["path"], "indexed with zero chunks and no note saying why", d["doc_id"])
        for d in documents if d["status"] == DocStatus.INDEXED and d["chunk_count"] == 0 and not d["notes"]
    ]


def _unit_norm(chunks: list[dict], tolerance: float = 1e-3) -> list[Violation]:
    """Cosine thresholds only mean something on unit vectors."""
    if not chunks:
        return []
    norms = np.linalg.norm(np.asarray([c["vector"] for c in chunks], dtype=np.float32), axis=1)
    return [
        Violation("norm", c["chunk_id"], f"vector norm is {n:.4f}, not 1", c["doc_id"])
        for c, n in zip(chunks, norms) if abs(n - 1.0) > tolerance
    ]


# Whole tokens as LanceDB's simple tokenizer cuts them (alphanumeric runs), letters only.
_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{7,}(?![A-Za-z0-9])")


def _full_text(store: Store, stamp: IndexStamp | None, chunks: list[dict], sample: int = 40) -> list[Violation]:
    """BM25 finds a sample of chunks by their rarest long word: the full-text index is current."""
    if stamp is None or not chunks:
        return []
    if not store.has_fts():
        return [Violation("full-text", "index", "the chunks table has no full-text index: BM25 finds nothing")]
    frequency = Counter(w.lower() for c in chunks for w in set(_WORD.findall(c["text"])))
    step = max(1, len(chunks) // sample)
    found = []
    for c in sorted(chunks, key=lambda c: c["chunk_id"])[::step]:
        words = sorted(set(_WORD.findall(c["text"])), key=lambda w: (frequency[w.lower()], w))
        if not words:
            continue
        if (word := _missed_by(store, stamp, c["chunk_id"], words[:_TRIES], len(chunks))) is not None:
            found.append(Violation("full-text", c["chunk_id"], f"BM25 search for {word!r} does not find this chunk",
                                   c["doc_id"]))
    return found


_TRIES = 3  # rarest words tried per chunk: a stop word ("between", "through") finds nothing at all


def _missed_by(store: Store, stamp: IndexStamp, chunk_id: str, words: list[str], limit: int) -> str | None:
    """The word whose BM25 search misses the chunk, or None when one finds it.

    A word whose search finds no chunk at all is one the index drops (a stop word), so the
    next rarest is tried; a search that finds other chunks but not this one is a miss.
    """
    for word in words:
        hits = store.fts_search(stamp, word, limit, ["chunk_id"])  # stems match more than the word
        if chunk_id in {h["chunk_id"] for h in hits}:
            return None
        if hits:
            return word
    return words[0]


def _counts(documents: list[dict], chunks: list[dict]) -> list[Violation]:
    per_doc = Counter(c["doc_id"] for c in chunks)
    known = {d["doc_id"] for d in documents}
    found = [
        Violation("chunk_count", d["path"], f"record says {d['chunk_count']}, store holds {per_doc[d['doc_id']]}",
                  d["doc_id"])
        for d in documents if d["chunk_count"] != per_doc[d["doc_id"]]
    ]
    found += [
        Violation("orphan-chunks", doc_id, f"{n} chunks belong to no document record", doc_id)
        for doc_id, n in per_doc.items() if doc_id not in known
    ]
    total = sum(d["chunk_count"] for d in documents)
    if total != len(chunks):
        found.append(Violation("rows", "index", f"sum of chunk_count is {total}, rows are {len(chunks)}"))
    return found


def _slices(documents: list[dict], chunks: list[dict]) -> list[Violation]:
    canonical = {d["doc_id"]: d["canonical"] for d in documents}
    found = []
    for c in chunks:
        text = canonical.get(c["doc_id"])
        if text is not None and text[c["start"]:c["end"]] != c["content"]:
            found.append(Violation("quote", c["chunk_id"],
                                   f"canonical[{c['start']}:{c['end']}] differs from the stored content", c["doc_id"]))
    return found


def _stamps(stamp: IndexStamp | None, chunks: list[dict]) -> list[Violation]:
    if stamp is None:
        return []
    expected = stamp.columns()
    return [
        Violation("stamp", c["chunk_id"], f"row stamp {({col: c[col] for col in INDEX_STAMP_COLUMNS})} differs "
                  f"from the table's {expected}", c["doc_id"])
        for c in chunks if not is_current(c, stamp)
    ]


def _duplicates(chunks: list[dict]) -> list[Violation]:
    counts = Counter(c["chunk_id"] for c in chunks)
    owner = {c["chunk_id"]: c["doc_id"] for c in chunks}
    return [Violation("duplicate", cid, f"{n} rows share this chunk id", owner[cid])
            for cid, n in counts.items() if n > 1]


def stored_objects(roots: list[str]) -> set[str]:
    """Every object under the object-storage ``roots``, and the roots that hold any: one
    listing per root rather than one request per document."""
    present: set[str] = set()
    for root in roots:
        protocol = root.split("://", 1)[0]
        fs = fsspec.filesystem(protocol, use_listings_cache=False)
        keys = fs.find(root, withdirs=False) if fs.exists(root) else []
        present.update(f"{protocol}://{key}" for key in keys)
        if keys:
            present.add(root)
    return present


def _exists(source: str, present: set[str]) -> bool:
    """Whether a stored source (a path, or an object's URL) is still there."""
    if not is_remote(source):
        return os.path.lexists(os_path(source))
    key = os_path(source)  # the stored name is escaped (schemas/paths.py); the listing is not
    return key in present or fsspec.filesystem(source.split("://", 1)[0], use_listings_cache=False).exists(key)


def source_warnings(store: Store) -> list[Violation]:
    """Documents still served whose file is gone: warnings, not violations.

    The index itself is consistent, and an unmounted disk looks the same as a deleted
    folder, so nothing is removed here: a sync of the folder forgets its missing files,
    and ``citeline rm PATH`` forgets a folder no sync reaches (one renamed or deleted).
    A gone root is reported once, not once per document under it.
    """
    roots = store.roots()
    present = stored_objects([r for r in roots if is_remote(r)])
    gone_roots = [r for r in roots if not _exists(r, present)]
    found = [Violation("root-gone", r, "this synced folder or file no longer exists, its documents are still "
                       "served: `citeline rm` it if it was renamed or deleted") for r in gone_roots]
    for d in store.document_rows(["doc_id", "source"]):
        if not any(is_under(d["source"], r) for r in gone_roots) and not _exists(d["source"], present):
            found.append(Violation("source-gone", d["source"], "the file no longer exists, its chunks are still "
                                   "served: sync its folder or `citeline rm` it", d["doc_id"]))
    return found
