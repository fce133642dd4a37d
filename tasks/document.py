"""Per-document tasks: prepare (extract, chunk, embed) anywhere; write only in the flow's process.

``prepare_document`` runs on the task runner — threads here, Dask workers on a cluster —
and is named by the file's path, so the Prefect UI shows one task run per document
with the failure reason as its message; on a cluster ``prepare_documents`` takes small
files a group at a time, and each of its failed documents still gets a failed task run
named by its path (``document_failed``). ``write_documents`` is called from the flow
itself, one batch at a time: LanceDB duplicates rows when two writers upsert the same keys.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed

from citeline.index.faults import failpoint, is_storage_error, storage_reason
from citeline.index.reuse import StoredChunks
from citeline.index.store import chunk_table
from citeline.index.tokens import TokenVectors
from citeline.pipeline.plan import Todo
from citeline.pipeline.record import Prior, indexed_record, set_aside_record, unchanged_record
from citeline.pipeline.prepare import Prepared, SetAside, Unchanged, error_kind, is_bad_input, prepare, prepare_group
from citeline.schemas.errors import DocumentError
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.tables import new_generation
from citeline.schemas.status import DocError, DocStatus, Outcome
from citeline.runtime import env
from citeline.runtime.log import DOCUMENT_FAILED_STATE, Events, get_logger, quiet_expected_failures
from citeline.tasks.report import retry_hint
from citeline.runtime.handles import embedder_for, store_for, write_lock

# A transient failure (the object store unavailable or throttling, a reset connection, a file
# caught mid-change) is tried again TRANSIENT_RETRIES times, after about RETRY_DELAY_S each (drawn
# between 0.63x and 1.5x of it, Prefect's clamped jitter for RETRY_JITTER, so documents that
# failed together do not come back together): at most ~9 s more per document, after botocore's
# and s3fs's own quick retries. One number, not a back-off list: the Prefect UI shows a list as
# "Retry Delay NaNs". Bad input is never tried again (``is_transient``).
TRANSIENT_RETRIES = 3
RETRY_DELAY_S = 2.0
RETRY_JITTER = 0.5


def is_transient(task, task_run, state) -> bool:
    """Retry only what may succeed next time (a file caught mid-change, the store unavailable
    for a while), never bad input."""
    exc = state.data
    return isinstance(exc, DocumentError) and exc.transient


@task(task_run_name="{todo.file.path}", cache_policy=NO_CACHE, persist_result=False,
      retries=TRANSIENT_RETRIES, retry_delay_seconds=RETRY_DELAY_S,
      retry_jitter_factor=RETRY_JITTER, retry_condition_fn=is_transient)
def prepare_document(todo: Todo, stamp: IndexStamp, settings: IndexSettings):
    """Read, extract, chunk and embed one file.

    Only bad input becomes a failed document (``is_bad_input``); anything else is a bug
    in citeline and is raised, so the run stops with its traceback.

    Returns:
        Prepared; Unchanged when the file's bytes are the ``todo.known`` ones; SetAside (a
        completed task run, not a failed one) when the file is no document; or a Failed
        state carrying a DocError whose message is the reason and the ``retry-failed``
        parameters that index the file again.
    """
    env.apply()  # a Dask worker ran no entry point: the model loads offline, nothing phones home
    embedder = embedder_for(settings)
    try:
        return prepare(todo.file, embedder, stamp, settings, todo.known,
                       todo.reuse(StoredChunks(store_for(settings.db), stamp)))
    except (DocumentError, OSError) as exc:
        if not is_bad_input(exc) or (isinstance(exc, DocumentError) and exc.transient):
            raise
        error = logged_error(todo, exc)
        return failed_state(error, settings.db, todo.file.source)


def failed_state(error: DocError, db: str, source: str):
    """A failed document's task-run state: the stage and reason, then how to retry it."""
    return Failed(name=DOCUMENT_FAILED_STATE, message=f"{error.stage}: {error.reason()}; {retry_hint(db, source)}",
                  data=error)


def logged_error(todo: Todo, exc: DocumentError | OSError) -> DocError:
    """The document's failure as a DocError, logged with its path."""
    error = DocError(getattr(exc, "stage", "extract"), error_kind(exc), str(exc))
    get_logger(path=todo.file.path).warning(Events.DOCUMENT_FAILED, stage=error.stage, kind=error.kind,
                                            reason=error.message)
    return error


# Wherever these tasks run (this process, a Dask worker), a failed document is one WARNING line.
quiet_expected_failures()


@dataclass(frozen=True)
class Again:
    """A document of a group that met a transient error: the flow prepares it again alone, with retries."""

    reason: str


@task(task_run_name="{label}", cache_policy=NO_CACHE, persist_result=False)
def prepare_documents(todos: list[Todo], stamp: IndexStamp, settings: IndexSettings, label: str
                      ) -> list[Prepared | Unchanged | SetAside | DocError | Again]:
    """``prepare_document`` for a group of small files in one task run, their chunks encoded
    together (pipeline.prepare.prepare_group).

    Each document still fails alone: bad input comes back as its DocError (logged with its
    path; the flow gives it a failed task run of its own, ``document_failed``), and a
    transient error as ``Again``, so the flow prepares that one alone with
    ``prepare_document``'s retries. Anything else is a bug and is raised.

    Args:
        label: the task run's name: how many documents, and the first one's path.

    Returns:
        per document, in order: Prepared, Unchanged, SetAside, DocError or Again.
    """
    env.apply()  # a Dask worker ran no entry point: the model loads offline, nothing phones home
    stored = StoredChunks(store_for(settings.db), stamp)
    results = prepare_group([(todo.file, todo.known, todo.reuse(stored)) for todo in todos], embedder_for(settings),
                            stamp, settings)
    return [result if isinstance(result, (Prepared, Unchanged, SetAside)) else failure_of(todo, result)
            for todo, result in zip(todos, results)]


def failure_of(todo: Todo, exc: Exception) -> DocError | Again:
    """A grouped document's bad input as its DocError (logged), or Again when it may pass on a retry."""
    if isinstance(exc, DocumentError) and exc.transient:
        return Again(str(exc))
    return logged_error(todo, exc)


@task(task_run_name="{path}", cache_policy=NO_CACHE, persist_result=False)
def document_failed(path: str, error: DocError, db: str, source: str):
    """A failed task run named by the document, as ``prepare_document`` leaves one: a document
    prepared in a group is still named in the Prefect UI with its reason."""
    return failed_state(error, db, source)


@task(task_run_name="write {label}", cache_policy=NO_CACHE, persist_result=False)
def write_documents(batch: list[tuple[Prepared | Unchanged | SetAside, Prior]], stamp: IndexStamp,
                    settings: IndexSettings, label: str):
    """Replace the documents' chunks in one commit, count them in the store, then record them in one more.

    An Unchanged document (read, and its bytes found to be the indexed ones) only has its
    new stat recorded, in the same records commit. A file SetAside as no document is recorded
    so, and loses the chunks of a document it replaced under its name (in the chunks commit).

    A write that the storage refuses (disk full, I/O error: an OSError, or LanceDB's
    ``LanceError(IO)``, see index/faults.py) fails the whole batch, which the flow then
    writes again one document at a time, so the document the storage refuses fails
    alone; any other exception is a bug and stops the run. The rows carry a generation
    their records carry too: a kill (or a refusal) between the two commits leaves rows no
    record owns, which readers do not see and the next sync deletes before reading those
    files again (``Store.sweep_unowned``).

    Args:
        label: the task run's name: the path of a lone document, else how many there are.

    Returns:
        an Outcome per document, in order, or a Failed state carrying a DocError (the old
        chunks are untouched: the replace is one commit).
    """
    store = store_for(settings.db)
    try:
        with write_lock(settings.db):
            started = time.perf_counter()
            new = {p.doc_id: chunk_table(p.rows if isinstance(p, Prepared) else [], stamp) for p, prior in batch
                   if isinstance(p, Prepared) or (isinstance(p, SetAside) and prior.created_at is not None)}
            generations = {doc_id: new_generation() for doc_id in new}
            failpoint("write.chunks")
            counts = store.replace_chunks_of(stamp, new, generations) if new else {}
            failpoint("write.between")
            store.upsert_documents([record_of(p, prior, stamp, counts, generations) for p, prior in batch])
            failpoint("write.records")
            # chunks whose id moved with a kept vector keep their word-piece vectors too; encoded
            # ones bring theirs from the pass that embedded them (the run's fill encodes the rest)
            tokens = TokenVectors(store, stamp)
            tokens.copy({new: old for p, _ in batch if isinstance(p, Prepared)
                         for new, old in p.reused.kept.items() if new != old})
            if settings.token_vectors is True:
                tokens.write_rows([row for p, _ in batch if isinstance(p, Prepared) for row in p.token_rows])
            written = (time.perf_counter() - started) / len(batch)
    except Exception as exc:  # safe: only a storage error (disk full, I/O) is kept; the rest re-raised
        if not is_storage_error(exc):
            raise
        error = DocError("write", error_kind(exc), storage_reason(exc))
        if len(batch) == 1:
            get_logger(path=batch[0][0].file.path, document_id=batch[0][0].doc_id).error(
                Events.DOCUMENT_FAILED, stage="write", kind=error.kind, reason=error.message)
        return Failed(message=f"write: {error.reason()}", data=error)
    return [outcome_of(p, prior, counts, written) for p, prior in batch]


def record_of(done: Prepared | Unchanged | SetAside, prior: Prior, stamp: IndexStamp, counts: dict[str, int],
              generations: dict[str, int]) -> dict:
    """The document record a written result leaves (an indexed one owning the rows of its generation)."""
    if isinstance(done, Prepared):
        return indexed_record(done, prior, stamp, counts[done.doc_id], generations[done.doc_id])
    if isinstance(done, SetAside):
        return set_aside_record(done, prior)
    return unchanged_record(done)


def outcome_of(done: Prepared | Unchanged | SetAside, prior: Prior, counts: dict[str, int], written: float) -> Outcome:
    """The run's outcome of a written result (an indexed one logged with its seconds per stage)."""
    if isinstance(done, Prepared):
        return indexed(done, counts[done.doc_id], written, prior)
    if isinstance(done, SetAside):
        get_logger(path=done.file.path, document_id=done.doc_id).info(Events.DOCUMENT_SET_ASIDE, what=done.what)
        return Outcome(done.file.path, DocStatus.NOT_DOCUMENT, what=done.what)
    return Outcome(done.file.path, DocStatus.SKIPPED)


def change_of(prepared: Prepared, prior: Prior) -> str:
    """What a written document was to the index: "changed" (indexed before under its path),
    "renamed" (new here, with the work of stored bytes: a rename, a move or a copy) or "new"."""
    if prior.created_at is not None:
        return "changed"
    return "renamed" if prepared.lent_by is not None else "new"


def indexed(prepared: Prepared, count: int, written: float, prior: Prior = Prior()) -> Outcome:
    """The outcome of a written document, logged with its seconds per stage (its share of the batch write)."""
    seconds = {**prepared.seconds, "write": written}
    # bound here: a batch's write task has no single document for the run-id processor to name
    get_logger(path=prepared.file.path, document_id=prepared.doc_id).info(
        Events.DOCUMENT_INDEXED, chunks=count, truncated=prepared.truncated, encoded=prepared.reused.encoded,
        reused=prepared.reused.reused, lent_by=prepared.lent_by, seconds={stage: round(s, 4) for stage, s in seconds.items()})
    return Outcome(prepared.file.path, DocStatus.INDEXED, chunks=count, truncated=prepared.truncated,
                   encoded=prepared.reused.encoded, reused=prepared.reused.reused,
                   change=change_of(prepared, prior), lent_by=prepared.lent_by)
