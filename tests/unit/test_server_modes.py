"""Which flow runs start the shared citeline server (runtime/prefect_server.py ``for_run``): only
in ``CITELINE_PREFECT_SERVER=auto`` mode. Unset (the default: Prefect without a server of
citeline's own), ``off`` or anything else leaves a run to Prefect's temporary server and starts
nothing. The start itself is tested on real processes in tests/e2e/test_citeline_server.py."""
import pytest

from citeline.runtime import prefect_server


@pytest.mark.parametrize("mode", [None, "off", "OFF", "yes"])
def test_only_auto_mode_starts_a_server_for_a_run(mode, monkeypatch, tmp_path):
    monkeypatch.setenv("CITELINE_HOME", str(tmp_path))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    if mode is None:
        monkeypatch.delenv(prefect_server.ENV_MODE, raising=False)
    else:
        monkeypatch.setenv(prefect_server.ENV_MODE, mode)
    assert prefect_server.for_run() is None
    assert prefect_server.connect() is None
    assert list(tmp_path.iterdir()) == []  # no server folder, no server.json, no log

