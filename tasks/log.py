"""Structured logs: structlog renders JSON into the stdlib logger "citeline", which
Prefect forwards to the UI (PREFECT_LOGGING_EXTRA_LOGGERS)."""
from __future__ import annotations

import logging

import structlog

LOGGER = "citeline"
_configured = False


def configure() -> None:
    global _configured
    if _configured:
        return
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(sort_keys=True),
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    logging.getLogger(LOGGER).setLevel(logging.INFO)
    _configured = True


def get_logger(**context):
    configure()
    return structlog.get_logger(LOGGER).bind(**context)
