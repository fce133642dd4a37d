"""What a person sees on stderr: log lines and the progress bar share one rich Console, so a
line prints above the bar instead of through it.

Log lines are JSON when stderr is not a terminal, rendered for reading when it is
(``tasks.log.formatter``). Verbosity: -q errors only, default warnings (documents that
fail are listed by the summary instead), -v per-document lines and Prefect's own, -vv debug.
The bar follows the flow's events (``tasks.log.Events``) and names the stage while nothing
is counted yet.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from citeline.schemas.text import visible
from citeline.runtime.log import LOGGER, Events, event_of, formatter

QUIET, DEFAULT, VERBOSE, DEBUG = -1, 0, 1, 2
# Libraries whose INFO lines are chatter here ("Starting temporary server", "Finished in state
# Completed()"): shown only with -v.
# Prefect's background senders log under their class names ("Still processing items: 1 items
# remaining..." as a command exits): Prefect's own, shown with -v like the rest.
CHATTY = ("prefect", "uvicorn", "fastapi", "httpx", "httpcore", "docket", "EventsWorker", "APILogWorker")


@lru_cache(maxsize=1)
def stderr_console() -> Console:
    """The one Console on stderr (rich resolves sys.stderr when it writes)."""
    return Console(stderr=True)


class TerminalLogHandler(logging.Handler):
    """Writes every record through the stderr Console, filtered by verbosity."""

    def __init__(self, verbosity: int = DEFAULT, chatty: tuple[str, ...] = CHATTY):
        super().__init__(logging.DEBUG)
        self.verbosity = verbosity
        self.chatty = chatty
        self.formatters = {True: formatter(tty=True), False: formatter(tty=False)}
        self.setFormatter(self.formatters[False])  # a handler with a formatter: Prefect leaves it on root

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.threshold(record) and super().filter(record)

    def threshold(self, record: logging.LogRecord) -> int:
        if self.verbosity >= DEBUG:
            return logging.DEBUG
        if self.verbosity >= VERBOSE:
            return logging.INFO
        event = event_of(record)
        if event is not None and event.get("event") in Events.PER_DOCUMENT:
            return logging.CRITICAL + 1  # the summary lists every failed document
        if event is None and record.name.split(".")[0] in self.chatty:
            return logging.CRITICAL
        return logging.ERROR if self.verbosity <= QUIET else logging.WARNING

    def emit(self, record: logging.LogRecord) -> None:
        try:
            console = stderr_console()
            tty = console.is_terminal
            line = self.formatters[tty].format(record)
            if tty:
                console.print(Text.from_ansi(line), soft_wrap=True)
            else:
                console.file.write(line + "\n")
                console.file.flush()
        except Exception:  # a log line never stops a run (stdlib's own policy)
            self.handleError(record)


def configure_terminal(verbosity: int, chatty: tuple[str, ...] = CHATTY) -> None:
    """Route every log record of this process through one TerminalLogHandler on the root logger.

    Replaces Prefect's console handler (which prints over a progress bar and repeats
    timestamp and level around citeline's JSON); Prefect's API handler on the "citeline"
    logger stays, so the UI keeps the run's logs. ``chatty``: libraries whose records show only
    with -v, errors too (a failed task's error is listed by the summary).
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, TerminalLogHandler) or type(handler).__name__ == "PrefectConsoleHandler":
            root.removeHandler(handler)
    root.addHandler(TerminalLogHandler(verbosity, chatty))
    logging.getLogger(LOGGER).setLevel(logging.DEBUG if verbosity >= DEBUG else logging.INFO)
    logging.captureWarnings(True)  # Python warnings become records too: JSON when piped


class _ProgressHandler(logging.Handler):
    def __init__(self, progress: Progress):
        super().__init__(logging.INFO)
        self.progress = progress
        self.task = progress.add_task("starting Prefect", total=None)

    def emit(self, record: logging.LogRecord) -> None:
        event = event_of(record) or {}
        name = event.get("event")
        if name == Events.RUN_STARTED:
            self.progress.update(self.task, description="planning")
        elif name == Events.RUN_PLANNED:
            total = event.get("total", 0)
            self.progress.update(self.task, total=total, completed=0,
                                 description="loading model" if total else "nothing to index")
        elif name == Events.DOCUMENT_FINISHED:
            self.progress.update(self.task, advance=1, description=_shown(event.get("path", "indexing")))
        elif name == Events.DOCUMENTS_RENAMED:  # many renamed files, one line (runtime/log.py each_or_summary)
            self.progress.update(self.task, advance=event.get("count", 0), description="renamed files")
        elif name == Events.RUN_FINISHED:
            self.progress.update(self.task, description="done")


def _shown(path: str) -> str:
    """The path's last 40 characters as rich markup: controls escaped, "[" not read as a style tag."""
    return escape(visible(path)[-40:])


@contextmanager
def index_progress(enabled: bool = True) -> Iterator[None]:
    """A progress bar on the stderr Console while the block runs (only when it is a terminal)."""
    console = stderr_console()
    if not enabled or not console.is_terminal:
        yield
        return
    columns = (TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    logger = logging.getLogger(LOGGER)
    with Progress(*columns, console=console, transient=False) as progress:
        handler = _ProgressHandler(progress)
        logger.addHandler(handler)
        try:
            yield
        finally:
            logger.removeHandler(handler)
