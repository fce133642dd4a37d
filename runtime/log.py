"""Structured logs: structlog events through the stdlib logger "citeline", which Prefect
forwards to the UI (PREFECT_LOGGING_EXTRA_LOGGERS).

Each record carries its message as one JSON object (what the Prefect UI and any plain
handler show) and the event itself as ``record.citeline_event``, a dict: the CLI's
formatter (:func:`formatter`, a structlog ``ProcessorFormatter``) renders that dict as a
JSON line or for a terminal, and its progress bar reads the event name from it, never
parsing a message. Every event carries the ``flow_run_id`` and ``task_run_id`` of the
Prefect run it was logged in.

The logger is wrapped on its own (``structlog.wrap_logger``) instead of through
``structlog.configure``, so a host application's structlog setup survives ``import
citeline`` and every citeline log line alike. Entry points call :func:`configure`
to choose the level; a library user keeps the one their logging config gives.
"""
from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping, Sequence

import structlog

from citeline.schemas.text import visible

LOGGER = "citeline"
EVENT = "citeline_event"  # the LogRecord attribute holding the event dict


class Events:
    """The event names the flows log and the CLI's progress bar and filters read."""

    RUN_STARTED = "run.started"
    RUN_PLANNED = "run.planned"
    RUN_UNCHANGED = "run.unchanged"  # nothing to write: answered without a flow run (flows/sync_plan.py)
    RUN_FINISHED = "run.finished"
    RUN_STOPPED = "run.stopped"
    RUN_CLEANED = "run.cleaned"
    FOLDER_LEFT_OUT = "folder.left_out"  # the index (or Prefect's home) inside the synced folder: not indexed
    RUN_HELD = "run.held"  # documents not forgotten: a folder not listed, a mass deletion (pipeline/plan.py)
    SERVER_STARTED = "server.started"  # the citeline Prefect server, started for a command's flow run
    SERVER_NOT_STARTED = "server.not_started"  # its start failed: the run uses Prefect's temporary server
    RUN_PURGED = "run.purged"  # rows of documents forgotten longer ago than the grace period, deleted
    RUN_SWEPT = "run.swept"  # chunk rows no record owned (a writer killed between its commits), deleted
    DOCUMENT_FINISHED = "document.finished"
    DOCUMENT_INDEXED = "document.indexed"
    DOCUMENT_FAILED = "document.failed"
    DOCUMENT_SET_ASIDE = "document.set_aside"  # no document (an archive, a photo with no text): not failed
    DOCUMENT_DELETED = "document.deleted"
    DOCUMENT_REEMBEDDED = "document.reembedded"
    # Past PER_DOCUMENT_LINES documents of one kind in one step, one line for all of them: each
    # record costs ~2 ms in Prefect's API log handler, most of a 2,000-file rename's time.
    DOCUMENTS_RENAMED = "documents.renamed"
    DOCUMENTS_DELETED = "documents.deleted"
    # One line per document: shown on a terminal only with -v (the summary lists failures).
    PER_DOCUMENT = frozenset({DOCUMENT_FINISHED, DOCUMENT_INDEXED, DOCUMENT_FAILED, DOCUMENT_SET_ASIDE,
                              DOCUMENT_DELETED, DOCUMENT_REEMBEDDED})


PER_DOCUMENT_LINES = 100
LISTED = 100  # documents a summary line names; it counts the rest


def each_or_summary(log, events: Sequence[str], documents: Sequence[Mapping], summary: str, **totals) -> None:
    """Log ``events`` for each document (its mapping as fields), or for more than
    ``PER_DOCUMENT_LINES`` of them one ``summary`` event: their count, ``totals``, the first
    ``LISTED`` documents and how many more (the CLI's progress bar advances by the count)."""
    if len(documents) <= PER_DOCUMENT_LINES:
        for fields in documents:
            for event in events:
                log.info(event, **fields)
        return
    log.info(summary, count=len(documents), listed=[dict(d) for d in documents[:LISTED]],
             more=max(len(documents) - LISTED, 0), **totals)


# A failed document's task run ends in a Failed state of this name (tasks/document.py failed_state):
# expected, and logged by citeline as one WARNING ``document.failed`` line.
DOCUMENT_FAILED_STATE = "DocumentFailed"
_EXPECTED_RUN_ENDS: tuple[type[BaseException], ...] = ()


class ExpectedFailures(logging.Filter):
    """Leaves out Prefect's ERROR lines for failures citeline expects and reports itself.

    A failed document's task run ends with Prefect's ERROR "Finished in state DocumentFailed(...)"
    (and, for a task without retries, "Task run failed with state: DocumentFailed(...)" with a
    traceback) beside citeline's WARNING ``document.failed``: errors for a bad file.
    A deployment's run that ends Failed (documents failed, violations remain) makes the engine
    of a worker's process raise the state's exception and log it as "Engine execution exited with
    unexpected exception" with a traceback (prefect/flow_engine.py ``run_flow``, Prefect 3.9):
    a bad file read like a crash. The run's own "Finished in state DocumentsFailed(...)" stays.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        if record.name == "prefect.task_runs":
            return not message.startswith((f"Finished in state {DOCUMENT_FAILED_STATE}(",
                                           f"Task run failed with state: {DOCUMENT_FAILED_STATE}("))
        if record.name == "prefect.flow_runs" and message.startswith("Engine execution exited with unexpected"):
            exc = record.exc_info[1] if record.exc_info else None
            return not isinstance(exc, _EXPECTED_RUN_ENDS)
        return True


_FILTER = ExpectedFailures()


def quiet_expected_failures(*run_ends: type[BaseException]) -> None:
    """Install ``ExpectedFailures`` on Prefect's run loggers (once); ``run_ends``: the exceptions a
    Failed run's state carries for an expected end (flows/operations.py ``RunFailed``)."""
    global _EXPECTED_RUN_ENDS
    _EXPECTED_RUN_ENDS = tuple(dict.fromkeys((*_EXPECTED_RUN_ENDS, *run_ends)))
    for name in ("prefect.task_runs", "prefect.flow_runs"):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def add_run_ids(logger, method: str, event: dict) -> dict:
    """The Prefect flow run and task run the event was logged in, when there is one."""
    if "prefect.context" not in sys.modules:  # no run without it; a command that needs none stays without Prefect
        return event
    from prefect.context import FlowRunContext, TaskRunContext

    task_run = TaskRunContext.get()
    flow_run = FlowRunContext.get()
    if task_run is not None:
        event.setdefault("task_run_id", str(task_run.task_run.id))
        event.setdefault("flow_run_id", str(task_run.task_run.flow_run_id))
        doc_ids = [v.doc_id for v in (task_run.parameters or {}).values() if isinstance(getattr(v, "doc_id", None), str)]
        if doc_ids:  # a task given a prepared document (write)
            event.setdefault("document_id", doc_ids[0])
    if flow_run is not None and flow_run.flow_run is not None:
        event.setdefault("flow_run_id", str(flow_run.flow_run.id))
    return event


def _to_record(logger, method: str, event: dict) -> tuple[tuple, dict]:
    """The record's message is the event as JSON; the dict rides along for formatters."""
    return (json.dumps(event, sort_keys=True, default=str),), {"extra": {EVENT: event}}


_PROCESSORS = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    add_run_ids,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.processors.format_exc_info,
    _to_record,
]


def configure(level: int = logging.INFO) -> None:
    """Entry points only (CLI, served flows, benches): log citeline's records at ``level``."""
    logging.getLogger(LOGGER).setLevel(level)


def configure_unless_set(level: int = logging.INFO) -> None:
    """``configure``, unless the host application gave the citeline logger a level already."""
    if logging.getLogger(LOGGER).level == logging.NOTSET:
        configure(level)


def get_logger(**context):
    """A structlog logger bound to ``context`` that logs into the "citeline" logger.

    Run ids, and the document id of a task given a prepared document, are added per event.
    """
    logger = structlog.wrap_logger(logging.getLogger(LOGGER), processors=_PROCESSORS,
                                   wrapper_class=structlog.stdlib.BoundLogger)
    return logger.bind(**context)


def event_of(record: logging.LogRecord) -> dict | None:
    """The structlog event a citeline record carries; None for anyone else's record."""
    return getattr(record, EVENT, None)


def _from_record(logger, method: str, event: dict) -> dict:
    """A citeline record's own event; another library's record (Prefect's) as an event."""
    record = event["_record"]
    own = event_of(record)
    if own is not None:
        return {**own, "_record": record, "_from_structlog": False}
    event.update(level=record.levelname.lower(), logger=record.name)
    for key in ("flow_run_id", "task_run_id"):
        if getattr(record, key, None):
            event[key] = str(getattr(record, key))
    return event


def _visible_values(logger, method: str, event: dict) -> dict:
    """Text from documents printed on a terminal shows its control characters as escapes."""
    return {k: visible(v) if isinstance(v, str) else v for k, v in event.items()}


def formatter(tty: bool) -> structlog.stdlib.ProcessorFormatter:
    """JSON lines for a pipe or file; a console renderer for a terminal."""
    timestamp = structlog.processors.TimeStamper(fmt="iso", utc=True)
    if tty:
        chain = [_visible_values, structlog.processors.TimeStamper(fmt="%H:%M:%S", utc=False),
                 structlog.dev.ConsoleRenderer(colors=True, pad_event_to=24)]
    else:
        chain = [structlog.processors.JSONRenderer(sort_keys=True)]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[_from_record, timestamp, structlog.processors.format_exc_info],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *chain],
    )
