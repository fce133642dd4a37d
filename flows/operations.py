"""The operator's deployments (prefect.yaml): what an operator runs from the Prefect UI.

Each flow here takes flat, typed parameters, described in its docstring, so the UI's Run
form is a labelled form (Prefect builds it from the signature and the ``Args:`` section),
and calls the flow the CLI calls (flows/ingest.py, retry.py, reindex.py, repair.py) inside
its own run: one flow run per deployment run, under the same flow name as a CLI run.

One index is written by one run at a time. Beside the writer lock (index/lock.py), which
refuses a second writer, every run here first takes the slot of a Prefect global
concurrency limit named after its index (``limit_name``, limit 1): a retry started from the
UI while the scheduled sync writes the same index waits in line for it, and then runs.
"""
# No `from __future__ import annotations`: Prefect builds the Run form from the annotations.
import contextvars
import hashlib
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from typing import Iterator, Literal, Optional

from prefect import flow
from prefect.concurrency.sync import concurrency
from prefect.states import Failed
from prefect.task_runners import ThreadPoolTaskRunner

from citeline.flows.ingest import index_folder
from citeline.flows.reindex import reindex
from citeline.flows.repair import repair_index
from citeline.flows.retry import retry_failed
from citeline.pipeline.walk import Selection, check_patterns
from citeline.schemas.paths import absolute, escape
from citeline.schemas.settings import DEFAULT_GRACE_DAYS, DEFAULT_MODEL, DEFAULT_STRATEGY, DOCUMENT_WORKERS, IndexSettings
from citeline.runtime.log import configure_unless_set, get_logger, quiet_expected_failures

Strategy = Literal["A", "B", "C", "D", "E", "F"]  # schemas/settings.py STRATEGIES; pipeline/chunk.py says what each is
WAIT_S = 6 * 3600.0  # a queued run waits this long for the index's other run (a first sync of a big folder)
SAY_EVERY_S = 60.0  # a waiting run logs that it waits this often
# The index's slot is a lease the run renews; a killed run's lapses after this long, so the next
# run waits minutes at most (Prefect's default lease is 300 s).
LEASE_S = 120.0

# A worker's flow-run process runs none of citeline's entry points: Prefect imports this module
# and calls the flow. Without a level of its own the "citeline" logger inherits the root's
# WARNING, and the run's log in the UI missed every INFO line ("run.queued", "run.waiting", the
# summary) while the tests, run from an entry point, saw them.
configure_unless_set()


def limit_name(db: str) -> str:
    """The global concurrency limit that lets one run at a time write the index at ``db``.

    >>> limit_name("/data/index") == limit_name("/data/../data/index/")
    True
    >>> limit_name("s3://bucket/index")
    'citeline-index-e4c27abad079'
    """
    return f"citeline-index-{hashlib.sha256(escape(absolute(db)).encode()).hexdigest()[:12]}"


def ensure_limit(name: str) -> None:
    """Create the limit (one slot) unless it exists: Prefect does not create a missing one."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
            return
        except ObjectNotFound:
            pass
        try:
            client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
        except ObjectAlreadyExists:  # another run created it first
            pass


class Queued(TimeoutError):
    """The index's other run did not finish within ``wait_s``."""


@contextmanager
def one_writer(db: str, wait_s: float, say_every_s: float = SAY_EVERY_S) -> Iterator[None]:
    """Hold the index's concurrency slot, waiting in line up to ``wait_s`` seconds for it.

    While it waits, the run logs ``run.waiting`` every ``say_every_s`` seconds, so its log in
    the UI says what it waits for rather than sitting at "Running, 0 task runs".

    Raises:
        Queued: the slot stayed taken.
    """
    name = limit_name(db)
    ensure_limit(name)
    log = get_logger(db=db)
    log.info("run.queued", concurrency_limit=name)
    done_waiting = threading.Event()
    # One blocking acquisition, not a loop of short ones: Prefect logs an ERROR for every
    # acquisition that times out. The thread runs in this run's context, so its lines reach the run's log.
    threading.Thread(target=contextvars.copy_context().run, daemon=True,
                     args=(say_while_waiting, log, name, done_waiting, say_every_s)).start()
    held = False
    try:
        with concurrency(name, occupy=1, timeout_seconds=wait_s, lease_duration=LEASE_S, strict=True):
            held = True
            done_waiting.set()
            yield
    except TimeoutError:
        if held:  # raised by the run's own work, not by the wait
            raise
        raise Queued(f"another run wrote the index {db} for more than {wait_s:g} s (concurrency limit "
                     f"{name}); this one did nothing") from None
    finally:
        done_waiting.set()


def say_while_waiting(log, name: str, done: threading.Event, every_s: float) -> None:
    started = time.monotonic()
    while not done.wait(every_s):
        log.info("run.waiting", concurrency_limit=name, waited_s=round(time.monotonic() - started),
                 why="another run is writing this index")


def settings_for(db: str, model: str = "", strategy: Optional[str] = None) -> IndexSettings:
    """The index's settings: the model and strategy asked for, else the index's own, else the defaults."""
    from citeline.index.store import Store, index_exists

    stamp = Store(db).stamp() if index_exists(db) else None
    return IndexSettings(db=absolute(db), model=model or (stamp.embed_model if stamp else DEFAULT_MODEL),
                         strategy=(strategy or (stamp.strategy if stamp else DEFAULT_STRATEGY)).upper())


def queued_state(exc: Queued):
    return Failed(name="Queued", message=str(exc), data=exc)


class RunFailed(Exception):
    """A run that ended Failed with a summary (documents failed, violations remain): the
    exception its state carries, which the worker's engine raises at the end of the run."""

    def __init__(self, message: str, summary):
        super().__init__(message)
        self.summary = summary


# Loaded by the worker's engine before it runs the flow: a run Failed on purpose logs no traceback.
quiet_expected_failures(RunFailed)


def for_worker(state):
    """The state of a CLI flow as a deployment's run ends with: a Failed one carries a RunFailed
    holding its summary, since the engine in the worker's process resolves a failed state's data
    into an exception to raise (a RunSummary made it fail with a TypeError instead)."""
    if state.is_failed() and not isinstance(state.data, BaseException):
        return Failed(name=state.name, message=state.message, data=RunFailed(state.message or state.name, state.data))
    return state


@flow(name="index-folder", flow_run_name="index {folder}",
      task_runner=ThreadPoolTaskRunner(max_workers=DOCUMENT_WORKERS))
def sync_folder(folder: str, db: str, model: str = "", strategy: Optional[Strategy] = None,
                max_failed: Optional[int] = None, verify: bool = False, allow_mass_delete: bool = False,
                include: Optional[list[str]] = None, exclude: Optional[list[str]] = None,
                wait_s: float = WAIT_S, grace_days: float = DEFAULT_GRACE_DAYS):
    """Index a folder, or bring its index up to date: the scheduled sync.

    New and changed files are indexed, unchanged ones (same size, modification time and
    inode) skipped unread, deleted ones forgotten — but nothing under a folder that could
    not be listed, and nothing when the folder came up empty or more than half of its
    documents would go (the run is Failed "DeletionsHeld"). A file that fails is recorded with its reason and not read again until it
    changes (counted as still failing); the run is Failed "DocumentsFailed" only when a
    document failed in this run.

    Args:
        folder: The folder to keep indexed, as the worker's machine sees it: an absolute
            path, or an S3 prefix (s3://bucket/prefix).
        db: The index: an absolute folder on the worker's machine, or s3://bucket/prefix.
        model: The embedding model of a new index (a packaged alias such as
            all-MiniLM-L6-v2, or a local sentence-transformers folder). Empty: the index's
            own model. To change an existing index's model, run the reindex deployment.
        strategy: The chunking strategy of a new index (A-F, see docs/query.md). Empty:
            the index's own (E for a new index).
        max_failed: Fail the run as TooManyFailed when more documents than this fail in it.
            Empty: no limit.
        verify: Hash every file, even those whose size and modification time are
            unchanged, and read failed ones again (the weekly schedule runs with it).
        allow_mass_delete: Forget the vanished files' documents even when the folder came
            up empty or more than half of its documents would go. Set it for one run only.
        include: Index only the files matching one of these patterns (gitignore syntax,
            relative to the folder, as `citeline index --include`). Empty: every file.
        exclude: Skip the files and folders matching these patterns (gitignore syntax, as
            `citeline index --exclude`: after the defaults and the folder's .citelineignore;
            `!pattern` takes a file back). Indexed files now excluded are forgotten.
        wait_s: Seconds to wait in line while another run writes this index.
        grace_days: Days a forgotten document's chunks are kept, unserved, so that a file
            (or a share) that comes back is not embedded again; the run after that deletes
            them. 0: delete them at once.
    """
    selection = Selection(tuple(include or ()), tuple(exclude or ()))
    try:
        check_patterns(selection)
    except ValueError as exc:  # before the index's slot: a typo in the form, not an index's trouble
        return Failed(name="InvalidParameters", message=str(exc), data=RunFailed(str(exc), None))
    try:
        with one_writer(db, wait_s):
            settings = replace(settings_for(db, model, strategy), grace_days=max(0.0, grace_days))
            return for_worker(index_folder.fn(folder, settings, max_failed=max_failed, wait_s=wait_s, verify=verify,
                                              allow_mass_delete=allow_mass_delete, selection=selection))
    except Queued as exc:
        return queued_state(exc)


@flow(name="retry-failed", flow_run_name="retry failed in {db}", task_runner=ThreadPoolTaskRunner(max_workers=2))
def retry_failed_documents(db: str, path: str = "", wait_s: float = WAIT_S):
    """Index again the documents that failed: all of the index's, or those under one path.

    Run it once a file is fixed; the index's failing-documents-… artifact lists every failing
    document with the parameters that retry it.

    Args:
        db: The index: an absolute folder on the worker's machine, or s3://bucket/prefix.
        path: Only the failed documents under this file or folder (absolute, as the index
            stores it). Empty: every failed document.
        wait_s: Seconds to wait in line while another run writes this index.
    """
    try:
        with one_writer(db, wait_s):
            settings = settings_for(db)
            return for_worker(retry_failed.fn(settings, path or None, wait_s=wait_s))
    except Queued as exc:
        return queued_state(exc)


@flow(name="reindex", flow_run_name="reindex {db} to {model}", task_runner=ThreadPoolTaskRunner(max_workers=2))
def reindex_index(db: str, model: str, strategy: Optional[Strategy] = None, wait_s: float = WAIT_S):
    """Rebuild the index for another embedding model or chunking strategy, then switch.

    The new table is built beside the live one from the stored text (nothing is extracted
    again); searches use the live table until every document is in the new one.

    Args:
        db: The index: an absolute folder on the worker's machine, or s3://bucket/prefix.
        model: The new embedding model: a packaged alias (all-MiniLM-L6-v2, minilm-int8,
            all-mpnet-base-v2) or a local sentence-transformers folder.
        strategy: A new chunking strategy (A-F). Empty: keep the index's.
        wait_s: Seconds to wait in line while another run writes this index.
    """
    try:
        with one_writer(db, wait_s):
            settings = settings_for(db, model, strategy)
            return for_worker(reindex.fn(settings, wait_s=wait_s))
    except Queued as exc:
        return queued_state(exc)


@flow(name="repair-index", flow_run_name="check and repair {db}", task_runner=ThreadPoolTaskRunner(max_workers=2))
def check_repair(db: str, wait_s: float = WAIT_S):
    """Check the index's invariants, repair what can be repaired safely, and check again.

    The run is Failed when violations remain after the repair; its message counts them.

    Args:
        db: The index: an absolute folder on the worker's machine, or s3://bucket/prefix.
        wait_s: Seconds to wait in line while another run writes this index.
    """
    try:
        with one_writer(db, wait_s):
            settings = settings_for(db)
            return for_worker(repair_index.fn(settings, wait_s=wait_s))
    except Queued as exc:
        return queued_state(exc)
