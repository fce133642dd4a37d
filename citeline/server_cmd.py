"""``citeline server``: the local Prefect server citeline's commands share (citeline/prefect_server.py)."""
from __future__ import annotations

import json
import time

import click

from citeline.common import CliError


@click.group()
def server() -> None:
    """A local Prefect server every command reuses (history under ~/.citeline/prefect).

    With it running, a command's flow run talks to it instead of starting Prefect's temporary
    server, and the runs stay in its UI. It stops by itself after --idle seconds unused.
    CITELINE_PREFECT_SERVER=auto starts it on the first command that needs one.
    """


@server.command()
@click.option("--idle", "idle_s", type=click.IntRange(min=10), default=1800, show_default=True,
              help="Stop after this many seconds without a command using it.")
def start(idle_s: int) -> None:
    """Start the server (or report the one running), and print its UI address."""
    from citeline import prefect_server

    try:
        found = prefect_server.start(idle_s)
    except RuntimeError as exc:
        raise CliError(str(exc)) from None
    click.echo(f"Prefect server {found['url']} (UI {found['ui']}); stops after {found['idle_s']} s idle")


@server.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def status(as_json: bool) -> None:
    """Whether the server runs: its API and UI addresses, uptime and idle time. Exit 1 when not."""
    from citeline import prefect_server

    found = prefect_server.running()
    if as_json:
        click.echo(json.dumps({"running": found is not None, **(found or {}),
                               "idle_s_now": prefect_server.idle_for()}))
    elif found is not None:
        idle = prefect_server.idle_for() or 0.0
        click.echo(f"running: {found['url']} (UI {found['ui']}), up {time.time() - found['started']:.0f} s, "
                   f"idle {idle:.0f} s of {found['idle_s']} s; history in {prefect_server.folder() / 'home'}")
    else:
        click.echo("not running (commands start Prefect's temporary server; `citeline server start`)")
    if found is None:
        raise SystemExit(1)


@server.command()
def stop() -> None:
    """Stop the server (its history stays under ~/.citeline/prefect)."""
    from citeline import prefect_server

    click.echo("stopped" if prefect_server.stop() else "not running")
