"""deploy/systemd/: every Prefect setting its environment files and docs/operations.md name is
one the installed Prefect reads (a misspelt PREFECT_* variable is ignored without a word), and
each unit reads the environment file shipped beside it."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "deploy" / "systemd"


def prefect_settings() -> set[str]:
    from prefect.settings import Settings
    from prefect.settings.legacy import _get_valid_setting_names

    return set(_get_valid_setting_names(Settings))


def test_every_prefect_variable_named_is_a_setting():
    known = prefect_settings()
    named = {line.split("=", 1)[0] for env in UNITS.glob("*.env") for line in env.read_text().splitlines()
             if line.startswith("PREFECT_")}
    named |= set(re.findall(r"\b(PREFECT_[A-Z0-9_]+)", (ROOT / "docs" / "operations.md").read_text()))
    assert {"PREFECT_SERVER_API_AUTH_STRING", "PREFECT_API_AUTH_STRING", "PREFECT_UI_API_URL"} <= named
    assert named - known == set()


def test_each_unit_reads_its_environment_file_and_the_server_and_client_share_the_auth_string():
    for unit in UNITS.glob("*.service"):
        env = re.search(r"^EnvironmentFile=/etc/citeline/(\S+)$", unit.read_text(), re.M)
        assert env and (UNITS / env.group(1)).is_file(), unit.name
    server = dict(line.split("=", 1) for line in (UNITS / "prefect-server.env").read_text().splitlines()
                  if line and not line.startswith("#"))
    worker = dict(line.split("=", 1) for line in (UNITS / "citeline-worker.env").read_text().splitlines()
                  if line and not line.startswith("#"))
    assert server["PREFECT_SERVER_API_AUTH_STRING"] == worker["PREFECT_API_AUTH_STRING"]
    assert worker["PREFECT_API_URL"] == server["PREFECT_UI_API_URL"]
