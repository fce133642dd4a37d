"""The operator's path: a real `prefect server`, a CLI run against it, history read back after exit.

Ephemeral mode loses task-run records when the process exits, so this is the only way
an operator sees failed documents in the UI; this test walks it end to end.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prefect_process import prefect_server
from prefect_process import webhook as local_webhook

from citeline.schemas.text import visible

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "docs"
SCREENSHOT = ROOT / "docs" / "prefect-runs-failed-documents.png"
HOSTILE = "evil\u202edm.txt\x1b[2J.md"  # a bidi override and a clear-screen sequence in a file name
pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One `prefect server start` for the module (it takes tens of seconds under load): each test
    reads back only the runs it made."""
    with prefect_server(tmp_path_factory.mktemp("prefect-home")) as running:
        yield running


@pytest.fixture
def webhook():
    with local_webhook() as hook:
        yield hook


def test_failed_document_visible_in_the_server_after_the_run(server, webhook, tmp_path):
    """Failed in the runs list (red, named DocumentsFailed, tagged), one event per failed
    document, and the deploy/ Automation notifies on it."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey,
                                                FlowRunFilter, FlowRunFilterId, LogFilter, LogFilterFlowRunId)
    from prefect.settings import PREFECT_API_URL, temporary_settings

    url, env = server
    hook, received = webhook
    env = {**env, "PREFECT_API_URL": url}
    applied = subprocess.run([sys.executable, str(ROOT / "deploy" / "automation.py"), "--webhook", hook], env=env,
                             capture_output=True, text=True, timeout=300)
    assert applied.returncode == 0, applied.stderr[-2000:]
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLES, folder)
    (folder / "broken.md").write_bytes(b"caf\xe9 latin-1 bytes\x00\x01")
    (folder / HOSTILE).write_bytes(b"caf\xe9 latin-1 bytes\x00\x01")
    done = subprocess.run([sys.executable, "-m", "citeline", "index", str(folder), "--db", str(tmp_path / "db"),
                           "--no-progress"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 3, done.stderr[-2000:]  # 3: the run finished, broken.md failed

    with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        runs = [r for r in client.read_flow_runs() if r.deployment_id is None]  # not the served deployment's
        assert [r.name for r in runs] == [f"index {folder}"]
        run = runs[0]
        assert run.state.is_failed() and run.state.name == "DocumentsFailed"  # drawn red, not green
        assert "failed-documents" in run.tags
        this_run = FlowRunFilter(id=FlowRunFilterId(any_=[run.id]))
        tasks = {t.name: t for t in client.read_task_runs(flow_run_filter=this_run)}
        assert tasks["broken.md"].state.is_failed()
        assert tasks["broken.md"].state.message.startswith("extract: undecodable: ")
        # documents are written in batches: the write task run is named for its batch
        writes = [t for name, t in tasks.items() if name.startswith("write ")]
        assert tasks["07-lstm.md"].state.is_completed() and writes and all(t.state.is_completed() for t in writes)
        table = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["failed-documents"]),
                                                                     flow_run_id=ArtifactFilterFlowRunId(any_=[run.id])))
        assert "broken.md" in str(table[0].data)
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
        assert any('"event": "document.failed"' in log.message and "broken.md" in log.message for log in logs)
    deadline = time.monotonic() + 120
    while len(received) < 2 and time.monotonic() < deadline:
        time.sleep(1)
    by_subject = {r["subject"]: r for r in received}
    assert "undecodable" in by_subject["citeline: broken.md failed to index"]["body"], received
    # a file's name is shown with its controls escaped: no bidi override or escape sequence reaches a reader
    assert f"citeline: {visible(HOSTILE)} failed to index" in by_subject, received
    assert not [r for r in received if any(ch in r["subject"] + r["body"] for ch in ("\u202e", "\x1b"))], received
    badge = screenshot_runs_list(url.removesuffix("/api"), tmp_path / "runs.png")
    assert "DocumentsFailed" in badge
    pages = screenshot_health_and_automations(url, str(tmp_path / "db"), tmp_path)
    if os.environ.get("CITELINE_UPDATE_SCREENSHOTS"):
        shutil.copy(tmp_path / "runs.png", SCREENSHOT)
        for name in pages:  # docs/operations.md's pictures of the index's health and the automations
            shutil.copy(tmp_path / name, ROOT / "docs" / name)


def screenshot_health_and_automations(url: str, db: str, folder: Path) -> list[str]:
    """The index's failing-documents and index-health artifacts (their latest versions, what the
    run published) and the automations list, opened in headless Chromium: each shows what an
    operator looks for, and is saved as a PNG in ``folder``; their file names."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from citeline.tasks.report import artifact_keys

    with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        latest = [max(client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))),
                      key=lambda found: found.created) for key in artifact_keys(db)]
    ui = url.removesuffix("/api")
    pages = {"prefect-failing-documents.png": (f"{ui}/artifacts/artifact/{latest[0].id}", ("broken.md", "undecodable")),
             "prefect-index-health.png": (f"{ui}/artifacts/artifact/{latest[1].id}", ("indexed", "failed")),
             "prefect-automations.png": (f"{ui}/automations", ("citeline-failed-documents", "citeline-failed-runs"))}
    driver = headless_chromium()
    try:
        for name, (page, shows) in pages.items():
            driver.get(page)
            page_text_when(driver, lambda text: all(word in text for word in shows))
            time.sleep(1)  # let the page finish drawing
            driver.save_screenshot(str(folder / name))
    finally:
        driver.quit()
    return list(pages)


def screenshot_runs_list(ui: str, path: Path) -> str:
    """The runs page in headless Chromium (Debian's, no download): the run's state badge text."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = headless_chromium()
    try:
        driver.get(f"{ui}/runs")
        badges = WebDriverWait(driver, 120).until(
            lambda d: [b for b in d.find_elements(By.CSS_SELECTOR, "[class*=state-badge]") if b.text.strip()])
        time.sleep(2)  # let the list finish drawing
        driver.save_screenshot(str(path))
        failed = [b for b in badges if "failed" in (b.get_attribute("class") or "")]
        assert failed, [(b.text, b.get_attribute("class")) for b in badges]
        return failed[0].text
    finally:
        driver.quit()


def test_served_deployment_syncs_the_folder_when_triggered(server, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    url, env = server
    folder = tmp_path / "docs"
    shutil.copytree(EXAMPLES, folder)
    db = tmp_path / "db"
    stdout = open(tmp_path / "serve.json", "w")
    serving = subprocess.Popen([sys.executable, "-m", "citeline", "serve", str(folder), "--db", str(db),
                                "--cron", "0 3 * * *", "--name", "nightly", "--json"],
                               env={**env, "PREFECT_API_URL": url}, stdout=stdout,
                               stderr=open(tmp_path / "serve.log", "w"))
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
            schedules = sorted((s.schedule.cron, s.parameters.get("verify")) for s in deployment.schedules)
            assert schedules == [("0 3 * * *", None), ("30 3 * * 0", True)]  # and weekly, hashing every file
            run = run_deployment("index-folder/nightly", timeout=300)
            assert run.state.is_completed(), (tmp_path / "serve.log").read_text()[-3000:]
    finally:
        serving.terminate()
        serving.wait(timeout=30)
        stdout.close()
    served = json.loads((tmp_path / "serve.json").read_text())  # one object: not followed by Prefect's banner
    assert served["deployment"] == "index-folder/nightly" and served["cron"] == "0 3 * * *"
    assert served["verify_cron"] == "30 3 * * 0"
    from citeline.index.store import Store

    store = Store(str(db))
    assert store.count_chunks() == sum(r["chunk_count"] for r in store.document_rows(["chunk_count"])) > 0


def test_a_hostile_failed_documents_table_fetches_nothing_in_the_ui(server, beacon, tmp_path):
    """The failed-documents table artifact opened in Chromium: a name and a reason that carry Markdown
    images and links make no request leave and render no live link."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from selenium.webdriver.common.by import By

    from citeline.schemas.status import Failure, RunSummary
    from citeline.tasks.report import publish_report

    host, hits = beacon
    failure = Failure(path=f"![beacon]({host}/from-name.png) [Click here to retry]({host}/link).md", stage="extract",
                      reason=f"undecodable: the file starts with ![]({host}/from-bytes.png) <img src={host}/html.png>",
                      source=f"/docs/[Click here]({host}/source).md")
    url, _ = server
    with temporary_settings({PREFECT_API_URL: url}):
        publish_report.fn(RunSummary(failed=1, failures=(failure,)), str(tmp_path / "docs"), str(tmp_path / "db"))
        with get_client(sync_client=True) as client:
            # the newest: the module's server holds other tests' failed-documents tables too
            artifact = max(client.read_artifacts(artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["failed-documents"]))), key=lambda found: found.created)
    driver = headless_chromium()
    try:
        driver.get(f"{url.removesuffix('/api')}/artifacts/artifact/{artifact.id}")
        page_text_when(driver, lambda text: "Click here to retry" in text)
        time.sleep(2)  # images the page draws would have been fetched by now
        links = [a.get_attribute("href") for a in driver.find_elements(By.TAG_NAME, "a")]
        images = [i.get_attribute("src") for i in driver.find_elements(By.TAG_NAME, "img")]
    finally:
        driver.quit()
    assert hits == [], hits
    assert not [x for x in links + images if x and (x.startswith(host) or x.startswith("javascript"))], (links, images)


@pytest.fixture
def beacon():
    """A loopback HTTP server that records every request it gets: ``(base URL, paths requested)``.
    A page that renders a document's text must make none reach it."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    hits: list[str] = []

    class Beacon(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Beacon)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", hits
    server.shutdown()


def page_text_when(driver, ready, timeout_s: float = 180) -> str:
    """The page's text once ``ready(text)``; on timeout, a failure that shows what the page drew."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, timeout_s).until(lambda d: ready(d.find_element(By.TAG_NAME, "body").text))
    except TimeoutException:
        pytest.fail(f"the page never showed what was expected; it showed: {driver.current_url}\n"
                    f"{driver.find_element(By.TAG_NAME, 'body').text[:2000]!r}")
    return driver.find_element(By.TAG_NAME, "body").text


def headless_chromium():
    """Debian's Chromium through its chromedriver, headless (no download)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service


    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1600,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def test_the_index_health_artifacts_fetch_nothing_in_the_ui(server, beacon):
    """The index's failing-documents table and index-health page opened in Chromium: a failing
    file's name and reason, and a synced folder's, that carry Markdown images, links and HTML
    make no request leave and render no live link."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from selenium.webdriver.common.by import By

    from citeline.schemas.health import CheckNote, FailingDocument, IndexHealth, SyncNote
    from citeline.tasks.report import artifact_keys, failing_rows, health_markdown

    host, hits = beacon
    root = f"/docs/![root]({host}/root.png)"
    health = IndexHealth(
        db="/data/index", by_state={"failed": 1, "indexed": 3}, rows=12, model="fake", dim=8, strategy="E",
        last_sync=SyncNote("2026-12-05T18:00:00+00:00", root, "DocumentsFailed", f"[sync]({host}/line)"),
        last_check=CheckNote("2026-12-01T03:30:00+00:00", 1, 0, 1, (f"<img src={host}/rule.png>",)),
        failing=(FailingDocument(f"![beacon]({host}/from-name.png) [Click here to retry]({host}/link).md",
                                 f"{root}/x.md", "extract",
                                 f"undecodable: the file starts with ![]({host}/from-bytes.png) <img src={host}/h.png>",
                                 1, "2026-12-05T18:00:00+00:00"),))
    failing_key, health_key = artifact_keys(health.db)
    url, _ = server
    with temporary_settings({PREFECT_API_URL: url}):
        create_table_artifact(key=failing_key, table=failing_rows(health))
        create_markdown_artifact(key=health_key, markdown=health_markdown(health, f"the sync of {root}"))
        with get_client(sync_client=True) as client:
            artifacts = [client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))[-1]
                         for key in (failing_key, health_key)]
    driver = headless_chromium()
    links, images = [], []
    try:
        for artifact, shows in zip(artifacts, ("Click here to retry", "last check")):
            driver.get(f"{url.removesuffix('/api')}/artifacts/artifact/{artifact.id}")
            page_text_when(driver, lambda text: shows in text)
            time.sleep(2)  # images the page draws would have been fetched by now
            links += [a.get_attribute("href") for a in driver.find_elements(By.TAG_NAME, "a")]
            images += [i.get_attribute("src") for i in driver.find_elements(By.TAG_NAME, "img")]
    finally:
        driver.quit()
    assert hits == [], hits
    assert not [x for x in links + images if x and (x.startswith(host) or x.startswith("javascript"))], (links, images)
