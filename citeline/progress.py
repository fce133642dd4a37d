"""A progress bar fed by the flow's structured log events (the flow knows nothing of it)."""
from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from citeline.schemas.text import visible


class _ProgressHandler(logging.Handler):
    def __init__(self, progress: Progress):
        super().__init__(logging.INFO)
        self.progress = progress
        self.task = progress.add_task("indexing", total=None)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            event = json.loads(record.getMessage())
        except (TypeError, ValueError):
            return
        if event.get("event") == "run.planned":
            self.progress.update(self.task, total=event["total"], completed=0)
        elif event.get("event") == "document.finished":
            self.progress.update(self.task, advance=1, description=_shown(event.get("path", "indexing")))


def _shown(path: str) -> str:
    """The path's last 40 characters as rich markup: controls escaped, "[" not read as a style tag."""
    return escape(visible(path)[-40:])


@contextmanager
def index_progress(enabled: bool = True) -> Iterator[None]:
    if not enabled:
        yield
        return
    columns = (TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    logger = logging.getLogger("citeline")
    with Progress(*columns, console=Console(stderr=True), transient=False) as progress:
        handler = _ProgressHandler(progress)
        logger.addHandler(handler)
        try:
            yield
        finally:
            logger.removeHandler(handler)
