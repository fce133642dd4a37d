"""docs/cli.md is the commands' own --help (citeline/cli/reference.py): it cannot go stale."""
from pathlib import Path

from citeline.cli.reference import render

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_the_cli_reference_is_what_the_commands_say():
    assert REFERENCE.read_text() == render(), (
        "docs/cli.md is out of date: .venv/bin/python -m citeline.cli.reference > docs/cli.md")


def test_the_reference_has_every_command_and_option():
    from citeline.cli.main import cli

    text = render()
    for name, command in cli.commands.items():
        assert f"## `citeline {name}`" in text
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--"):
                    assert opt in text, f"citeline {name} {opt}"


def test_a_command_invoked_on_its_own_first_leaves_the_reference_unchanged():
    """click makes a command's help option once and keeps it: `ask` invoked on its own (as tests
    do) before the reference was rendered left `citeline ask` without `-h` in it, and this test
    file failed after others in the same process."""
    from click.testing import CliRunner

    from citeline.cli.ask_command import ask
    from citeline.cli.server_command import server

    for command in (ask, server):
        assert CliRunner().invoke(command, ["--help"]).exit_code == 0
    assert REFERENCE.read_text() == render()
    assert "-h, --help" in CliRunner().invoke(ask, ["-h"]).output
