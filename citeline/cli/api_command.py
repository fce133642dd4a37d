"""``citeline api``: serve the index over HTTP with the ask page (citeline/web/app.py).

Register it with ``cli.add_command(api)``.
"""
from __future__ import annotations

import errno
import ipaddress
import json
import socket

import click

from citeline.cli.common import (CitelineCommand, CliError, cli_errors, db_option, model_option,
                                 output_options, verbosity)

HEADER_TIMEOUT_S, MAX_CONNECTIONS = 10.0, 1000  # citeline/web/limits.py says why (imported with uvicorn)

ENV_TOKEN = "CITELINE_API_TOKEN"


@click.command("api", cls=CitelineCommand)
@db_option
@model_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but loopback needs --token.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--token", envvar=ENV_TOKEN, default=None,
              help=f"Bearer token every request but /health must carry [env {ENV_TOKEN}]; "
                   "open the page once as /?token=TOKEN.")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="A name clients reach the service by (its Host header, no port), besides "
                   "127.0.0.1, localhost and [::1]; repeatable. Any other name is refused (400), "
                   "so a web page cannot reach it by DNS rebinding; with --token and none given, any name is served.")
@click.option("--header-timeout", "header_timeout_s", type=click.FloatRange(min=0.1), default=HEADER_TIMEOUT_S,
              show_default=True, help="Seconds a connection has to send a request's head; then it is closed.")
@click.option("--max-connections", type=click.IntRange(min=1), default=MAX_CONNECTIONS, show_default=True,
              help="Connections open at once; more are closed as they arrive.")
@output_options
def api(db, model, host, port, token, allowed_hosts, header_timeout_s, max_connections, as_json):
    """Serve the index: JSON API, the ask page at /, OpenAPI docs at /docs.

    The model is loaded once; the index is re-opened when a sync commits, so
    `citeline index` may run beside it.
    """
    if not is_loopback(host) and not token:
        raise click.UsageError(f"--host {host} is reachable from other machines: set --token or {ENV_TOKEN}")
    import uvicorn

    from citeline.library import Index
    from citeline.web.limits import KEEP_ALIVE_S, bounded_protocol
    from citeline.cli.progress import CHATTY, configure_terminal
    from citeline.web.app import create_app

    listening = _listen(host, port)  # before the index is opened: a busy port fails at once, as JSON too
    with cli_errors():
        app = create_app(Index.create(db, model), token=token, allowed_hosts=allowed_hosts)
    url = f"http://{host}:{listening.getsockname()[1]}/"
    # Announced before the URL is printed, for this machine's `citeline search` and `ask`, which
    # then ask here (runtime/running_service.py); withdrawn when the server stops.
    from citeline.index.store import model_for
    from citeline.runtime import running_service

    local = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    announced = running_service.announce(
        db, f"http://{f'[{local}]' if ':' in local else local}:{listening.getsockname()[1]}/",
        model_for(db, model), token is not None)
    if as_json:  # one line a supervisor can parse before the server takes over stdout's silence
        click.echo(json.dumps({"url": url, "db": db, "openapi": url + "openapi.json"}))
    elif verbosity() >= 0:
        click.echo(f"citeline api: {url} (index {db}; OpenAPI at /docs)", err=True)
    # uvicorn's records go through citeline's terminal handler (JSON lines when piped, never
    # stdout); here they are this server's own, so its warnings show without -v.
    configure_terminal(verbosity(), chatty=tuple(c for c in CHATTY if c not in ("uvicorn", "fastapi")))
    # A silent or trickling client is closed, and connections are capped (citeline/web/limits.py).
    config = uvicorn.Config(app, log_config=None, log_level=("error", "warning", "info", "debug")[verbosity() + 1],
                            http=bounded_protocol(header_timeout_s, max_connections), timeout_keep_alive=KEEP_ALIVE_S,
                            limit_concurrency=max_connections)
    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame):
            # uvicorn re-raises SIGTERM/SIGINT once it has shut down, which ends the process
            # before any `finally` here: the announcement goes when the signal comes.
            running_service.withdraw(announced)
            super().handle_exit(sig, frame)

    try:
        Server(config).run(sockets=[listening])
    finally:
        running_service.withdraw(announced)


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (port 0: one the kernel picks), bound as uvicorn binds
    its own: a client may connect once the URL is printed, its request waits for the app."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    bound = socket.socket(family, socket.SOCK_STREAM)
    bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        bound.bind((host, port))
    except OSError as exc:
        bound.close()
        kind = "address-in-use" if exc.errno == errno.EADDRINUSE else "cannot-listen"
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror}", kind=kind) from None
    bound.listen(2048)  # uvicorn's default backlog
    return bound

def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the service on this machine.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
