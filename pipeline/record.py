"""A document's record in the documents table: one builder for every run that writes it.

A record is written as a partial row: columns it leaves out keep their stored values
(``Store.upsert_documents``). So a failed document keeps the canonical text, hash and
stamps of its last good version, whose chunks stay searchable.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from citeline.pipeline.prepare import Prepared, SetAside, Unchanged, doc_id_for
from citeline.pipeline.walk import FileStat, SourceFile
from citeline.schemas.stamp import IndexStamp, Stamp
from citeline.schemas.status import NOT_A_DOCUMENT, DocError, DocStatus


@dataclass(frozen=True)
class Prior:
    """What the next record of a document carries over from its stored one."""

    attempts: int = 0
    created_at: datetime | None = None  # None: a new document, stamped when first written

    @classmethod
    def of(cls, record: Mapping | None) -> "Prior":
        """The prior state of a stored record (needs ``attempts``, ``created_at``); none for a new one."""
        return cls(record["attempts"], record["created_at"]) if record else cls()


def document_record(file: SourceFile, prior: Prior, status: DocStatus, chunk_count: int, *,
                    truncated: int = 0, error: DocError | None = None) -> dict:
    """The columns every outcome sets: who the document is, how it went, what the store holds.

    Args:
        chunk_count: the rows the store holds for it now (counted, never declared).
        error: why it failed; None clears the stage and reason of an earlier failure.
    """
    return {
        "doc_id": doc_id_for(file.source),
        "source": file.source,
        "root": file.root,
        "path": file.path,
        "status": status.value,
        "stage": error.stage if error else None,
        "reason": error.reason() if error else None,
        "attempts": prior.attempts + 1,
        "chunk_count": chunk_count,
        "truncated": truncated,
        "created_at": prior.created_at,
    }


def indexed_record(prepared: Prepared, prior: Prior, stamp: IndexStamp, count: int,
                   generation: int | None = None) -> dict:
    """An indexed document: its outcome, its canonical text, the stamp of its rows and the
    generation they were written with (the record owns those rows, schemas/tables.py)."""
    canonical = prepared.canonical
    return {
        **document_record(prepared.file, prior, DocStatus.INDEXED, count, truncated=prepared.truncated),
        "sha256": prepared.sha256,
        "size": prepared.size,
        "title": canonical.title,
        "canonical": canonical.text,
        "segments": canonical.segments_json(),
        "notes": "\n".join(canonical.notes) or None,
        **Stamp(stamp, canonical.extractor, canonical.extractor_version).columns(),
        **stat_columns(prepared.stat),
        "generation": generation,
    }


def unchanged_record(unchanged: Unchanged) -> dict:
    """A document whose bytes were read and found unchanged: only the stat it now shows is new."""
    return {"doc_id": unchanged.doc_id, **stat_columns(unchanged.stat)}


def stat_columns(stat: FileStat | None) -> dict:
    """The stat columns of a record; none when nothing was read (they keep their stored values)."""
    if stat is None:
        return {}
    return {"size": stat.size, "mtime_ns": stat.mtime_ns, "inode": stat.inode, "device": stat.device}


def failed_record(file: SourceFile, prior: Prior, error: DocError, rows: int) -> dict:
    """A failed document; ``rows`` are its previous version's chunks, still searchable.

    It keeps the stat the listing saw of the file that failed, so the next sync tells that
    file unchanged without reading it (pipeline/plan.py ``is_still_failing``); its sha256 and
    stamp stay its indexed version's, which its searchable rows are.
    """
    return {**document_record(file, prior, DocStatus.FAILED, rows, error=error), **stat_columns(file.stat)}


def set_aside_record(set_aside: SetAside, prior: Prior) -> dict:
    """A file that is no document: what it is as its reason, no chunks (a document it replaced
    under the same name is gone, as a deleted one is), and the stat it was read under, so the
    next sync passes it by until it changes (pipeline/plan.py ``is_set_aside``)."""
    return {**document_record(set_aside.file, prior, DocStatus.NOT_DOCUMENT, 0),
            "reason": f"{NOT_A_DOCUMENT}{set_aside.what}", **stat_columns(set_aside.stat)}


def restamped_record(doc_id: str, stamp: IndexStamp, rows: int) -> dict:
    """A document whose rows a re-index rebuilt for ``stamp``: only its count and index stamp change."""
    return {"doc_id": doc_id, "chunk_count": rows, **stamp.columns()}
