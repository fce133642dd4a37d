"""The operator's path: a real `prefect server`, a CLI run against it, history read back after exit.

Ephemeral mode loses task-run records when the process exits, so this is the only way
an operator sees failed documents in the UI; this test walks it end to end.
"""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
pytestmark = [pytest.mark.model, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = free_port()
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home"),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    prefect = Path(sys.executable).with_name("prefect")
    proc = subprocess.Popen([str(prefect), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("prefect server did not come up in 90 s")
    yield url, env
    proc.terminate()
    proc.wait(timeout=30)


def test_failed_document_visible_in_the_server_after_the_run(server, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey, LogFilter, LogFilterFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    url, env = server
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLES, folder)
    (folder / "broken.md").write_bytes(b"caf\xe9 latin-1 bytes")
    done = subprocess.run([sys.executable, "-m", "citeline", "index", str(folder), "--db", str(tmp_path / "db"),
                           "--no-progress"], env={**env, "PREFECT_API_URL": url},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 3, done.stderr[-2000:]  # 3: the run finished, broken.md failed

    with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        runs = client.read_flow_runs()
        assert [r.name for r in runs] == [f"index {folder}"]
        run = runs[0]
        assert run.state.name == "PartialSuccess"
        tasks = {t.name: t for t in client.read_task_runs()}
        assert tasks["broken.md"].state.is_failed()
        assert tasks["broken.md"].state.message.startswith("extract: undecodable: not valid UTF-8")
        assert tasks["07-lstm.md"].state.is_completed() and tasks["write 07-lstm.md"].state.is_completed()
        table = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["failed-documents"])))
        assert "broken.md" in str(table[0].data)
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
        assert any('"event": "document.failed"' in log.message and "broken.md" in log.message for log in logs)


def test_served_deployment_syncs_the_folder_when_triggered(server, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    url, env = server
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLES, folder)
    db = tmp_path / "db"
    serving = subprocess.Popen([sys.executable, "-m", "citeline", "serve", str(folder), "--db", str(db),
                                "--cron", "0 3 * * *", "--name", "nightly"], env={**env, "PREFECT_API_URL": url},
                               stdout=subprocess.DEVNULL, stderr=open(tmp_path / "serve.log", "w"))
    try:
        with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    deployment = client.read_deployment_by_name("index-folder/nightly")
                    break
                except Exception:
                    time.sleep(1)
            else:
                pytest.fail("the deployment was not registered in 120 s")
            assert [s.schedule.cron for s in deployment.schedules] == ["0 3 * * *"]
            run = run_deployment("index-folder/nightly", timeout=300)
            assert run.state.is_completed(), (tmp_path / "serve.log").read_text()[-3000:]
    finally:
        serving.terminate()
        serving.wait(timeout=30)
    from citeline.index.store import Store

    store = Store(str(db))
    assert store.count_chunks() == sum(r["chunk_count"] for r in store.document_rows(["chunk_count"])) > 0
