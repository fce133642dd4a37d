"""The production shape, end to end: PostgreSQL, a Prefect server on it, a process work pool and
its worker, prefect.yaml deployed, each deployment run through the API with parameters.

The test starts its own PostgreSQL cluster (initdb and pg_ctl of Debian's postgresql package,
in a temporary folder, on a free port), a `prefect server start` backed by it, and
`prefect worker start --pool citeline`; it deploys the repository's prefect.yaml with
`prefect deploy --all`, exactly as docs/operations.md tells an operator to. Flow runs are
processes the worker starts; most embed with the fake embedder, registered in each of them
by a sitecustomize on the worker's PYTHONPATH, and one with the real model.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from testkit import free_port

from fakes import FAKE
from pgcluster import has_postgres, postgres_cluster
from prefect_process import webhook

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples" / "docs"
FIXTURES = ROOT / "tests" / "fixtures"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not has_postgres(), reason="PostgreSQL's initdb is not installed "
                                                                          "(make setup installs postgresql)")]

SLOW = "fake/slow-to-load"
SLOW_LOAD_S = 20
SITECUSTOMIZE = f"""
import sys
sys.path.insert(0, {str(FIXTURES)!r})
from citeline.pipeline import embed
from fakes import FAKE, HashEmbedder
embed.register(FAKE, lambda precision, batch_size: HashEmbedder())


class SlowToLoad(HashEmbedder):
    # takes {SLOW_LOAD_S} s to load (once per run's process), so a run holds its slot a while

    def __init__(self):
        import time
        time.sleep({SLOW_LOAD_S})
        super().__init__(name={SLOW!r})


embed.register({SLOW!r}, lambda precision, batch_size: SlowToLoad())
"""


def wait_for(url: str, proc: subprocess.Popen, log: Path, seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server exited {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"no server at {url} after {seconds} s: {log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def production(tmp_path_factory):
    """PostgreSQL, a Prefect server on it, the citeline work pool, prefect.yaml deployed, a worker.

    Yields the API URL, the environment pointing at it, the synced folder and the index.
    """
    home = tmp_path_factory.mktemp("prefect")
    folder, db = home / "docs", home / "index"
    shutil.copytree(EXAMPLES, folder)
    (folder / "broken.md").write_bytes(b"caf\xe9 latin-1 bytes\x00\x01")  # not UTF-8: fails at extract
    (folder / "only-heading.html").write_text("<h3>Quarterly figures</h3>")  # check-repair was red on it weekly
    (folder / "drafts").mkdir()
    (folder / "drafts" / "plan.md").write_text("# Plan\n\nNot for the index yet.\n")  # excluded by the runs
    (home / "site").mkdir()
    (home / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    with postgres_cluster() as (database, _):
        port = free_port()
        url = f"http://127.0.0.1:{port}/api"
        env = {**os.environ, "PREFECT_HOME": str(home / "prefect-home"), "PREFECT_API_URL": url,
               "PREFECT_API_DATABASE_CONNECTION_URL": database,
               "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
               # deleted runs' logs are removed by the server's orphan vacuum (flows/history.py)
               "PREFECT_SERVER_SERVICES_DB_VACUUM_ENABLED": "events,orphans",
               "PREFECT_SERVER_SERVICES_DB_VACUUM_ORPHAN_CLEANUP_LOOP_SECONDS": "5",
               "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_WORKER_PREFETCH_SECONDS": "1",
               "CITELINE_FOLDER": str(folder), "CITELINE_DB": str(db)}
        server_log = home / "server.log"
        server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                   "--port", str(port)], env=env, stdout=open(server_log, "w"), stderr=subprocess.STDOUT)
        workers = []
        try:
            wait_for(url, server, server_log)
            prefect = [sys.executable, "-m", "prefect", "--no-prompt"]
            for step in (["work-pool", "create", "citeline", "--type", "process"], ["deploy", "--all"]):
                done = subprocess.run([*prefect, *step], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
                assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
            pause_schedules(url)  # each run here is started through the API, none by the clock
            worker_log = home / "worker.log"

            def start_worker() -> subprocess.Popen:
                workers.append(subprocess.Popen(
                    [*prefect, "worker", "start", "--pool", "citeline"], cwd=home, stdout=open(worker_log, "a"),
                    stderr=subprocess.STDOUT,
                    env={**{k: v for k, v in env.items() if k != "PREFECT_LOGGING_EXTRA_LOGGERS"},  # as `prefect
                         # worker start` has it: the runs' log lines reach the UI through prefect.yaml's job variables
                         "PYTHONPATH": os.pathsep.join([str(home / "site"), env.get("PYTHONPATH", "")])}))
                return workers[-1]

            start_worker()
            yield {"url": url, "env": env, "folder": folder, "db": db, "home": home, "logs": (server_log, worker_log),
                   "workers": workers, "start_worker": start_worker}
        finally:
            for proc in (*workers, server):
                if proc is not None and proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        proc.kill()


def pause_schedules(url: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        for deployment in client.read_deployments():
            client.pause_deployment(deployment.id)


@pytest.fixture
def client(production):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: production["url"]}), get_client(sync_client=True) as client:
        yield client


def run(production, name: str, **parameters):
    """Run deployment ``name`` through the API with ``parameters`` and wait for its final state."""
    from prefect.deployments import run_deployment

    flow_run = run_deployment(name, parameters=parameters, timeout=400)
    assert flow_run.state.is_final(), f"{name} still {flow_run.state.name}: " + "".join(
        p.read_text()[-2000:] for p in production["logs"])
    return flow_run


def test_prefect_yaml_runs_on_postgres_through_a_worker(production, client):
    """Every deployment of prefect.yaml, run with parameters: final states, artifacts, events, the index."""
    from prefect.client.schemas.filters import (ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey,
                                                FlowRunFilter, FlowRunFilterId, LogFilter, LogFilterFlowRunId)
    from prefect.events.filters import EventFilter, EventNameFilter

    from citeline.flows.operations import limit_name
    from citeline.tasks.report import artifact_keys
    from citeline.index.check import check_index
    from citeline.index.store import Store

    folder, db = production["folder"], production["db"]
    deployments = {d.name: d for d in client.read_deployments()}
    assert set(deployments) == {"index-folder", "retry-failed", "reindex", "check-repair", "prune-history"}
    schedules = {s.schedule.cron: s.parameters for s in deployments["index-folder"].schedules}
    assert schedules == {"*/15 * * * *": {}, "0 3 * * 0": {"verify": True}}  # weekly: every file hashed
    assert deployments["index-folder"].parameters == {"folder": str(folder), "db": str(db)}  # from the environment
    form = deployments["retry-failed"].parameter_openapi_schema["properties"]
    assert form["path"]["type"] == "string" and "Empty: every failed document" in form["path"]["description"]

    # 1. the scheduled sync, run now: a new index on the fake model; broken.md fails
    first = run(production, "index-folder/index-folder", model=FAKE, exclude=["drafts/"])
    assert first.state.is_failed() and first.state.name == "DocumentsFailed", first.state.message
    this_run = FlowRunFilter(id=FlowRunFilterId(any_=[first.id]))
    tasks = {t.name: t for t in client.read_task_runs(flow_run_filter=this_run)}
    broken = tasks["broken.md"].state.message
    source = str(folder / "broken.md")
    assert broken.startswith("extract: undecodable")
    assert f'deployment retry-failed/retry-failed with parameters {{"db": "{db}", "path": "{source}"}}' in broken
    table = client.read_artifacts(artifact_filter=ArtifactFilter(
        key=ArtifactFilterKey(any_=["failed-documents"]), flow_run_id=ArtifactFilterFlowRunId(any_=[first.id])))
    rows = json.loads(table[0].data)
    # each cell is Markdown the UI renders (tasks/report.py failure_rows): read as it shows
    assert [(shown(r["path"]), json.loads(shown(r["retry-failed/retry-failed parameters"]))) for r in rows] == [
        ("broken.md", {"db": str(db), "path": source})]
    assert "retry-failed/retry-failed" in table[0].description
    # its log: the bad file is one WARNING, no ERROR or traceback (the engine raised the run's
    # Failed state and logged it as a crash); the pull step says what it does, downloads nothing
    logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[first.id])))
    assert [log.message[:200] for log in logs if log.level >= 40] == []
    assert [log.message for log in logs if log.level == 30 and '"document.failed"' in log.message][0].count(
        '"path": "broken.md"') == 1
    assert not [log for log in logs if "Downloading flow code" in log.message or "Traceback" in log.message]
    assert [log for log in logs if "Executing deployment step: set_working_directory" in log.message]
    failing_key, health_key = artifact_keys(str(db))
    assert [shown(r["path"]) for r in latest_rows(client, failing_key)] == ["broken.md"]
    failed_events = EventFilter(event=EventNameFilter(name=["citeline.document.failed"]))
    deadline = time.monotonic() + 120  # the server stores events in batches, a few seconds after they come
    while not (events := client.read_events(failed_events, limit=50).events) and time.monotonic() < deadline:
        time.sleep(2)
    assert [(e.payload["path"], json.loads(e.payload["retry"])) for e in events] == [
        ("broken.md", {"db": str(db), "path": source})]  # what the Automation's notification quotes
    assert client.read_global_concurrency_limit_by_name(limit_name(str(db))).limit == 1

    # 2. the next sync: broken.md is unchanged, so it is not read again and the run is Completed
    indexed = {r["path"]: r["chunk_count"] for r in Store(str(db)).document_rows(["path", "chunk_count"])}
    assert "drafts/plan.md" not in indexed and indexed["only-heading.html"] > 0  # excluded; a heading is text
    second = run(production, "index-folder/index-folder", exclude=["drafts/"])
    assert second.state.is_completed() and "1 still failing" in second.state.message, second.state.message
    names = {t.name for t in client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[second.id])))}
    assert "broken.md" not in names and not [n for n in names if n.endswith(".md")]  # no task run per unchanged file
    assert [shown(r["path"]) for r in latest_rows(client, failing_key)] == ["broken.md"]  # still failing, still listed
    assert "last good sync: " in latest(client, health_key).data and "none noted" not in latest(
        client, health_key).data.split("last good sync: ")[1].splitlines()[0]

    # 3. fixed, then retried with the exact parameters the failure named
    (folder / "broken.md").write_text("café, now UTF-8\n")
    retried = run(production, "retry-failed/retry-failed", path=source)
    assert retried.state.is_completed(), retried.state.message
    store = Store(str(db))
    status = {r["path"]: r["status"] for r in store.document_rows(["path", "status"])}
    assert status["broken.md"] == "indexed" and set(status.values()) == {"indexed"}
    assert latest_rows(client, failing_key) == [] and "No document is failing." in latest(client, health_key).data
    if os.environ.get("CITELINE_UPDATE_SCREENSHOTS"):  # docs/operations.md's pictures of the UI
        ui = production["url"].removesuffix("/api")
        screenshot(f"{ui}/deployments/deployment/{deployments['retry-failed'].id}/run", "Empty: every failed",
                   DOCS / "prefect-retry-failed-run-form.png")
        screenshot(f"{ui}/runs/flow-run/{retried.id}", "Completed", DOCS / "prefect-retry-failed-run.png")

    # 4. re-index to another strategy (beside the live table, then switched), check and repair
    rebuilt = run(production, "reindex/reindex", model=FAKE, strategy="A")
    assert rebuilt.state.is_completed() and "switched to" in rebuilt.state.message, rebuilt.state.message
    assert Store(str(db)).require_stamp().strategy == "A"
    checked = run(production, "repair-index/check-repair")
    assert checked.state.is_completed() and "0 violations remain" in checked.state.message, checked.state.message
    store = Store(str(db))
    assert check_index(store) == []
    assert store.count_chunks() == sum(r["chunk_count"] for r in store.document_rows(["chunk_count"])) > 0
    assert "0 violations found, 0 repairs, 0 violations remain" in latest(client, health_key).data
    assert "strategy A" in latest(client, health_key).data

    # 5. prune the history: every finished run goes, with its task runs, artifacts and (vacuumed) logs
    pruned = run(production, "prune-history/prune-history", days=0)
    assert pruned.state.is_completed() and "deleted 5 flow runs" in pruned.state.message, pruned.state.message
    assert [r.id for r in client.read_flow_runs()] == [pruned.id]  # schedules paused: no run is scheduled
    gone = [first.id, second.id, retried.id, rebuilt.id, checked.id]
    assert client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=gone))) == []
    assert client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=gone))) == []
    deadline = time.monotonic() + 60
    while client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=gone)), limit=1):
        assert time.monotonic() < deadline, "the orphan vacuum left the deleted runs' logs"
        time.sleep(2)


@pytest.fixture
def notifications():
    """A local webhook endpoint, and the notifications it received."""
    with webhook() as found:
        yield found


def test_a_run_queued_behind_a_reindex_a_killed_run_and_the_real_model(production, client, notifications):
    """What an operator meets on the production shape: a sync due while a reindex to another
    model runs waits for it and then runs on the model it left; a run whose worker and process
    are killed is marked Crashed by the shipped automation and the next sync finishes its work;
    a sync with the real model, in a worker's flow-run process."""
    import psutil
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.deployments import run_deployment

    from citeline.flows.operations import limit_name
    from citeline.index.check import check_index
    from citeline.index.store import Store, index_exists
    from citeline.pipeline.embed import resolve_model
    from citeline.schemas.settings import DEFAULT_MODEL

    folder, db, home = production["folder"], production["db"], production["home"]
    limit = limit_name(str(db))
    if not index_exists(str(db)):  # run alone, without the test above
        run(production, "index-folder/index-folder", model=FAKE)

    def holds_the_slot() -> bool:
        return client.read_global_concurrency_limit_by_name(limit).active_slots == 1

    def final(flow_run_id, seconds: float = 400):
        deadline = time.monotonic() + seconds
        while not (state := client.read_flow_run(flow_run_id).state).is_final():
            assert time.monotonic() < deadline, f"still {state.name}: " + production["logs"][1].read_text()[-3000:]
            time.sleep(1)
        return client.read_flow_run(flow_run_id)

    def logs(flow_run_id):
        return client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))

    hook, received = notifications
    made = subprocess.run([sys.executable, str(ROOT / "deploy" / "automation.py"), "--webhook", hook],
                          env=production["env"], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0 and "citeline-zombie-runs" in made.stdout, made.stderr[-2000:]

    # 1. a reindex to another model holds the index; the sync due meanwhile waits, then runs on it
    rebuild = run_deployment("reindex/reindex", parameters={"model": SLOW}, timeout=0)
    deadline = time.monotonic() + 240
    while not holds_the_slot():
        assert time.monotonic() < deadline and not client.read_flow_run(rebuild.id).state.is_final()
        time.sleep(0.5)
    sync = run_deployment("index-folder/index-folder", timeout=0)
    rebuilt, synced = final(rebuild.id), final(sync.id)
    assert rebuilt.state.is_completed() and "switched to" in rebuilt.state.message, rebuilt.state.message
    assert synced.state.is_completed(), synced.state.message  # was Failed IndexMismatch
    queued = [log for log in logs(sync.id) if "run.queued" in log.message]
    assert queued and queued[0].timestamp < rebuilt.end_time  # it was in line while the reindex ran
    assert Store(str(db)).require_stamp().embed_model == SLOW

    # 2. one run with the real model, in a flow-run process the worker starts
    real_folder, real_db = home / "real-docs", home / "real-index"
    real_folder.mkdir()
    for name in sorted(os.listdir(folder))[:2]:
        shutil.copy(folder / name, real_folder / name)
    real = run(production, "index-folder/index-folder", folder=str(real_folder), db=str(real_db))
    assert real.state.is_completed(), real.state.message
    store = Store(str(real_db))
    assert store.require_stamp().embed_model == resolve_model(DEFAULT_MODEL).name and check_index(store) == []
    assert store.count_chunks() == sum(r["chunk_count"] for r in store.document_rows(["chunk_count"])) > 0

    # 3. the worker and the run's process killed mid-sync: Crashed for its silence, slots freed
    (folder / "late-addition.md").write_text("# Added late\n\nA note written while the worker ran.\n")
    doomed = run_deployment("index-folder/index-folder", timeout=0)
    deadline = time.monotonic() + 240
    while not (client.read_flow_run(doomed.id).state.is_running() and holds_the_slot()):
        assert time.monotonic() < deadline, client.read_flow_run(doomed.id).state
        time.sleep(0.5)
    time.sleep(5)  # loading the slow model; its first heartbeat is out
    worker = production["workers"][-1]
    for process in [*psutil.Process(worker.pid).children(recursive=True), psutil.Process(worker.pid)]:
        process.kill()
    worker.wait(timeout=30)
    production["start_worker"]()
    deadline = time.monotonic() + 420  # 120 s without a heartbeat (zombie-runs.yaml), then the trigger's next look
    while not (state := client.read_flow_run(doomed.id).state).is_crashed():
        assert time.monotonic() < deadline and not state.is_final(), state
        time.sleep(5)
    assert "No heartbeat for 120 s" in state.message
    crashed = f"citeline: run {client.read_flow_run(doomed.id).name} ended Crashed"  # failed-runs.yaml
    deadline = time.monotonic() + 120
    while crashed not in {r["subject"] for r in received}:
        assert time.monotonic() < deadline, sorted({r["subject"] for r in received})
        time.sleep(2)
    recovered = run(production, "index-folder/index-folder")  # waits out the index's lease if it must
    assert recovered.state.is_completed(), recovered.state.message
    store = Store(str(db))
    status = {r["path"]: r["status"] for r in store.document_rows(["path", "status"])}
    assert status["late-addition.md"] == "indexed" and check_index(store) == []


def latest(client, key: str):
    """The artifact ``key``'s latest version (what the UI's Artifacts page shows for it)."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    return client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                                 sort=ArtifactSort.CREATED_DESC, limit=1)[0]


def latest_rows(client, key: str) -> list[dict]:
    data = latest(client, key).data
    return json.loads(data) if isinstance(data, str) else data


def screenshot(url: str, text: str, path: Path) -> None:
    """``url`` in headless Chromium (Debian's, no download), once ``text`` shows, saved to ``path``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1100"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(url)
        WebDriverWait(driver, 120).until(lambda d: text in d.find_element(By.TAG_NAME, "body").text)
        time.sleep(5)  # let the page finish drawing
        driver.save_screenshot(str(path))
    finally:
        driver.quit()


def shown(cell: str) -> str:
    """A Markdown cell as the Prefect UI shows it: backslash escapes and entities read."""
    return html.unescape(re.sub(r"\\(.)", r"\1", cell))
