"""What every command shares: turning citeline's errors into CLI failures, the default model."""
from __future__ import annotations

import click

from citeline.config import DEFAULTS
from citeline.schemas.errors import CitelineError

# Exit codes (README, "Exit codes"): 0 every document fine, 1 an error (click's own for
# ClickException, Python's for a bug's traceback), 2 bad arguments (click's UsageError),
# 3 the run finished but some documents failed.
EXIT_DOCUMENTS_FAILED = 3


def error_text(exc: BaseException) -> str:
    """The message with its ``Help:`` notes, as a user should read it."""
    return f"{exc}" + "".join(f"\n{n}" for n in getattr(exc, "__notes__", []))


class cli_errors:
    """citeline's own errors become clean CLI failures (exit 1) with their help notes."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and isinstance(exc, CitelineError):
            raise click.ClickException(error_text(exc)) from None
        return False


def model_for(db: str, model: str | None) -> str:
    """The model asked for, else the one the index was built with, else the default."""
    if model:
        return model
    from citeline.index.store import Store, index_exists

    stamp = Store(db).stamp() if index_exists(db) else None  # a new index: create nothing yet
    return stamp.embed_model if stamp else DEFAULTS["model"]
