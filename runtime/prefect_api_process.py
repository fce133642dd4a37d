"""The temporary Prefect server's process: uvicorn serving Prefect's API on a socket it inherits.

    python -P -m citeline.runtime.prefect_api_process FD

``uvicorn --fd`` wraps the descriptor as a Unix socket whatever it is (``socket.fromfd(fd,
AF_UNIX, …)``), so asyncio never set ``TCP_NODELAY`` on the connections it accepted: every
response then waited for the client's delayed acknowledgement, 40–44 ms a request on a kept-alive
connection against 1–5 ms, for every request of a flow run (docs/benchmarks.md section 25).
Wrapped with its own family (``socket.socket(fileno=…)`` reads it off the descriptor), the
listener is TCP and each connection gets ``TCP_NODELAY`` as on uvicorn's own ``--port``.
The app is Prefect's, its SQLite-busy 503s answered again in the server (runtime/busy_retry.py).
"""
from __future__ import annotations

import socket
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn

APP_FACTORY = "citeline.runtime.prefect_api_process:prefect_api"


def prefect_api():
    """Prefect's API app as Prefect's own temporary server builds it, answering its SQLite-busy
    503s again itself (runtime/busy_retry.py)."""
    from prefect.server.api.server import create_app

    from citeline.runtime.busy_retry import RetryWhenBusy

    return RetryWhenBusy(create_app())


def server(fd: int, app: str = APP_FACTORY) -> tuple[uvicorn.Server, socket.socket]:
    """uvicorn's server for ``app`` (an import string of an app factory) and the listener it is to
    serve, the inherited descriptor wrapped as what it is."""
    import uvicorn

    listener = socket.socket(fileno=fd)
    config = uvicorn.Config(app, factory=True, log_level="error", lifespan="on")
    # Imported and built now, not inside Server.run's signal capture: a server stopped while it
    # imports (a sync with nothing to write) then ends at once, not seconds later.
    config.load()
    return uvicorn.Server(config), listener


def main(fd: int, app: str = APP_FACTORY) -> None:
    serving, listening = server(fd, app)
    serving.run(sockets=[listening])


if __name__ == "__main__":
    main(int(sys.argv[1]))
