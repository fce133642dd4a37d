"""Per-document tasks: prepare (extract, chunk, embed) anywhere; write only in the flow's process.

``prepare_document`` runs on the task runner — threads here, Dask workers on a cluster —
and is named by the file's path, so the Prefect UI shows one task run per document
with the failure reason as its message. ``write_document`` is called from the flow
itself, one at a time: LanceDB duplicates rows when two writers upsert the same keys.
"""
from __future__ import annotations

import time

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed

from citeline.index.faults import is_storage_error
from citeline.index.store import chunk_table
from citeline.pipeline.plan import Todo
from citeline.pipeline.record import Prior, indexed_record
from citeline.pipeline.prepare import Prepared, error_kind, is_bad_input, prepare
from citeline.schemas.errors import DocumentError
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.status import DocError, DocStatus, Outcome
from citeline.tasks.log import get_logger
from citeline.tasks.store import embedder_for, store_for, write_lock


def is_transient(task, task_run, state) -> bool:
    """Retry only what may succeed next time (a file caught mid-change), never bad input."""
    exc = state.data
    return isinstance(exc, DocumentError) and exc.transient


@task(task_run_name="{todo.file.path}", cache_policy=NO_CACHE, persist_result=False,
      retries=2, retry_delay_seconds=1, retry_condition_fn=is_transient)
def prepare_document(todo: Todo, stamp: IndexStamp, settings: IndexSettings):
    """Read, extract, chunk and embed one file.

    Only bad input becomes a failed document (``is_bad_input``); anything else is a bug
    in citeline and is raised, so the run stops with its traceback.

    Returns:
        Prepared, or a Failed state carrying a DocError whose message is the reason.
    """
    embedder = embedder_for(settings)
    try:
        return prepare(todo.file, embedder, stamp, settings)
    except (DocumentError, OSError) as exc:
        if not is_bad_input(exc) or (isinstance(exc, DocumentError) and exc.transient):
            raise
        error = DocError(getattr(exc, "stage", "extract"), error_kind(exc), str(exc))
        get_logger(path=todo.file.path).warning("document.failed", stage=error.stage, kind=error.kind,
                                                reason=error.message)
        return Failed(message=f"{error.stage}: {error.reason()}", data=error)


@task(task_run_name="write {prepared.file.path}", cache_policy=NO_CACHE, persist_result=False)
def write_document(prepared: Prepared, prior: Prior, stamp: IndexStamp, settings: IndexSettings):
    """Replace the document's chunks, count them in the store, then record the document.

    A write that the storage refuses (disk full, I/O error: an OSError, or LanceDB's
    ``LanceError(IO)``, see index/faults.py) fails this document alone; any other
    exception is a bug and stops the run.

    Returns:
        Outcome, or a Failed state (the old chunks are untouched: the replace is one commit).
    """
    log = get_logger(path=prepared.file.path)
    store = store_for(settings.db)
    try:
        with write_lock():
            started = time.perf_counter()
            count = store.replace_chunks(stamp, prepared.doc_id, chunk_table(prepared.rows, stamp))
            store.upsert_document(indexed_record(prepared, prior, stamp, count))
            written = time.perf_counter() - started
    except Exception as exc:  # safe: only a storage error (disk full, I/O) is kept; the rest re-raised
        if not is_storage_error(exc):
            raise
        error = DocError("write", error_kind(exc), str(exc))
        log.error("document.failed", stage="write", kind=error.kind, reason=error.message)
        return Failed(message=f"write: {error.reason()}", data=error)
    seconds = {**prepared.seconds, "write": written}
    log.info("document.indexed", chunks=count, truncated=prepared.truncated,
             seconds={stage: round(s, 4) for stage, s in seconds.items()})
    return Outcome(prepared.file.path, DocStatus.INDEXED, chunks=count, truncated=prepared.truncated)

