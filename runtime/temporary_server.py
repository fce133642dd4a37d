"""Prefect's temporary server, started as soon as a command knows it will run a flow.

A flow run that finds no Prefect API (no ``PREFECT_API_URL``, no citeline server) runs against a
temporary server: uvicorn serving Prefect's API in a subprocess, stopped when the process exits.
Prefect starts it itself (``SubprocessASGIServer``) when the run begins: after the command's
imports, and after the command imported Prefect's server module only to reach that class (3.5 s of
one core), so every writing sync waited first for its own imports, then for the server's (5 s).
Here the same server (the same app factory, flags and environment) starts as the first thing
``citeline index`` does (``Index.sync`` too, before its plan), and the command's imports and plan
run beside it on the other core; a sync that finds nothing to write stops it at once
(``discard_unused``). The flow run finds ``PREFECT_API_URL`` set and Prefect starts nothing.
docs/benchmarks.md section 23 has the times.

The port is bound here and handed to uvicorn as an open socket (runtime/prefect_api_process.py),
so no other process can take it between a check and the bind, and a health check cannot reach
another server.

Under a writing command's signal handlers (runtime/signals.py) the server runs in a session of its
own: Ctrl-C and ``timeout`` signal the command's process group, and a server in it died before the
stopping run could write its last state and log lines. It stops at exit (``atexit``, after
Prefect's log and event senders drained, as Prefect's own did) and, after ``kill -9`` of the
command, by the watchdog (runtime/watchdog.py): it inherits the command's token.
"""
from __future__ import annotations

import atexit
import importlib
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from citeline.index.faults import storage_reason
from citeline.runtime import prefect_server
from citeline.schemas.errors import PrefectServerNotStarted

STARTUP_TIMEOUT_VARIABLE = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
STOP_TIMEOUT_S = 5.0
FIRST_LOOK_S = 0.05
_LOG = logging.getLogger("prefect")  # the server is Prefect's; its line is Prefect's chatter (-v)


class TemporaryServer:
    """One uvicorn process serving Prefect's API on a port of its own, until ``stop``."""

    def __init__(self, own_session: bool):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        self.address = f"http://127.0.0.1:{listener.getsockname()[1]}"
        self.api_url = f"{self.address}/api"
        self._started = time.monotonic()
        try:
            self._process = subprocess.Popen(
                # -P: the command's folder (a user's documents) is not put first on the path
                [sys.executable, "-P", "-m", "citeline.runtime.prefect_api_process", str(listener.fileno())],
                pass_fds=(listener.fileno(),), env=_server_environment(), stdin=subprocess.DEVNULL,
                start_new_session=own_session)
        finally:
            listener.close()  # the child holds its copy; ours would only keep the port after it exits
        self.used = False  # by a flow run: ``wait_ready`` answered

    def wait_ready(self, timeout_s: float | None = None, meanwhile: Callable[[], object] | None = None) -> str:
        """The API URL once ``/health`` answers (the server counts as used from then on);
        ``PrefectServerNotStarted`` if the process ended or ``timeout_s`` (default: Prefect's
        startup timeout setting) passed first. If the server is not answering yet, the run's
        imports, then ``meanwhile``, run first: this core is idle until it answers."""
        if self.used:
            return self.api_url
        waited_from = time.monotonic()
        limit = timeout_s if timeout_s is not None else startup_timeout_s()
        deadline = time.monotonic() + limit
        # A short first look: the port is bound and listening before uvicorn serves it, so a
        # connection is accepted at once and a read waits for the server to start serving.
        if not prefect_server.answers(self.api_url, timeout_s=FIRST_LOOK_S):
            _import_for_the_run()
            if meanwhile is not None:
                meanwhile()
        while True:
            if self._process.poll() is not None:
                raise PrefectServerNotStarted(f"the temporary Prefect server exited with code "
                                              f"{self._process.returncode} (its errors are above)")
            if prefect_server.answers(self.api_url):
                self.used = True
                # Said now, not at the start: before Prefect's import its logger drops INFO lines.
                _LOG.info("Started temporary server on %s: it answered %.1f s after its start, %.1f s of them "
                          "waited for", self.address, time.monotonic() - self._started, time.monotonic() - waited_from)
                return self.api_url
            if time.monotonic() > deadline:
                self.stop()
                raise PrefectServerNotStarted(f"the temporary Prefect server did not answer within {limit:.0f} s "
                                              f"({STARTUP_TIMEOUT_VARIABLE})")
            time.sleep(0.05)

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


# What a flow run imports on its way (sampled: fastapi for its parameters' encoder, 0.33 s; the
# task engine; the run-graph helpers), imported here while the command waits for its server anyway.
RUN_IMPORTS = ("fastapi.encoders", "prefect.task_engine", "prefect.utilities.visualization")


def _import_for_the_run() -> None:
    for name in RUN_IMPORTS:
        importlib.import_module(name)


_lock = threading.Lock()
_server: list[TemporaryServer] = []


def start(own_session: bool = False) -> TemporaryServer:
    """This process's temporary server, started now unless it already was; stopped at exit."""
    with _lock:
        if not _server:
            _server.append(TemporaryServer(own_session))
        return _server[0]


def start_early(own_session: bool | None = None) -> None:
    """Start the server now for a flow run this command is about to begin, when that run would
    need it: the environment names no Prefect API (a running citeline server was put there when the
    command started), no citeline server is to be started (``CITELINE_PREFECT_SERVER=auto``), and
    Prefect's home can hold its database (else the run says why: ``flows/runners.py``). A profile
    that names an API is read only with Prefect's settings, later: the run then stops the unused
    server (``discard_unused``). ``own_session``: whether the server leaves the command's process
    group (default: when signal handlers are armed, runtime/signals.py); a command that arms them
    only later says so."""
    from citeline.runtime import signals

    if os.environ.get("PREFECT_API_URL") or prefect_server.mode() == prefect_server.AUTO or _server:
        return
    if prefect_home_problem(Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect")) is None:
        start(own_session=signals.armed() if own_session is None else own_session)


def discard_unused() -> None:
    """Stop a server started early that no flow run used: the sync had nothing to write, or a
    profile named a Prefect API after all."""
    with _lock:
        if _server and not _server[0].used:
            _server.pop().stop()


@atexit.register
def _stop_at_exit() -> None:
    with _lock:
        while _server:
            _server.pop().stop()


def startup_timeout_s() -> float:
    """Prefect's setting for how long its temporary server may take to answer."""
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

    return float(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())


# Each start of the server registered Prefect's block types, or (memoized) imported every installed
# Prefect collection to hash them first: prefect-dask, so dask and distributed, 0.2-1.0 s of the
# 4.4-5.5 s start (docs/benchmarks.md section 23). A temporary server serves no UI and citeline
# uses no block; ``prefect server start`` on the same home registers them for its UI. An operator's
# own setting of either variable wins.
NO_BLOCK_REGISTRATION = {"PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
                         "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false"}


def _server_environment() -> dict[str, str]:
    """Prefect's own choice for its temporary server (no UI, ephemeral services, this process's
    environment, and the Prefect settings set in this process: when Prefect is imported; before
    that, none can be, and the child reads the same profile and files itself), without block
    registration."""
    env = {**NO_BLOCK_REGISTRATION, **os.environ,
           "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    if "prefect.settings" in sys.modules:
        from prefect.settings import get_current_settings

        env.update(get_current_settings().to_environment_variables(exclude_unset=True))
    env.pop("PREFECT_API_URL", None)
    return env


# A fresh temporary server's sqlite database and its write-ahead log took 5.3 MiB after three
# runs (measured); below this much free space its start fails or the next runs' logs do.
PREFECT_HOME_MIN_FREE = 16 << 20
PROBE_BYTES = 64 << 10
PROBE_NAME = ".citeline-probe"


def prefect_home_problem(home: Path, min_free: int = PREFECT_HOME_MIN_FREE) -> str | None:
    """Why Prefect's temporary server could not keep its database in ``home``, or None.

    On a full disk that server's start fails inside sqlite (``database or disk is full``), and
    Prefect retries its connection for two minutes and prints thousands of lines ending in
    ``Timed out while attempting to connect to ephemeral Prefect API server``, the cause never
    said. A small write (flushed to disk) and the free space say it first, in one line.

    >>> import tempfile; prefect_home_problem(Path(tempfile.mkdtemp()), min_free=0) is None
    True
    """
    probe = home / PROBE_NAME
    try:
        home.mkdir(parents=True, exist_ok=True)
        try:
            with probe.open("wb") as handle:
                handle.write(b"\0" * PROBE_BYTES)
                handle.flush()
                os.fsync(handle.fileno())
        finally:
            probe.unlink(missing_ok=True)
        stats = os.statvfs(home)
    except OSError as exc:
        reason = storage_reason(exc)
    else:
        free = stats.f_bavail * stats.f_frsize
        if free >= min_free:
            return None
        reason = f"only {free / (1 << 20):.1f} MiB free, {min_free >> 20} MiB needed"
    return (f"Prefect's home {home} cannot hold the temporary Prefect server's database: {reason}. Free space "
            "there, set PREFECT_HOME to a folder on another disk, or point PREFECT_API_URL at a running server")
