"""A local Prefect server that citeline's commands share: started once, reused, stopped when idle.

A command run without ``PREFECT_API_URL`` starts Prefect's temporary server for its flow run
and stops it at exit: seconds of every cold ``citeline index`` (imports of ``prefect.server``,
the subprocess, its readiness polls; docs/benchmarks.md section 12), and the run history goes
with it. ``citeline server start`` starts one server instead, under ``$CITELINE_HOME/prefect``
(default ``~/.citeline/prefect``: its sqlite history stays there, so the UI keeps every run),
and every later command finds it through ``server.json`` and runs against it
(``PREFECT_API_URL``), paying an HTTP connection instead of a server start.
``CITELINE_PREFECT_SERVER=auto`` starts it for the first flow run that finds none (a command that
runs no flow never starts it), as Gradle starts its daemon: a one-file edit synced by a fresh
``citeline index`` took 4.5 s against it and 11 s on a temporary server (docs/benchmarks.md
section 16). ``off`` never uses one. Unset, the default, a command uses one only if it runs:
out of the box citeline runs Prefect without a server of its own.

By design the server outlives the command that started it — also ``kill -9`` of that command
(it runs in its own session, without the command's watchdog token, runtime/watchdog.py) — and
stops by itself once no command has used it for ``--idle`` seconds (default 30 minutes; a
running command marks it used every 30 s), or on ``citeline server stop``. What runs is a
small supervisor (``python -m citeline.runtime.prefect_server``) and its ``prefect server start``;
the supervisor stops the server and removes ``server.json`` when either ends.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from citeline.index.faults import failpoint, storage_reason

ENV_HOME = "CITELINE_HOME"
ENV_MODE = "CITELINE_PREFECT_SERVER"  # "auto": start one on first need; "off": never use one
AUTO, OFF = "auto", "off"
IDLE_S = 1800
TOUCH_S = 30
STATE = "server.json"
USED = "last-used"
FAILED_MARK = "citeline server: "  # the supervisor's own reason in server.log, quoted by start()


def mode() -> str:
    """``auto``, ``off`` or empty (use a server only if one runs), as ``CITELINE_PREFECT_SERVER`` says."""
    return os.environ.get(ENV_MODE, "").strip().lower()


def folder() -> Path:
    return Path(os.environ.get(ENV_HOME) or Path.home() / ".citeline") / "prefect"


def state() -> dict | None:
    try:
        return json.loads((folder() / STATE).read_text())
    except (OSError, ValueError):
        return None


def running(timeout_s: float = 1.0) -> dict | None:
    """The state of the citeline server when its supervisor lives and the API answers; else None."""
    found = state()
    if found is None or not alive(found.get("pid", 0)):
        return None
    return found if answers(found["url"], timeout_s) else None


def answers(url: str, timeout_s: float = 1.0) -> bool:
    """Whether the Prefect API at ``url`` answers its ``/health`` (this server or a temporary one)."""
    try:
        with urllib.request.urlopen(url + "/health", timeout=timeout_s) as response:
            return response.status == 200
    except OSError:
        return False


def touch() -> None:
    """Mark the server used now (the supervisor stops it ``idle_s`` after the last mark)."""
    with contextlib.suppress(OSError):
        (folder() / USED).touch()


def connect() -> str | None:
    """For a command about to run: point Prefect at a running citeline server (``PREFECT_API_URL``).

    Called before Prefect is imported, so that every client of the process uses it. Nothing
    happens when ``PREFECT_API_URL`` is set (the operator's server wins), in ``off`` mode, or
    when no ``server.json`` exists (one file look-up); nothing is started here: a command that
    runs no flow (``status``, ``search``, a sync with nothing to write) never needs a server,
    and one that does starts it through :func:`for_run`.

    Returns:
        the API URL now in use, or None.
    """
    if os.environ.get("PREFECT_API_URL") or mode() == OFF:
        return None
    if not (folder() / STATE).exists():
        return None
    found = running()
    return _use(found["url"]) if found is not None else None


def for_run() -> str | None:
    """For a flow run about to start with no Prefect API: the citeline server's URL, started now
    in ``auto`` mode; None (Prefect's temporary server) in any other mode, or when the start
    failed, which is logged as one warning line with its reason (the run goes on without it).
    The caller points its flow run at the URL (``temporary_settings``: Prefect is imported)."""
    if mode() != AUTO:
        return None
    from citeline.runtime.log import Events, get_logger

    log = get_logger()
    was_running = running()
    try:
        found = was_running or start()
    except (RuntimeError, OSError) as exc:
        log.warning(Events.SERVER_NOT_STARTED, reason=str(exc), instead="Prefect's temporary server")
        return None
    if was_running is None:
        # A process that outlives the command is worth a line on the terminal, as Gradle's daemon says so.
        log.warning(Events.SERVER_STARTED, ui=found["ui"], idle_minutes=round(found["idle_s"] / 60),
                    stop="citeline server stop", without=f"{ENV_MODE}={OFF}")
    return _use(found["url"])


_touching = threading.Event()


def _use(url: str) -> str:
    """Point this process and its children at ``url`` and mark the server used while it runs."""
    os.environ["PREFECT_API_URL"] = url
    touch()
    if not _touching.is_set():
        _touching.set()
        threading.Thread(target=_keep_touching, daemon=True, name="citeline-server-touch").start()
    return url


def _keep_touching() -> None:
    while True:
        time.sleep(TOUCH_S)
        touch()


def start(idle_s: int = IDLE_S, wait_s: float = 240) -> dict:
    """Start the citeline server (or find the one running) and wait until it answers.

    Raises:
        RuntimeError: it did not come up within ``wait_s`` (its log is ``server.log``).
    """
    home = folder()
    home.mkdir(parents=True, exist_ok=True)
    with _locked(home / "start.lock"):
        if (found := running()) is not None:
            return found
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "CITELINE_LIFELINE")}
        env.update(PREFECT_HOME=str(home / "home"), PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1",
                   PREFECT_UI_API_URL=f"http://127.0.0.1:{port}/api")
        with (home / "server.log").open("ab") as log:
            logged_from = os.fstat(log.fileno()).st_size  # an earlier start's reason is not this one's
            # -P here and for its server: the command's folder (a user's documents) is not first on the path
            supervisor = subprocess.Popen([sys.executable, "-P", "-m", "citeline.runtime.prefect_server", str(port), str(idle_s)],
                                          env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                          start_new_session=True)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if (found := running()) is not None:
                touch()
                return found
            if supervisor.poll() is not None:
                break
            time.sleep(0.25)
    reason = _failed_reason(home / "server.log", logged_from)
    raise RuntimeError(f"the citeline Prefect server did not start{': ' + reason if reason else ''}; "
                       f"see {home / 'server.log'}")


def _failed_reason(log: Path, start: int) -> str | None:
    """The supervisor's last stated reason for stopping, from its log past ``start``."""
    try:
        with log.open("rb") as handle:
            handle.seek(max(start, handle.seek(0, os.SEEK_END) - 65536))
            tail = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    found = [line[len(FAILED_MARK):] for line in tail if line.startswith(FAILED_MARK)]
    return found[-1] if found else None


def stop(wait_s: float = 30) -> bool:
    """Stop the citeline server; False when none was running."""
    found = state()
    if found is None or not alive(found.get("pid", 0)):
        with contextlib.suppress(OSError):
            (folder() / STATE).unlink()
        return False
    os.kill(found["pid"], signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and alive(found["pid"]):
        time.sleep(0.1)
    return True


def idle_for() -> float | None:
    """Seconds since a command last used the server."""
    try:
        return time.time() - (folder() / USED).stat().st_mtime
    except OSError:
        return None


def supervise(port: int, idle_s: int) -> None:
    """The supervisor: run ``prefect server start``, record it, stop it when idle or told to."""
    home = folder()
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stopping.append(True))
    server = subprocess.Popen([sys.executable, "-P", "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                               "--port", str(port)], stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/api"
    ready = False
    # Everything after the child exists sits inside the try: a failed write of server.json (a full
    # disk) once ended the supervisor here and left `prefect server start` running for ever.
    try:
        try:
            failpoint("server.state")
            (home / STATE).write_text(json.dumps({"pid": os.getpid(), "server_pid": server.pid, "url": url,
                                                  "ui": f"http://127.0.0.1:{port}", "idle_s": idle_s,
                                                  "started": time.time()}))
        except OSError as exc:
            # One line in server.log, which start() quotes in its "did not start"
            print(f"{FAILED_MARK}cannot write {home / STATE}: {storage_reason(exc)}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        while not stopping and server.poll() is None:
            if not ready:  # idle time counts from the moment it answers (a start takes a minute at load 20)
                ready = answers(url)
                if ready:
                    touch()
            elif (used := idle_for()) is not None and used > idle_s:
                break
            time.sleep(1)
    finally:
        with contextlib.suppress(OSError):
            if json.loads((home / STATE).read_text()).get("pid") == os.getpid():
                (home / STATE).unlink()
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, killed and not yet reaped, does not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _locked(path: Path):
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


if __name__ == "__main__":
    supervise(int(sys.argv[1]), int(sys.argv[2]))
