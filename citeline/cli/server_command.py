"""``citeline server``: the local Prefect server citeline's commands share (runtime/prefect_server.py)."""
from __future__ import annotations

import json
import time

import click

from citeline.cli.common import CitelineCommand, CliError, output_options


@click.command(cls=CitelineCommand)
@click.argument("action", type=click.Choice(["start", "status", "stop"]))
@click.option("--idle", "idle_s", type=click.IntRange(min=10), default=1800, show_default=True,
              help="start: stop by itself after this many seconds without a command using it.")
@output_options
def server(action, idle_s, as_json):
    """Start, show or stop a local Prefect server every command reuses (history under ~/.citeline/prefect).

    While it runs, a command's flow run talks to it instead of starting Prefect's temporary
    server, and every run stays in its UI. It stops by itself after --idle seconds unused,
    also when the command that started it was killed. CITELINE_PREFECT_SERVER=auto starts it
    for the first command that runs a flow; =off never uses it. CITELINE_HOME moves its folder.
    """
    from citeline.runtime import prefect_server

    if action == "start":
        try:
            found = prefect_server.start(idle_s)
        except RuntimeError as exc:
            raise CliError(str(exc)) from None
        except OSError as exc:  # its folder, lock or log on a full or read-only disk
            from citeline.index.faults import storage_reason

            raise CliError(f"the citeline Prefect server did not start: {storage_reason(exc)}", "storage") from None
    elif action == "stop":
        stopped = prefect_server.stop()
        if as_json:
            click.echo(json.dumps({"stopped": stopped}))
        else:
            click.echo("stopped" if stopped else "not running")
        return
    else:
        found = prefect_server.running()
    idle = prefect_server.idle_for()
    if as_json:
        click.echo(json.dumps({"running": found is not None, **(found or {}), "idle_now_s": idle}))
    elif found is None:
        click.echo("not running (commands start Prefect's temporary server; `citeline server start`)")
    else:
        click.echo(f"running: {found['url']} (UI {found['ui']}), up {time.time() - found['started']:.0f} s, "
                   f"idle {idle or 0.0:.0f} s of {found['idle_s']} s; history in {prefect_server.folder() / 'home'}")
