"""deploy/automations/ on a real `prefect server start` with a real process worker: one command
creates them all; a run whose worker is killed is marked Crashed for its silence and notified;
the pool without a worker is notified; a scheduled run no worker picks up is notified as late."""
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from prefect_process import prefect_server, webhook

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

SLOW_FLOW = '''
import time
from prefect import flow

@flow(name="slow-sync")
def slow():
    time.sleep(900)
'''


def wait_for(what, seconds: float, every: float = 1.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := what():
            return found
        time.sleep(every)
    return what()


def kill_with_descendants(pid: int) -> None:
    import psutil

    parent = psutil.Process(pid)
    for process in [*parent.children(recursive=True), parent]:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass


def run_state(client, run_id):
    return client.read_flow_run(run_id).state


def test_a_killed_run_is_crashed_and_every_operator_alert_fires(tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Scheduled

    fast_server = {"PREFECT_SERVER_SERVICES_FOREMAN_LOOP_SECONDS": "2",
                   "PREFECT_SERVER_SERVICES_LATE_RUNS_LOOP_SECONDS": "2",
                   "PREFECT_SERVER_SERVICES_LATE_RUNS_AFTER_SECONDS": "5"}
    with prefect_server(tmp_path / "prefect-home", **fast_server) as (url, env), webhook() as (hook, received), \
            temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        env = {**env, "PREFECT_API_URL": url}
        created = subprocess.run([sys.executable, str(ROOT / "deploy" / "automation.py"), "--webhook", hook],
                                 env=env, capture_output=True, text=True, timeout=300)
        assert created.returncode == 0, created.stderr[-2000:]
        names = {line.split()[0] for line in created.stdout.splitlines()}
        assert names == {"citeline-failed-documents", "citeline-failed-runs", "citeline-late-runs",
                         "citeline-worker-offline", "citeline-zombie-runs"}
        again = subprocess.run([sys.executable, str(ROOT / "deploy" / "automation.py"), "--webhook", hook],
                               env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0 and len(client.read_automations()) == 5  # replaced, not doubled

        client.create_work_pool(WorkPoolCreate(name="citeline", type="process"))
        code = tmp_path / "code"
        code.mkdir()
        (code / "slow.py").write_text(SLOW_FLOW)
        deployed = subprocess.run(
            [sys.executable, "-c", "from prefect import flow; import sys; print(flow.from_source(source=sys.argv[1], "
             "entrypoint='slow.py:slow').deploy(name='slow', work_pool_name='citeline', tags=['citeline'], "
             "job_variables={'env': {'PREFECT_FLOWS_HEARTBEAT_FREQUENCY': '30'}}, print_next_steps=False))", str(code)],
            env=env, capture_output=True, text=True, timeout=300)
        assert deployed.returncode == 0, deployed.stderr[-2000:]
        deployment_id = deployed.stdout.split()[-1]

        worker = subprocess.Popen([sys.executable, "-m", "prefect", "worker", "start", "--pool", "citeline"],
                                  env={**env, "PREFECT_WORKER_HEARTBEAT_SECONDS": "5", "PREFECT_WORKER_QUERY_SECONDS": "2"},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            run = client.create_flow_run_from_deployment(deployment_id)
            running = wait_for(lambda: run_state(client, run.id).is_running(), 240)
            assert running, run_state(client, run.id)
            time.sleep(5)  # its first heartbeat goes out as it starts
        finally:
            kill_with_descendants(worker.pid)  # the run's process has a session of its own
            worker.wait(timeout=30)

        # 120 s without a heartbeat (zombie-runs.yaml), then the next look of the triggers
        crashed = wait_for(lambda: run_state(client, run.id).is_crashed(), 300, every=5)
        assert crashed, run_state(client, run.id)
        assert "No heartbeat for 120 s" in run_state(client, run.id).message

        late = client.create_flow_run_from_deployment(
            deployment_id, state=Scheduled(scheduled_time=datetime.now(timezone.utc) - timedelta(minutes=1)))
        subjects = {
            "crashed": "citeline: run {} ended Crashed".format(client.read_flow_run(run.id).name),
            "late": "citeline: run {} is late".format(client.read_flow_run(late.id).name),
            "offline": "citeline: the work pool citeline has no worker online",
        }
        wait_for(lambda: set(subjects.values()) <= {r["subject"] for r in received}, 180, every=2)
        got = {r["subject"]: r["body"] for r in received}
        assert set(subjects.values()) <= set(got), sorted(got)
        assert "No heartbeat for 120 s" in got[subjects["crashed"]]
        assert "prefect worker start --pool citeline" in got[subjects["offline"]]
