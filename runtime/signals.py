"""SIGTERM and SIGINT stop a writing command within seconds, leaving an index `check` accepts.

`timeout`, systemd and `docker stop` send SIGTERM, then SIGKILL after a grace period; Ctrl-C
sends SIGINT. Python's defaults (and Prefect's own SIGTERM handler inside a flow run) raise
wherever the main thread is, which may be between a batch's chunk commit and its record
commit; meanwhile the task runner's threads went on waiting for their documents (a hung
extractor: up to ``--timeout``, 300 s), so the process left minutes later, without a summary.

Here the first signal only asks (``citeline.schemas.interrupt``): extractor workers are
killed at once, the encoder stops at its next group, the flow's document loop leaves without
writing anything more and the flow returns its summary, state ``Stopped``; the command prints
it and exits 128 + the signal's number. A second signal ends the process at once (what was
committed stands, as after ``kill -9``).

Outside a flow's document phase (starting the temporary Prefect server, planning) the first
signal raises ``Stopped`` in the main thread: nothing is being written there.

`timeout` and Ctrl-C signal the whole process group, and the temporary Prefect server a
serverless run starts was in it: it died at once, and the stopping run's last state and log
lines went to a dead server (70 s of connection retries, then ``--- Error logging to API ---
All connection attempts failed``). The server is started in a session of its own instead
(runtime/temporary_server.py, when ``armed``): it stops at exit, by the watchdog if the command
is killed.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator

from citeline.pipeline.isolate import stop_workers
from citeline.schemas import interrupt

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_state = {"armed": False, "cooperative": 0}


def _on_signal(signum: int, frame) -> None:
    if interrupt.requested() is not None:  # asked twice: stop now, as the default would
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    interrupt.request(signum)
    stop_workers()
    if not _state["cooperative"]:
        interrupt.check()


def armed() -> bool:
    """Whether a writing command's handlers are in place (``stop_on_signals``)."""
    return _state["armed"]


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """For the span of a writing command (index, retry, reindex): SIGTERM and SIGINT stop it.

    Only the main thread can set handlers; elsewhere (a test calling the CLI from a thread)
    the defaults stay.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _on_signal) for s in SIGNALS}
    _state["armed"] = True
    try:
        yield
    finally:
        _state["armed"] = False
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def cooperative() -> Iterator[None]:
    """A flow's phase that polls ``interrupt.requested()`` itself: a signal only asks.

    Prefect installs its own SIGTERM handler for a flow run (it raises ``TerminationSignal``
    wherever the main thread is); under ``stop_on_signals`` ours takes its place for the
    phase, and Prefect's is put back after it.
    """
    replaced = None
    if _state["armed"] and threading.current_thread() is threading.main_thread():
        replaced = signal.signal(signal.SIGTERM, _on_signal)
    _state["cooperative"] += 1
    try:
        yield
    finally:
        _state["cooperative"] -= 1
        if replaced is not None:
            signal.signal(signal.SIGTERM, replaced)
