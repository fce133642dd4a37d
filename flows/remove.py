"""``citeline rm PATH``: forget the documents under a path, typically one that no longer exists.

A sync forgets the files gone from the folder it syncs; a folder that was renamed,
moved or unmounted is synced by nobody, so its documents stay searchable until removed
here. Plain function, no Prefect: nothing is extracted or embedded.
"""
from __future__ import annotations

from dataclasses import dataclass

from citeline.index.lease import check_writer
from citeline.index.lock import writer_lock
from citeline.index.store import Store
from citeline.schemas.paths import absolute, escape, is_under


@dataclass(frozen=True)
class Removal:
    target: str  # the resolved, escaped path removed
    paths: tuple[str, ...]  # stored sources of the documents removed
    roots: tuple[str, ...]  # synced roots forgotten with them
    known_roots: tuple[str, ...]  # what the index still syncs, for "nothing to remove" messages


def remove_path(path: str, db: str, wait_s: float = 0.0) -> Removal:
    """Delete every document whose source is ``path`` (a local path or an ``s3://`` URL) or
    lies under it, chunks first.

    Raises:
        IndexBusy: another process holds the writer lock after ``wait_s``.
        WriterLost: an S3 index's lease was lost before the deletes.
    """
    target = escape(absolute(path))
    with writer_lock(db, wait_s):
        store = Store(db)
        stamp = store.stamp()
        records = [r for r in store.document_rows(["doc_id", "source"]) if is_under(r["source"], target)]
        check_writer(db)
        store.delete_documents([r["doc_id"] for r in records], stamp)
        roots = [root for root in store.roots() if is_under(root, target)]
        store.remove_roots(roots)
        if records and stamp is not None:
            store.finish_run(stamp)  # the full-text index and compaction follow the deletes
        known = tuple(store.roots())
    return Removal(target, tuple(sorted(r["source"] for r in records)), tuple(roots), known)
