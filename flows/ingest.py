"""The index flow: every document of a folder into LanceDB, each failing alone."""
# No `from __future__ import annotations`: Prefect validates flow parameters from the
# annotations, and a flow served from a pickle cannot resolve them from strings.
import queue
import time
from pathlib import Path

from prefect import flow
from prefect.states import Completed, Failed
from prefect.task_runners import ThreadPoolTaskRunner

from citeline.index.faults import is_storage_error
from citeline.index.lock import writer_lock
from citeline.pipeline.plan import SyncPlan, Todo, plan_sync
from citeline.pipeline.walk import list_files
from citeline.schemas.errors import DocumentError
from citeline.schemas.paths import escape
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import STAMP_COLUMNS, IndexStamp
from citeline.schemas.status import DocError, DocStatus, Outcome, RunSummary
from citeline.tasks.calibrate import calibrate_gate
from citeline.tasks.document import prepare_document, write_document
from citeline.tasks.log import get_logger
from citeline.tasks.record import as_failures, forget_deleted, record_failures
from citeline.tasks.report import publish_report
from citeline.tasks.store import stamp_for, store_for
from citeline.tasks.tokens import keeps_token_vectors, store_token_vectors

RECORD_COLUMNS = ["doc_id", "root", "source", "path", "status", "sha256", "attempts", "created_at", *STAMP_COLUMNS]


@flow(name="index-folder", flow_run_name="index {root}",
      task_runner=ThreadPoolTaskRunner(max_workers=2))
def index_folder(root: str, settings: IndexSettings = IndexSettings(), max_failed: int | None = None,
                 wait_s: float = 0.0):
    """Index (or re-sync) ``root`` into ``settings.db``.

    Unchanged files are skipped, changed ones re-indexed, vanished ones forgotten. A
    document that fails is recorded with its stage and reason while the rest go on.

    Returns:
        RunSummary; the run ends Completed, "PartialSuccess" when some documents failed,
        Failed when more than ``max_failed`` did.
    """
    log = get_logger(flow="index-folder", root=root)
    with writer_lock(settings.db, wait_s):
        store = store_for(settings.db)
        stamp = stamp_for(settings)
        store.chunks(stamp, create=True)  # refuse an index of another model before any work
        if removed := store.clean_temp_files():
            log.warning("run.cleaned", leftover_files=removed)
        marks = [time.perf_counter()]
        plan = plan_folder(root, store, stamp)
        if synced_root(root) not in store.roots():
            store.add_root(synced_root(root))
        marks.append(time.perf_counter())
        log.info("run.planned", total=len(plan.todo), skipped=len(plan.skip), gone=len(plan.gone))
        outcomes, failed = run_documents(plan.todo, stamp, settings)
        failures, deleted, stopped = as_failures(failed), 0, None
        try:
            failures = record_failures(failed, settings) if failed else []
            deleted = forget_deleted(plan.gone, stamp, settings) if plan.gone else 0
            marks.append(time.perf_counter())
            if outcomes or failures or deleted or store.needs_finish():
                store.finish_run(stamp)
            marks.append(time.perf_counter())
            if keeps_token_vectors(settings, stamp):
                store_token_vectors(settings, stamp)
            calibrate_gate(settings, stamp)  # a new index, or one that grew or shrank a lot
        except Exception as exc:  # disk full, I/O error: report what was done, the next run finishes
            if not is_storage_error(exc):
                raise
            stopped = exc
            log.error("run.stopped", reason=str(exc))
        summary = RunSummary(
            indexed=len(outcomes), failed=len(failures), skipped=len(plan.skip), deleted=deleted,
            chunks=sum(o.chunks for o in outcomes), truncated=sum(o.truncated for o in outcomes),
            rows=store.count_chunks(), failures=tuple(failures),
        )
    seconds = dict(zip(("plan", "documents", "finish"), (round(b - a, 4) for a, b in zip(marks, marks[1:]))))
    log.info("run.finished", seconds=seconds, **{k: v for k, v in summary.__dict__.items() if k != "failures"})
    publish_report(summary, root)
    return stopped_state(summary, stopped) if stopped else final_state(summary, max_failed)


def plan_folder(root: str, store, stamp) -> SyncPlan:
    """What this run must do; a single file is indexed without forgetting its neighbours."""
    files = list_files(root)
    prune = synced_root(root) if Path(root).expanduser().is_dir() else None
    return plan_sync(files, store.document_rows(RECORD_COLUMNS), stamp, prune)


def synced_root(root: str) -> str:
    """``root`` as the index stores it: resolved, escaped (schemas/paths.py)."""
    return escape(str(Path(root).expanduser().resolve()))


def run_documents(todo: list[Todo], stamp: IndexStamp, settings: IndexSettings
                  ) -> tuple[list[Outcome], list[tuple[Todo, DocError]]]:
    """Prepare documents on the task runner; write each, as it completes, from this process.

    A finished future is let go once its document is written: it holds the prepared
    rows and vectors, and ``as_completed`` keeps every future it was given until the
    last one is done, so peak memory would grow with the corpus.
    """
    finished = queue.SimpleQueue()
    pending = {}
    for item in todo:
        future = prepare_document.submit(item, stamp, settings)
        pending[future.task_run_id] = item
        future.add_done_callback(finished.put)
    outcomes, failed = [], []
    while pending:
        future = finished.get()
        future.wait()
        item = pending.pop(future.task_run_id)
        state = future.state
        del future
        if state.is_completed():
            state = write_document(state.result(), item.prior, stamp, settings, return_state=True)
        result = state.result(raise_on_failure=False)
        if state.is_completed():
            outcomes.append(result)
        else:
            failed.append((item, as_doc_error(result, state)))
        get_logger().info("document.finished", path=item.file.path,
                          status=DocStatus.INDEXED if state.is_completed() else DocStatus.FAILED)
    return outcomes, failed


def as_doc_error(result, state) -> DocError:
    """A DocError from a task's failed state: its own, a timeout, or a raised DocumentError.

    Raises:
        the task's exception when it is not about the document (a bug: the run stops).
    """
    if isinstance(result, DocError):
        return result
    if isinstance(result, TimeoutError) or state.name == "TimedOut":
        return DocError("extract", "timeout", state.message or "the per-document time limit ran out")
    if isinstance(result, DocumentError):  # a transient one that its retries did not cure
        return DocError(getattr(result, "stage", "extract"), result.kind, str(result))
    if isinstance(result, BaseException):
        raise result
    raise RuntimeError(f"a document task failed without a reason: {state.message}")


def stopped_state(summary: RunSummary, exc: Exception):
    """A run the system stopped after its documents (disk full): Failed, with its summary.

    Every commit before the error stands: a document is either written with its record,
    or still stale or failed in the record set, so the next sync indexes it again; the
    full-text index and token vectors are brought up to date by the next run.
    """
    return Failed(message=f"{summary.line()}; the run stopped before finishing: {exc}. "
                          "Free the space and run it again: it finishes what this one left.", data=summary)


def final_state(summary: RunSummary, max_failed: int | None):
    """Failed beyond the tolerated number of failures; PartialSuccess below it."""
    if max_failed is not None and summary.failed > max_failed:
        return Failed(message=f"{summary.failed} documents failed (more than {max_failed}). {summary.line()}",
                      data=summary)
    if summary.failed:
        return Completed(name="PartialSuccess", message=summary.line(), data=summary)
    return Completed(message=summary.line(), data=summary)
