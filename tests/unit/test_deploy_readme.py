"""The commands deploy/README.md shows parse as the CLI reads them (its serve line once passed
``--db`` to a script that took it for the index's path)."""
import re
import shlex
from pathlib import Path

import click

from citeline.cli.main import cli

README = Path(__file__).resolve().parents[2] / "deploy" / "README.md"


def shown_commands(data: Path) -> list[list[str]]:
    """The README's citeline commands, its /data/ folders made under ``data`` (the CLI checks a folder exists)."""
    (data / "docs").mkdir(exist_ok=True)
    blocks = re.findall(r"```(?:sh|bash)?\n(.*?)```", README.read_text(), re.S)
    lines = [line.split(" #")[0].strip() for block in blocks for line in block.splitlines()]
    return [[arg.replace("/data/", f"{data}/") for arg in shlex.split(line)[1:]]
            for line in lines if re.match(r"(\.venv/bin/)?citeline ", line)]


def test_every_citeline_command_in_deploy_readme_parses_as_shown(tmp_path):
    commands = shown_commands(tmp_path)
    assert commands, "deploy/README.md shows no citeline command"
    for args in commands:
        command = cli.get_command(click.Context(cli), args[0])
        assert command is not None, args
        with command.make_context(args[0], args[1:]) as ctx:  # raises a UsageError on what it can't read
            if "db" in ctx.params and "--db" in args:
                assert ctx.params["db"] == args[args.index("--db") + 1]


def test_the_serve_line_keeps_folder_index_and_schedule_apart(tmp_path):
    serve = next(args for args in shown_commands(tmp_path) if args[0] == "serve")
    ctx = cli.get_command(click.Context(cli), "serve").make_context("serve", serve[1:])
    assert (ctx.params["path"], ctx.params["db"], ctx.params["cron"]) == (
        f"{tmp_path}/docs", f"{tmp_path}/index", "*/15 * * * *")
