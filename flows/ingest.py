"""The index flow: every document of a folder into LanceDB, each failing alone."""
# No `from __future__ import annotations`: Prefect validates flow parameters from the
# annotations, and a flow served from a pickle cannot resolve them from strings.
import queue
import time
from dataclasses import dataclass, field

from prefect import flow
from prefect.states import Completed, Failed
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from citeline.extractors import runs_in_process
from citeline.index.faults import failpoint, is_storage_error, set_up_writes, storage_reason
from citeline.index.health import note_sync
from citeline.index.lease import check_writer
from citeline.index.lock import writer_lock
from citeline.pipeline.plan import Todo
from citeline.pipeline.prepare import Prepared, SetAside, Unchanged
from citeline.pipeline.walk import Selection
from citeline.schemas import interrupt
from citeline.schemas.errors import DocumentError
from citeline.schemas.paths import is_remote
from citeline.schemas.settings import DOCUMENT_WORKERS, IndexSettings
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.status import (
    DELETIONS_HELD, DOCUMENTS_FAILED, STOPPED, TOO_MANY_FAILED, DocError, DocStatus, NotDocument, Outcome, RunSummary,
)
from citeline.tasks.calibrate import calibrate_gate
from citeline.tasks.document import Again, document_failed, prepare_document, prepare_documents, write_documents
from citeline.flows.sync_plan import plan_folder, synced_root
from citeline.runtime.log import Events, get_logger
from citeline.tasks.record import as_failures, forget_deleted, record_failures
from citeline.tasks.rename import index_renamed
from citeline.tasks.report import publish_report
from citeline.runtime.signals import cooperative
from citeline.runtime.handles import stamp_for, store_for
from citeline.tasks.tokens import keeps_token_vectors, resolve_token_vectors, store_token_vectors



@flow(name="index-folder", flow_run_name="index {root}",
      task_runner=ThreadPoolTaskRunner(max_workers=DOCUMENT_WORKERS))
def index_folder(root: str, settings: IndexSettings = IndexSettings(), max_failed: int | None = None,
                 wait_s: float = 0.0, selection: Selection = Selection(), verify: bool = False,
                 allow_mass_delete: bool = False):
    """Index (or re-sync) ``root`` into ``settings.db``.

    Unchanged files are skipped (by their stat, unread; by their hash when the stat
    moved, or for every file with ``verify``), changed ones re-indexed, vanished ones
    and those ``selection`` leaves out forgotten — but nothing under a folder that could
    not be listed, and nothing at all when the root came up empty or more than half of
    its documents would go, unless ``allow_mass_delete``. A document that fails is recorded
    with its stage and reason while the rest go on; one that failed before and has not
    changed since is not read again, only counted as still failing.

    ``citeline index`` answers a sync that would write nothing without calling this flow
    (``tasks.folder_plan.unchanged``): a step added here that writes needs its condition there.

    Returns:
        RunSummary; the run ends Completed (still-failing documents included: nothing new
        failed), Failed "DocumentsFailed" when documents failed in this run, Failed
        "DeletionsHeld" when it kept documents it was not sure were gone, Failed
        "TooManyFailed" when more than ``max_failed`` documents failed.
    """
    log = get_logger(flow="index-folder", root=root)
    log.info(Events.RUN_STARTED)
    with writer_lock(settings.db, wait_s), cooperative():
        store = store_for(settings.db)
        stamp = stamp_for(settings)
        with set_up_writes(settings.db):
            failpoint("setup.create")
            store.chunks(stamp, create=True)  # refuse an index of another model before any work
            if removed := store.clean_temp_files():
                log.warning(Events.RUN_CLEANED, leftover_files=removed)
            failpoint("setup.migrate")
            store.migrate()  # the plan reads the stat columns, the sweep the generations
            # decided once: the documents' tasks then keep each chunk's word-piece vectors from its pass
            settings = resolve_token_vectors(settings, stamp)
            if swept := store.sweep_unowned():  # before the plan: a swept document is read again
                log.warning(Events.RUN_SWEPT, documents=len(swept), paths=[d["path"] for d in swept if d["path"]])
            if purged := store.purge_forgotten(settings.grace_days):  # before the plan: their files are new again
                log.info(Events.RUN_PURGED, documents=len(purged), rows=sum(p["rows"] for p in purged),
                         grace_days=settings.grace_days)
        marks = [time.perf_counter()]
        plan = plan_folder(root, store, stamp, selection, verify, allow_mass_delete)
        for held in plan.held:
            log.warning(Events.RUN_HELD, folder=held.folder, documents=held.documents, reason=held.reason)
        if synced_root(root) not in store.roots():
            with set_up_writes(settings.db):
                failpoint("setup.root")
                store.add_root(synced_root(root))
        marks.append(time.perf_counter())
        log.info(Events.RUN_PLANNED, total=len(plan.todo), skipped=len(plan.skip), gone=len(plan.gone),
                 still_failing=len(plan.still_failing))
        # renames, moves, copies: no task run each; quote(): Prefect would walk every item of a
        # big list passed to a task (seconds for 2,000 files)
        renamed, todo = index_renamed(quote(plan.todo), stamp, settings)
        outcomes, failed = run_documents(todo, stamp, settings)
        outcomes = renamed + outcomes
        if interrupt.requested():
            return stopped_by_signal(store, outcomes, failed, len(plan.todo), len(plan.skip))
        unchanged = sum(o.status == DocStatus.SKIPPED for o in outcomes)
        set_aside = [NotDocument(o.path, o.what) for o in outcomes if o.status == DocStatus.NOT_DOCUMENT]
        outcomes = [o for o in outcomes if o.status == DocStatus.INDEXED]
        failures, deleted, stopped = as_failures(failed), 0, None
        try:
            failures = record_failures(failed, settings) if failed else []
            # a renamed file's old rows live on under its new path: not kept twice
            lent = frozenset(o.lent_by for o in outcomes if o.lent_by)
            deleted = forget_deleted(quote(plan.gone), stamp, settings, lent) if plan.gone else 0
            marks.append(time.perf_counter())
            check_writer(settings.db)  # S3: a run whose lease was lost stops before finishing
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
            log.error(Events.RUN_STOPPED, reason=storage_reason(exc))
        summary = RunSummary(
            indexed=len(outcomes), failed=len(failures), skipped=len(plan.skip) + unchanged, deleted=deleted,
            chunks=sum(o.chunks for o in outcomes), truncated=sum(o.truncated for o in outcomes),
            rows=store.count_chunks(owned=True), failures=tuple(failures),
            encoded=sum(o.encoded for o in outcomes), reused=sum(o.reused for o in outcomes),
            still_failing=len(plan.still_failing), held=tuple(held.line() for held in plan.held),
            **in_words(outcomes, plan.gone, deleted, {t.file.path for t in plan.todo if t.forgotten}),
            not_documents=tuple(sorted([*plan.set_aside, *set_aside], key=lambda d: d.path)),
        )
        state = stopped_state(summary, stopped) if stopped else final_state(summary, max_failed)
        if not stopped:  # a full disk would refuse the note too
            noted(lambda: note_sync(store, synced_root(root), state.name, summary.line()))
    seconds = dict(zip(("plan", "documents", "finish"), (round(b - a, 4) for a, b in zip(marks, marks[1:]))))
    log.info(Events.RUN_FINISHED, seconds=seconds, not_documents=len(summary.not_documents),
             **{k: v for k, v in summary.__dict__.items() if k not in ("failures", "not_documents")})
    publish_report(summary, root, settings.db, by=f"the sync of {root}")
    return state


def noted(write) -> None:
    """Write a health note (index/health.py); a storage error (a disk that filled meanwhile) is
    logged, not raised: the run's documents are written, and the note is only what operators read."""
    try:
        write()
    except Exception as exc:
        if not is_storage_error(exc):
            raise
        get_logger().warning("run.not_noted", reason=storage_reason(exc))


def in_words(indexed: list[Outcome], gone: list[dict], deleted: int, came_back: set[str] = frozenset()
             ) -> dict[str, int]:
    """``RunSummary``'s counts in words: new, restored (new here, of a document a sync forgot
    within the grace period: ``came_back`` holds their paths), changed, renamed (the lender's
    file is gone: its record's deletion is the rename's, not a file deleted), copied, and the
    files really gone."""
    gone_sources = {r["source"] for r in gone}
    lenders = {o.lent_by for o in indexed if o.change == "renamed" and o.lent_by in gone_sources}
    count = {change: sum(o.change == change for o in indexed) for change in ("new", "changed", "renamed")}
    renamed = sum(o.change == "renamed" and o.lent_by in lenders for o in indexed)
    restored = sum(o.change == "new" and o.path in came_back for o in indexed)
    return {"new": count["new"] - restored, "restored": restored, "changed": count["changed"], "renamed": renamed,
            "copied": count["renamed"] - renamed, "vanished": max(deleted - len(lenders), 0) if deleted else 0}


def run_documents(todo: list[Todo], stamp: IndexStamp, settings: IndexSettings
                  ) -> tuple[list[Outcome], list[tuple[Todo, DocError]]]:
    """Prepare documents on the task runner; write them, in batches as they complete, from this process.

    A finished future is let go as soon as its result is taken: it holds the prepared
    rows and vectors, and ``as_completed`` keeps every future it was given until the
    last one is done, so peak memory would grow with the corpus. A batch is written
    when it holds ``WRITE_DOCS`` documents or ``WRITE_ROWS`` chunks, when no other
    document finished within ``WRITE_WAIT_S`` of its first, or when nothing is left.

    Small files are prepared in groups, one task run each (``work_groups``), so their chunks
    share encoder batches: one or two chunks a call left the encoder at a quarter of its speed
    in process (first index of 2,000 notes: 16.5 → 45 documents/s, docs/benchmarks.md) and cost
    a scheduler round trip each on a cluster. A document of a group that fails still fails alone,
    with a failed task run named by its path.

    Returns:
        an Outcome per document written (INDEXED) or found unchanged on reading
        (SKIPPED: its new stat is recorded), and the documents that failed.
    """
    finished = queue.SimpleQueue()
    pending = {}
    for work in work_groups(todo):
        submit(work, stamp, settings, pending, finished)
    outcomes, failed, batch = [], [], WriteBatch()
    while pending or batch.items:
        future = next_finished(finished, batch) if pending else None
        if interrupt.requested():  # what is written stands; the rest is the next run's
            break
        timed_out = future is None
        if future is not None:
            future.wait()
            item = pending.pop(future.task_run_id)
            state = future.state
            del future
            if isinstance(item, list):
                for again in take_group(item, state.result(), batch, failed, settings.db):
                    submit(again, stamp, settings, pending, finished)
            elif state.is_completed():
                batch.add(item, state.result())
            else:
                failed.append((item, as_doc_error(state.result(raise_on_failure=False), state)))
                log_finished(item, DocStatus.FAILED)
        if batch.items and (timed_out or batch.full()):
            written, refused = write_batch(batch.take(), stamp, settings)
            outcomes += written
            failed += refused
    return outcomes, failed


# Small files are prepared GROUP_DOCS at a time, up to GROUP_BYTES in all: about EMBED_GROUP
# chunks of 512 characters, so their encoder batches are full (docs/benchmarks.md, section 11).
# Only local files whose extractor runs in process: a group is one task, so one member stuck in
# a binary parser until its time-out, or an object store's transient error (retried alone, its
# back-off starting over), would hold back or re-time the others.
SMALL_BYTES = 8 * 1024
GROUP_BYTES = 32 * 1024
GROUP_DOCS = 32


def work_groups(todo: list[Todo]) -> list[Todo | list[Todo]]:
    """The documents as task-run work: small local text files in groups, in order; a large one,
    one whose size the listing did not give, a remote one or one a binary parser reads, alone."""
    works, group, size = [], [], 0
    for item in todo:
        small = (item.file.stat is not None and item.file.stat.size <= SMALL_BYTES
                 and not is_remote(item.file.source) and runs_in_process(item.file.path))
        if group and (not small or size + item.file.stat.size > GROUP_BYTES or len(group) == GROUP_DOCS):
            works.append(group if len(group) > 1 else group[0])
            group, size = [], 0
        if small:
            group.append(item)
            size += item.file.stat.size
        else:
            works.append(item)
    if group:
        works.append(group if len(group) > 1 else group[0])
    return works


def submit(work: Todo | list[Todo], stamp: IndexStamp, settings: IndexSettings, pending: dict,
           finished: queue.SimpleQueue) -> None:
    """Start preparing one document, or a group in one task run; its future goes to ``finished`` when done."""
    if isinstance(work, list):
        future = prepare_documents.submit(work, stamp, settings, f"{len(work)} documents ({work[0].file.path} …)")
    else:
        future = prepare_document.submit(work, stamp, settings)
    pending[future.task_run_id] = work
    future.add_done_callback(finished.put)


def take_group(group: list[Todo], results: list, batch: "WriteBatch", failed: list, db: str) -> list[Todo]:
    """A prepared group's documents into the write batch or the failures, each alone.

    A failed one gets a failed task run named by its path, as an ungrouped one has.

    Returns:
        the documents that met a transient error, to prepare again alone (with retries).
    """
    again = []
    for item, result in zip(group, results, strict=True):
        if isinstance(result, Again):
            again.append(item)
        elif isinstance(result, DocError):
            document_failed(item.file.path, result, db, item.file.source, return_state=True)
            failed.append((item, result))
            log_finished(item, DocStatus.FAILED)
        else:
            batch.add(item, result)
    return again


# Documents per write: each LanceDB commit adds a fragment and a manifest every later
# merge and scan reads, so one commit per document made a first index of 2,000 small
# files slow from 190 to 50 documents a minute (bench/small_files.py, docs/benchmarks.md).
WRITE_DOCS = 64
WRITE_ROWS = 2048  # and so a batch of large documents stays a few MB of vectors
WRITE_WAIT_S = 2.0  # a slow document does not hold finished ones back for longer


@dataclass
class WriteBatch:
    """Finished documents waiting for one write, with when the first of them came."""

    items: list[tuple[Todo, Prepared | Unchanged | SetAside]] = field(default_factory=list)
    rows: int = 0
    since: float = 0.0

    def add(self, todo: Todo, result: Prepared | Unchanged | SetAside) -> None:
        if not self.items:
            self.since = time.monotonic()
        self.items.append((todo, result))
        self.rows += len(result.rows) if isinstance(result, Prepared) else 0

    def full(self) -> bool:
        return len(self.items) >= WRITE_DOCS or self.rows >= WRITE_ROWS

    def left_s(self) -> float | None:
        """How long to wait for the next document before writing; None: no batch, wait for one."""
        return max(0.0, self.since + WRITE_WAIT_S - time.monotonic()) if self.items else None

    def take(self) -> list[tuple[Todo, Prepared | Unchanged | SetAside]]:
        items, self.items, self.rows = self.items, [], 0
        return items


# How often a wait for the next document looks for a stop request (SIGTERM, SIGINT).
STOP_POLL_S = 0.2


def next_finished(finished: queue.SimpleQueue, batch: WriteBatch):
    """The next finished future; None when the batch waited long enough to be written, or
    when the run was told to stop."""
    while not interrupt.requested():
        left = batch.left_s()
        try:
            return finished.get(timeout=STOP_POLL_S if left is None else min(left, STOP_POLL_S))
        except queue.Empty:
            if left is not None and left <= STOP_POLL_S:
                return None
    return None


def write_batch(items: list[tuple[Todo, Prepared | Unchanged | SetAside]], stamp: IndexStamp, settings: IndexSettings
                ) -> tuple[list[Outcome], list[tuple[Todo, DocError]]]:
    """Write a batch in two commits; when the storage refuses it, each document alone, so only
    the one it refuses fails (disk full, I/O error)."""
    # quote(): Prefect walks a task's parameters item by item, here every chunk and its vector
    # (3.3 s of a 4.8 s write of one 120-chunk document, docs/benchmarks.md section 23).
    state = write_documents(quote([(result, todo.prior) for todo, result in items]), stamp, settings,
                            batch_label(items), return_state=True)
    if state.is_completed():
        outcomes = state.result()
        for todo, outcome in zip((t for t, _ in items), outcomes):
            log_finished(todo, outcome.status)
        return outcomes, []
    error = as_doc_error(state.result(raise_on_failure=False), state)  # a bug raises here
    if len(items) > 1:
        outcomes, failed = [], []
        for item in items:
            written, refused = write_batch([item], stamp, settings)
            outcomes += written
            failed += refused
        return outcomes, failed
    todo = items[0][0]
    log_finished(todo, DocStatus.FAILED)
    return [], [(todo, error)]


def batch_label(items: list[tuple[Todo, Prepared | Unchanged | SetAside]]) -> str:
    """The write's task-run name: a lone document's path, else the count and the first path."""
    first = items[0][0].file.path
    return first if len(items) == 1 else f"{len(items)} documents ({first} …)"


def log_finished(todo: Todo, status: DocStatus) -> None:
    get_logger().info(Events.DOCUMENT_FINISHED, path=todo.file.path, status=status)


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


def stopped_by_signal(store, outcomes: list[Outcome], failed: list[tuple[Todo, DocError]], todo: int,
                      skipped: int):
    """A run told to stop (SIGTERM, SIGINT) during its documents: Failed "Stopped", with its summary.

    Nothing more is written after the stop: the documents written stand (chunks and records
    in their commits); failures seen are not recorded, vanished files not forgotten and the
    full-text index not updated: the next sync does all of it, and finds the written
    documents current.
    """
    written = [o for o in outcomes if o.status == DocStatus.INDEXED]
    skipped += sum(o.status == DocStatus.SKIPPED for o in outcomes)
    summary = RunSummary(indexed=len(written), failed=len(failed), skipped=skipped, chunks=sum(o.chunks for o in written),
                         rows=store.count_chunks(owned=True), failures=tuple(as_failures(failed)),
                         encoded=sum(o.encoded for o in written), reused=sum(o.reused for o in written))
    left = todo - len(outcomes) - len(failed)
    name = interrupt.signal_name(interrupt.requested())
    get_logger().warning(Events.RUN_STOPPED, reason=f"signal {name}", not_done=left)
    return Failed(name=STOPPED, data=summary,
                  message=f"stopped by signal {name}: {left} documents not done; the next run resumes "
                          "where this one stopped")


def stopped_state(summary: RunSummary, exc: Exception):
    """A run the system stopped after its documents (disk full): Failed, with its summary.

    Every commit before the error stands: a document is either written with its record,
    or still stale or failed in the record set, so the next sync indexes it again; the
    full-text index and token vectors are brought up to date by the next run.
    """
    return Failed(message=f"{summary.line()}; the run stopped before finishing: {storage_reason(exc)}. "
                          "Free the space and run it again: it finishes what this one left.", data=summary)


def final_state(summary: RunSummary, max_failed: int | None):
    """Completed when every document is fine; otherwise Failed, named for what happened."""
    if max_failed is not None and summary.failed > max_failed:
        return Failed(name=TOO_MANY_FAILED, data=summary,
                      message=f"{summary.failed} documents failed (more than {max_failed}). {summary.line()}")
    if summary.held:  # before DocumentsFailed: a share gone is worse news than a broken file
        return Failed(name=DELETIONS_HELD, data=summary, message="; ".join(summary.held))
    if summary.failed:
        return Failed(name=DOCUMENTS_FAILED, message=summary.line(), data=summary)
    return Completed(message=summary.line(), data=summary)
