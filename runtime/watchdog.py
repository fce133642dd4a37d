"""Processes a CLI command starts die with it, even after ``kill -9``.

Without a Prefect server configured (``PREFECT_API_URL``), a flow run starts a temporary
one: uvicorn in a subprocess, ~220 MB, stopped by an ``atexit`` hook. ``kill -9`` skips
``atexit``, so the server lived on with PPID 1, one more per killed run. Prefect starts it
itself (``SubprocessASGIServer._run_uvicorn_command``) with no hook for a ``preexec_fn``;
``PR_SET_PDEATHSIG`` would also fire when the *thread* that started it ends, and Prefect
may start it from a worker thread. So a watchdog does it from outside:

- the command marks its environment with a token (``CITELINE_LIFELINE``) that every process
  it starts inherits: the Prefect server, isolated extractor workers, Dask workers, OCR;
- a small separate process holds the read end of a pipe whose write end only the command
  holds; the kernel closes it when the command dies, however it dies;
- on end of file, the watchdog sends SIGTERM to every process of this user whose initial
  environment carries the token, and SIGKILL to those still alive 5 s later.

The token is unique per command, so nothing else is touched, and a reused pid cannot match.
"""
from __future__ import annotations

import os
import secrets
import subprocess
import sys

ENV_LIFELINE = "CITELINE_LIFELINE"

_WATCHDOG = r"""
import os, signal, sys, time
fd, needle = int(sys.argv[1]), b"\0" + sys.argv[2].encode() + b"\0"
while os.read(fd, 4096):
    pass

def marked():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in b"\0" + f.read():
                    yield int(pid)
        except OSError:
            pass

def send(sig, pids):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass

send(signal.SIGTERM, list(marked()))
deadline = time.monotonic() + 5
while time.monotonic() < deadline and any(True for _ in marked()):
    time.sleep(0.1)
send(signal.SIGKILL, list(marked()))
"""


def start() -> None:
    """Start the watchdog for this process (entry points only; once per process).

    Returns at once. The pipe's write end stays open, unowned, for the life of the process.
    """
    if sys.platform != "linux" or os.environ.get(ENV_LIFELINE, "").startswith(f"{os.getpid()}-"):
        return
    token = f"{os.getpid()}-{secrets.token_hex(8)}"
    read_end, write_end = os.pipe()  # both close on exec: children never hold the write end
    env = {k: v for k, v in os.environ.items() if k != ENV_LIFELINE}  # the watchdog spares itself
    subprocess.Popen([sys.executable, "-S", "-c", _WATCHDOG, str(read_end), f"{ENV_LIFELINE}={token}"],
                     pass_fds=(read_end,), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    os.close(read_end)
    os.environ[ENV_LIFELINE] = token
    _KEEP.append(write_end)


_KEEP: list[int] = []  # the write end, referenced so nothing closes it before the process ends
