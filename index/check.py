"""The index's fsck: every invariant citeline promises, checked against what is stored."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from index.store import Store
from schemas.stamp import IndexStamp

STAMP_COLUMNS = ("embed_model", "embed_dim", "pipeline_version", "strategy")


@dataclass(frozen=True)
class Violation:
    rule: str
    subject: str  # a document path or chunk id
    detail: str


def check_index(store: Store) -> list[Violation]:
    """Every violation found; an empty list means the index is consistent."""
    stamp = store.stamp()
    documents = store.document_rows(["doc_id", "path", "status", "chunk_count", "canonical"])
    chunks = store.chunk_rows(["chunk_id", "doc_id", "start", "end", "content", *STAMP_COLUMNS])
    return [
        *_counts(documents, chunks),
        *_slices(documents, chunks),
        *_stamps(stamp, chunks),
        *_duplicates(chunks),
    ]


def _counts(documents: list[dict], chunks: list[dict]) -> list[Violation]:
    per_doc = Counter(c["doc_id"] for c in chunks)
    known = {d["doc_id"] for d in documents}
    found = [
        Violation("chunk_count", d["path"], f"record says {d['chunk_count']}, store holds {per_doc[d['doc_id']]}")
        for d in documents if d["chunk_count"] != per_doc[d["doc_id"]]
    ]
    found += [
        Violation("orphan-chunks", doc_id, f"{n} chunks belong to no document record")
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
                                   f"canonical[{c['start']}:{c['end']}] differs from the stored content"))
    return found


def _stamps(stamp: IndexStamp | None, chunks: list[dict]) -> list[Violation]:
    if stamp is None:
        return []
    expected = {col: getattr(stamp, col) for col in STAMP_COLUMNS}
    return [
        Violation("stamp", c["chunk_id"], f"row stamp {row} differs from the table's {expected}")
        for c in chunks
        if (row := {col: c[col] for col in STAMP_COLUMNS}) != expected
    ]


def _duplicates(chunks: list[dict]) -> list[Violation]:
    counts = Counter(c["chunk_id"] for c in chunks)
    return [Violation("duplicate", cid, f"{n} rows share this chunk id") for cid, n in counts.items() if n > 1]
