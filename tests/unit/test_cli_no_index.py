"""Read-only commands on a path with no index: exit 1, say so, and create nothing there."""
import pytest
from click.testing import CliRunner

from citeline.cli.main import cli


@pytest.mark.parametrize("args", [
    ["status"], ["status", "--json"], ["status", "--failed"],
    ["search", "dropout"],
    ["ask", "what is dropout?"],
    ["check"], ["check", "--json"], ["check", "--repair"],
    ["gc"], ["gc", "--yes"],
    ["retry"],
    ["reindex", "--model", "all-MiniLM-L6-v2"],
    ["rm", "somewhere"],
])
def test_a_command_on_a_missing_index_exits_1_and_creates_nothing(args, tmp_path):
    missing = tmp_path / "typo" / "db"
    result = CliRunner().invoke(cli, [*args, "--db", str(missing)])
    assert result.exit_code == 1, result.output
    assert f"no index at {missing}" in result.output
    assert not (tmp_path / "typo").exists()


def test_an_empty_folder_is_no_index_and_stays_empty(tmp_path):
    result = CliRunner().invoke(cli, ["status", "--db", str(tmp_path)])
    assert result.exit_code == 1 and f"no index at {tmp_path}" in result.output
    assert list(tmp_path.iterdir()) == []
