"""Index the run's renamed, moved and copied files from stored rows, all in a few commits."""
from __future__ import annotations

import time

from prefect import task
from prefect.cache_policies import NO_CACHE

from citeline.index.faults import failpoint, is_storage_error, storage_reason
from citeline.index.filters import one_of
from citeline.index.reuse import LENDER_COLUMNS
from citeline.index.tokens import TokenVectors
from citeline.pipeline.plan import Todo, is_current_record
from citeline.pipeline.record import indexed_record
from citeline.pipeline.rename import Read, choose_lenders, moved_rows, prepared_from, read_identity
from citeline.schemas import interrupt
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import STAMP_COLUMNS, IndexStamp
from citeline.schemas.tables import new_generation
from citeline.schemas.status import DocStatus, Outcome
from citeline.runtime.log import Events, each_or_summary, get_logger
from citeline.runtime.handles import store_for, write_lock

# Rows written per commit: a rename of a folder of PDFs moves ~100k rows, which one
# commit would hold in memory at once (~150 MB of vectors); 20k rows is ~30 MB.
RENAME_ROWS = 20_000
LOOKUP = 500  # ids or hashes per IN-list read

RECORD_COLUMNS = [*dict.fromkeys([*LENDER_COLUMNS, "created_at", "chunk_count", "truncated", *STAMP_COLUMNS])]


def may_be_renamed(todo: Todo) -> bool:
    """A new file of a stored document's size (the plan's ``same_size``), not a repair."""
    return todo.same_size and not todo.fresh and not todo.was_indexed


@task(name="index-renamed", cache_policy=NO_CACHE, persist_result=False)
def index_renamed(todo: list[Todo], stamp: IndexStamp, settings: IndexSettings
                  ) -> tuple[list[Outcome], list[Todo]]:
    """Write the renamed, moved and copied files among ``todo`` from their twins' stored rows.

    Each candidate (``may_be_renamed``) is read once and hashed; a stored document with those
    bytes that may lend its work (``pipeline.rename.choose_lenders``: current, all its rows in
    the active table) gives its rows under the new path, ``RENAME_ROWS`` rows per chunks
    commit and one records commit each. The old record is not touched here: a vanished
    file's is forgotten with the other vanished ones, after this (so a run stopped in between
    leaves two consistent documents). A write the storage refuses hands every file of that
    commit back to the ordinary path, which fails them one by one with the reason.

    Returns:
        the Outcomes written (INDEXED, every chunk reused), and the todo left to prepare.
    """
    candidates = [t for t in todo if may_be_renamed(t)]
    if not candidates:
        return [], todo
    store = store_for(settings.db)
    reads = [r for r in (read_identity(t.file, settings.max_bytes) for t in candidates) if r is not None]
    records = [r for r in lookup(store, "sha256", sorted({r.sha256 for r in reads}), RECORD_COLUMNS)
               if is_current_record(r, stamp)]
    stored = store.chunk_arrow(one_of("doc_id", [r["doc_id"] for r in records])) if records else None
    counts = {} if stored is None else _counts(stored.column("doc_id").to_pylist())
    complete = {r["doc_id"] for r in records if counts.get(r["doc_id"], 0) == r["chunk_count"]}
    lenders = choose_lenders(reads, records, complete)
    chosen = [r for r in reads if r.doc_id in lenders]
    prior = {t.file.source: t.prior for t in candidates}
    outcomes: list[Outcome] = []
    for group in _groups(chosen, lenders):
        if interrupt.requested():  # what is written stands; the rest is left to the run's own stop
            break
        try:
            outcomes += _write(store, stamp, settings, stored, group, lenders, prior)
        except Exception as exc:  # safe: only a storage error (disk full, I/O) is kept; the rest re-raised
            if not is_storage_error(exc):
                raise
            get_logger().warning(Events.RUN_STOPPED, reason=f"renamed files left to the ordinary write: {storage_reason(exc)}")
    done = {o.path for o in outcomes}
    return outcomes, [t for t in todo if not (may_be_renamed(t) and t.file.path in done)]


def _write(store, stamp: IndexStamp, settings: IndexSettings, stored, group: list[Read], lenders: dict,
           prior: dict) -> list[Outcome]:
    """One group of renamed files: their rows in one commit, their records in the next."""
    started = time.perf_counter()
    moves = [(lenders[r.doc_id]["doc_id"], r.doc_id, r.file.path, lenders[r.doc_id]["lent_title"],
              lenders[r.doc_id]["title"]) for r in group]
    rows, kept = moved_rows(stored, moves, stamp)
    generations = {r.doc_id: new_generation() for r in group}
    with write_lock(settings.db):
        counts = store.replace_rows_of(stamp, [r.doc_id for r in group], rows, generations)
        failpoint("rename.between")
        store.upsert_documents([
            {**indexed_record(prepared_from(r, lenders[r.doc_id]), prior[r.file.source], stamp, counts[r.doc_id],
                              generations[r.doc_id]),
             "truncated": lenders[r.doc_id]["truncated"]}
            for r in group])
        TokenVectors(store, stamp).copy(kept)
    seconds = round((time.perf_counter() - started) / len(group), 4)
    outcomes = [Outcome(r.file.path, DocStatus.INDEXED, chunks=counts[r.doc_id], truncated=lenders[r.doc_id]["truncated"],
                        reused=counts[r.doc_id], change="renamed", lent_by=lenders[r.doc_id]["source"]) for r in group]
    each_or_summary(get_logger(), (Events.DOCUMENT_INDEXED, Events.DOCUMENT_FINISHED), [
        {"path": o.path, "document_id": r.doc_id, "status": DocStatus.INDEXED, "chunks": o.chunks,
         "truncated": o.truncated, "encoded": 0, "reused": o.reused, "lent_by": lenders[r.doc_id]["source"],
         "seconds": {"write": seconds}} for r, o in zip(group, outcomes)],
        Events.DOCUMENTS_RENAMED, chunks=sum(o.chunks for o in outcomes), seconds_per_document=seconds)
    return outcomes


def _groups(reads: list[Read], lenders: dict) -> list[list[Read]]:
    """The reads in order, cut so that each group moves at most ``RENAME_ROWS`` rows (one at least)."""
    groups, group, rows = [], [], 0
    for read in reads:
        n = lenders[read.doc_id]["chunk_count"]
        if group and rows + n > RENAME_ROWS:
            groups.append(group)
            group, rows = [], 0
        group.append(read)
        rows += n
    return groups + [group] if group else groups


def lookup(store, column: str, values: list[str], columns: list[str]) -> list[dict]:
    """Document records whose ``column`` is one of ``values``, ``LOOKUP`` values a read."""
    found = []
    for start in range(0, len(values), LOOKUP):
        found += store.document_rows(columns, one_of(column, values[start:start + LOOKUP]))
    return found


def _counts(doc_ids: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for doc_id in doc_ids:
        counts[doc_id] = counts.get(doc_id, 0) + 1
    return counts
