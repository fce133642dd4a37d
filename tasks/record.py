"""Write what a run learned about documents it could not index or no longer finds."""
from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from citeline.pipeline.plan import Todo
from citeline.pipeline.prepare import doc_id_for
from citeline.pipeline.record import failed_record
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.status import DocError, Failure
from citeline.runtime.log import Events, each_or_summary, get_logger
from citeline.runtime.handles import store_for, write_lock


# Failure records committed at a time: one LanceDB commit costs O(table versions), so
# one per failure made 5,000 empty files take hours; a batch bounds the
# IN-list of the read that merges with stored fields.
RECORD_BATCH = 500


@task(name="record-failures", cache_policy=NO_CACHE, persist_result=False)
def record_failures(failed: list[tuple[Todo, DocError]], settings: IndexSettings) -> list[Failure]:
    """Mark each document failed with its stage and reason, ``RECORD_BATCH`` per commit.

    Its previous chunks, if any, stay searchable, and chunk_count is what the store
    holds for it, so the books still balance.
    """
    store = store_for(settings.db)
    failures = as_failures(failed)
    with write_lock(settings.db):
        rows = store.rows_per_document(owned=True)  # what readers see: not rows a refused record left
        records = [failed_record(todo.file, todo.prior, error, rows[doc_id_for(todo.file.source)])
                   for todo, error in failed]
        for start in range(0, len(records), RECORD_BATCH):
            store.upsert_documents(records[start:start + RECORD_BATCH])
    return failures


def as_failures(failed: list[tuple[Todo, DocError]]) -> list[Failure]:
    """The failures as operators see them, whether or not they could be recorded."""
    return [Failure(todo.file.path, error.stage, error.reason(), todo.prior.attempts + 1, todo.file.source)
            for todo, error in failed]


@task(name="forget-deleted", cache_policy=NO_CACHE, persist_result=False)
def forget_deleted(records: list[dict], stamp: IndexStamp, settings: IndexSettings,
                   lent: frozenset[str] = frozenset()) -> int:
    """Remove the records of documents whose files are gone; their chunks stay, unserved, for
    ``settings.grace_days`` (``Store.forget_documents``), except those of a renamed file's old
    path (``lent``: sources whose rows a new path took this run), which are deleted."""
    store = store_for(settings.db)
    log = get_logger()
    keep = settings.grace_days > 0
    with write_lock(settings.db):
        store.forget_documents([r["doc_id"] for r in records if r["source"] not in lent or not keep], stamp,
                               keep_rows=keep)
        store.delete_documents([r["doc_id"] for r in records if r["source"] in lent and keep], stamp)
    each_or_summary(log, (Events.DOCUMENT_DELETED,), [{"path": r["path"]} for r in records], Events.DOCUMENTS_DELETED)
    return len(records)
