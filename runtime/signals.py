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
(``detach_temporary_server``): Prefect stops it at exit, the watchdog if the command is killed.
That is arranged when a flow run is about to start it (``flows/runners.py::command_run``), not
when the command arms its handlers: a sync with nothing to write starts no server, and importing
Prefect's server module for it cost a no-op ``citeline index`` 3 s (1.1 → 4.2 s).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
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


class _OwnSession:
    """The subprocess module as Prefect's server module sees it: ``Popen`` starts the child
    in a new session, so a signal to the command's process group does not reach it."""

    def __getattr__(self, name: str):
        return getattr(subprocess, name)

    @staticmethod
    def Popen(*args, **kwargs):  # noqa: N802 (the name Prefect calls)
        return subprocess.Popen(*args, **{**kwargs, "start_new_session": True})


def detach_temporary_server() -> None:
    """Under ``stop_on_signals`` (a writing command), start the temporary Prefect server (a run
    without PREFECT_API_URL) outside this command's process group. Prefect offers no hook for how
    it starts it, so the module's ``subprocess`` is replaced by ``_OwnSession``; it starts nothing
    else. Called by a flow run about to start that server; elsewhere (a library's host) Prefect
    starts it as it would."""
    if not _state["armed"] or os.environ.get("PREFECT_API_URL"):
        return
    from prefect.server.api import server

    if not isinstance(server.subprocess, _OwnSession):
        server.subprocess = _OwnSession()


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
