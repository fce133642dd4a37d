"""Every citeline command the README and the reference docs show parses as the CLI reads it:
a renamed or removed option fails here, not in a reader's shell. Synopsis
lines (``[--db DIR]``, ``A|B``) and object-store URLs are left out; a path the command wants to
exist may be absent."""
import re
import shlex

import click
import pytest

from citeline.cli.main import cli
from testkit import REFERENCE_DOCS as REFERENCE, ROOT

_COMMAND = re.compile(r"^(?:\$ )?(?:\.venv/bin/)?citeline (.*)$")


def shown(doc: str) -> list[tuple[int, list[str]]]:
    """(line number, arguments) of each citeline command in the doc's shell blocks."""
    found, block, shell = [], False, False
    for number, line in enumerate((ROOT / doc).read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            block = not block
            shell = block and line.strip().strip("`").strip() in ("", "sh", "bash", "console", "shell")
            continue
        match = _COMMAND.match(line.split(" #")[0].strip()) if shell else None
        # Synopses and object-store URLs (parsing one asks the store) are left out.
        if match and not any(mark in match.group(1) for mark in ("[", "|", "…", "://")):
            try:
                found.append((number, shlex.split(match.group(1))))
            except ValueError:  # a line continued on the next: its start is checked with the rest unknown
                continue
    return found


@pytest.mark.parametrize("doc", REFERENCE)
def test_every_command_a_doc_shows_parses(doc):
    problems = []
    for number, args in shown(doc):
        command = cli.get_command(click.Context(cli), args[0]) if args else None
        if command is None:
            problems.append(f"{doc}:{number}: no command {args[:1]}")
            continue
        try:
            with command.make_context(args[0], args[1:]):
                pass
        except click.BadParameter as exc:
            if "does not exist" not in str(exc):
                problems.append(f"{doc}:{number}: {' '.join(args)}: {exc.format_message()}")
        except click.UsageError as exc:
            problems.append(f"{doc}:{number}: {' '.join(args)}: {exc.format_message()}")
    assert not problems, "\n".join(problems)
