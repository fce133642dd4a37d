"""The process's stop request: set when the command is told to stop (SIGTERM, SIGINT), read by
whatever runs long (the flow's document loop, the encoder between groups, the extractor workers).

A flag rather than an exception raised wherever the main thread happens to be: a run stopped
between its chunk commit and its record commit would leave a state `citeline check` rejects.
The signal handlers that set it live in ``citeline.runtime.signals``.
"""
from __future__ import annotations

import signal
import threading

from citeline.schemas.errors import CitelineError

_requested = threading.Event()
_signal: list[int] = []  # the first signal received; a list so the handler only appends


class Stopped(CitelineError):
    """The run was told to stop: not a document's failure, nothing to record against it."""


def request(signum: int) -> None:
    """Ask everything running in this process to stop (safe from a signal handler)."""
    if not _signal:
        _signal.append(signum)
    _requested.set()


def requested() -> int | None:
    """The signal that asked for the stop, or None while none did."""
    return _signal[0] if _requested.is_set() and _signal else None


def check() -> None:
    """Raises:
        Stopped: a stop was requested.
    """
    if _requested.is_set():
        raise Stopped(f"stopped by signal {signal_name(requested())}")


def signal_name(signum: int | None) -> str:
    """``SIGTERM`` for 15; a number the platform does not name stays a number.

    >>> signal_name(15), signal_name(2), signal_name(None)
    ('SIGTERM', 'SIGINT', 'unknown')
    """
    if signum is None:
        return "unknown"
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)
