"""The temporary Prefect server's process: uvicorn serving Prefect's API on a socket it inherits.

    python -P -m citeline.runtime.prefect_api_process FD

``uvicorn --fd`` wraps the descriptor as a Unix socket whatever it is (``socket.fromfd(fd,
AF_UNIX, …)``), so asyncio never set ``TCP_NODELAY`` on the connections it accepted: every
response then waited for the client's delayed acknowledgement, 40–44 ms a request on a kept-alive
connection against 1–5 ms, for every request of a flow run (docs/benchmarks.md section 25).
Wrapped with its own family (``socket.socket(fileno=…)`` reads it off the descriptor), the
listener is TCP and each connection gets ``TCP_NODELAY`` as on uvicorn's own ``--port``.
The app is Prefect's, its SQLite-busy 503s answered again in the server (runtime/busy_retry.py),
with the routers a command's flow run calls matched first (``flow_run_routers_first``).
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

    app = create_app()
    flow_run_routers_first(app)
    return RetryWhenBusy(app)


# What a command's flow run calls (recorded on a one-file sync): the client's version check first,
# then the flow, its run and states, logs, artifacts and the events of its task runs.
FLOW_RUN_PREFIXES = ("/admin", "/csrf-token", "/flows", "/flow_runs", "/flow_run_states", "/task_runs",
                     "/task_run_states", "/logs", "/artifacts", "/events")


def flow_run_routers_first(app) -> bool:
    """Move the API's routers that a flow run calls ahead of the others; True when moved.

    FastAPI (0.137+) builds an included router's routes (their dependencies, parameter models)
    on the first request that reaches it, and a request reaches every router listed before its
    own: the client's first call, ``/admin/version``, is in Prefect's second-last router, so it
    built some 30 routers' routes, 0.3-0.45 s of a fresh server's single core while the command
    waited (docs/benchmarks.md section 26). Their prefixes are distinct, so no request matches
    another route than before; the routers a flow run never calls are built when a request first
    passes them, as before. Left as it is when the app is not shaped as expected.
    """
    api = next((route.app for route in app.router.routes if getattr(route, "path", None) == "/api"), None)
    routes = getattr(getattr(api, "router", None), "routes", None)
    if routes is None:
        return False

    def prefix(route) -> str | None:
        return getattr(getattr(route, "original_router", None), "prefix", None)

    used = [route for route in routes if prefix(route) in FLOW_RUN_PREFIXES]
    if not used:
        return False
    at = next(i for i, route in enumerate(routes) if prefix(route) is not None)
    moved = {id(route) for route in used}  # by identity: an included router compares by its fields
    routes[:] = routes[:at] + used + [route for route in routes[at:] if id(route) not in moved]
    return True


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
