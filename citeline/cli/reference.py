"""docs/cli.md, the command-line reference, generated from the commands' own ``--help``.

    .venv/bin/python -m citeline.cli.reference > docs/cli.md

``tests/unit/test_cli_reference.py`` fails when the file and the commands disagree, so the
reference cannot go stale: change an option's help, regenerate, commit both.
"""
from __future__ import annotations

import click

from citeline.cli.main import cli

WIDTH = 100  # help wrapped at a fixed width: the same file on every terminal

PREAMBLE = """# Command-line reference

Generated from each command's `--help` by `python -m citeline.cli.reference > docs/cli.md`
(a test checks that it is current). The README has the tour; docs/operations.md the
production set-up.
"""


def render() -> str:
    """The reference: the group's help, then each command's (a group's subcommands after it)."""
    parts = [PREAMBLE]
    # make_context, not Context: it applies the group's context_settings (-h as well as --help)
    root = cli.make_context("citeline", [], resilient_parsing=True, terminal_width=WIDTH, max_content_width=WIDTH)
    parts.append(_section("citeline", cli.get_help(root)))
    for ctx in _commands(cli, root):
        parts.append(_section(ctx.command_path, ctx.get_help()))
    return "\n".join(parts)


def _commands(group: click.Group, parent: click.Context):
    for name in group.list_commands(parent):
        command = group.get_command(parent, name)
        if command is None or command.hidden:
            continue
        ctx = command.make_context(name, [], parent=parent, resilient_parsing=True, terminal_width=WIDTH,
                                   max_content_width=WIDTH)
        yield ctx
        if isinstance(command, click.Group):
            yield from _commands(command, ctx)


def _section(path: str, help_text: str) -> str:
    return f"## `{path}`\n\n```text\n{help_text.rstrip()}\n```\n"


if __name__ == "__main__":
    print(render(), end="")
