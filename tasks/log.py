"""Structured logs: structlog renders JSON into the stdlib logger "citeline", which
Prefect forwards to the UI (PREFECT_LOGGING_EXTRA_LOGGERS).

The logger is wrapped on its own (``structlog.wrap_logger``) instead of through
``structlog.configure``, so a host application's structlog setup survives ``import
citeline`` and every citeline log line alike. Entry points call :func:`configure`
to choose the level; a library user keeps the one their logging config gives.
"""
from __future__ import annotations

import logging

import structlog

LOGGER = "citeline"

_PROCESSORS = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.processors.format_exc_info,
    structlog.processors.JSONRenderer(sort_keys=True),
]


def configure(level: int = logging.INFO) -> None:
    """Entry points only (CLI, served flows, benches): log citeline's records at ``level``."""
    logging.getLogger(LOGGER).setLevel(level)


def get_logger(**context):
    """A structlog logger bound to ``context`` that writes JSON into the "citeline" logger."""
    logger = structlog.wrap_logger(logging.getLogger(LOGGER), processors=_PROCESSORS,
                                   wrapper_class=structlog.stdlib.BoundLogger)
    return logger.bind(**context)
