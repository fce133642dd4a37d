"""kill -9 of a CLI command leaves none of its processes behind (the temporary Prefect server)."""
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citeline.runtime import prefect_api_process
from testkit import marked

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
pytestmark = [pytest.mark.model]


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_kill_minus_9_of_index_leaves_no_prefect_server(tmp_path):
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLES, folder)
    mark = secrets.token_hex(8)
    env = {**{k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}, "CITELINE_TEST_MARK": mark}
    victim = subprocess.Popen([sys.executable, "-m", "citeline", "index", str(folder), "--db", str(tmp_path / "db"),
                               "--no-progress"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        server_up = wait_for(lambda: any(prefect_api_process.__name__ in cmd for cmd in marked(mark).values()), 180)
        assert server_up and victim.poll() is None, "the run ended before its server was seen"
        time.sleep(2)  # mid-run: the flow is talking to the server
        os.kill(victim.pid, signal.SIGKILL)  # the command only, as `kill -9 PID` does
        victim.wait()
        wait_for(lambda: not marked(mark), 15)
        assert not marked(mark), f"left running after kill -9 of the command: {marked(mark)}"
    finally:
        for pid in marked(mark):  # never leak a server from this test, pass or fail
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
