"""The ask page in a real Chromium (Debian's chromium + chromedriver, driven by Selenium).

`citeline api` runs as its own process on a free loopback port over a small mixed index
built with the real model (Markdown, a PDF, an xlsx, a speech clip). Each test types a
question and checks what a person would see; screenshots go to the test's temp folder
(``CITELINE_SCREENSHOTS=DIR`` also copies them there, as docs/ask-page.png was made).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

import make
from citeline.schemas.retrieval import Refusal
from testkit import free_port, invoke

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
pytestmark = [
    pytest.mark.model, pytest.mark.slow, pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                       reason="needs Debian's chromium and chromium-driver (make setup installs them)"),
]
NOTES = ("# Harbour\n\nThe harbour committee meets on Fridays at the old pier. "
         "A prankster typed <script>document.title='pwned'</script> and "
         "<img src=x onerror=\"document.title='pwned'\"> into the minutes.\n")
QUESTIONS = {  # kind of citation -> a question whose best source is of that kind
    "char": "When does the harbour committee meet?",
    "page": "Within how many days must warranty claims be filed?",
    "sheet": "When did the auditors sign off?",
    "time": "When was the quarterly report delivered to the board?",
}
WAIT_S = 60
# No name resolves but loopback's: the pages must work on a machine with no network.
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
OPEN_CUT = 0.8


@pytest.fixture(scope="module")
def service(tmp_path_factory, prefect_harness):
    folder = tmp_path_factory.mktemp("mixed")
    (folder / "notes.md").write_text(NOTES)
    (folder / "report.pdf").write_bytes(make.two_column_pdf())
    (folder / "sales.xlsx").write_bytes(make.workbook())
    (folder / "meeting.ogg").write_bytes(make.speech())
    db = tmp_path_factory.mktemp("index") / "db"
    result = invoke("index", folder, "--db", db, "--no-progress")
    assert result.exit_code == 0, result.output
    port = free_port()
    log = open(tmp_path_factory.mktemp("api") / "api.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "citeline", "api", "--db", str(db), "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, proc)
        yield Service(base, db)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@dataclass(frozen=True)
class Service:
    base: str
    db: Path

    def gate(self) -> Refusal:
        """The refusal the page's reranked ask gives on this index, from its own calibration
        (``citeline status --json``): its answerability score where one was fitted, else its cosine cut."""
        gate = json.loads(invoke("status", "--db", self.db, "--json").output)["gate"]
        scored = gate["calibration"]["answerability"]
        return Refusal("q", scored["threshold"], kind="answerability") if scored else Refusal("q", gate["cut"])


def wait_ready(base: str, proc: subprocess.Popen, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, "citeline api exited"
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as response:
                if b'"ready":true' in response.read():
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError("citeline api did not become ready")


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000",
                "--autoplay-policy=no-user-gesture-required", "--mute-audio", OFFLINE):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "SEVERE"})  # CSP violations land here
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(WAIT_S)
    yield driver
    driver.quit()


def shot(driver, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))
    if target := os.environ.get("CITELINE_SCREENSHOTS"):
        shutil.copy(path, Path(target) / path.name)


def ask(driver, base: str, question: str, cut: float | None = None):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(base + "/" + (f"?cut={cut}" if cut is not None else ""))
    box = driver.find_element(By.ID, "question")
    box.send_keys(question)
    driver.find_element(By.CSS_SELECTOR, "#ask button").click()
    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#sources li") or d.find_element(By.ID, "refusal").is_displayed())


def text_of(driver, element) -> str:
    return driver.execute_script("return arguments[0].textContent", element)


def open_citation(driver, kind: str):
    """Click the first source of ``kind``; return its fragment and quote, the viewer in front."""
    from selenium.webdriver.common.by import By

    item = driver.find_element(By.CSS_SELECTOR, f"#sources li[data-kind='{kind}']")
    fragment = text_of(driver, item.find_element(By.CSS_SELECTOR, ".fragment"))
    quote = text_of(driver, item.find_element(By.CSS_SELECTOR, ".quote"))
    before = set(driver.window_handles)
    item.find_element(By.CSS_SELECTOR, "a.citation").click()
    (viewer,) = set(driver.window_handles) - before
    driver.switch_to.window(viewer)
    return fragment, quote


def close_viewer(driver) -> None:
    driver.close()
    driver.switch_to.window(driver.window_handles[0])


def test_each_kind_of_citation_opens_the_source_at_the_cited_place(service, browser, tmp_path):
    """What a person sees after clicking each kind of citation.

    The page is opened with ``?cut=0.8``: the click-through is under test here, not the
    gate, and on this four-document index the calibrated cut refuses the PDF questions
    (their multi-paragraph chunks sit at 0.6-0.75; issue 16's answerability work).
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    ask(browser, service.base, QUESTIONS["char"], cut=OPEN_CUT)
    shot(browser, tmp_path, "ask-page")
    fragment, quote = open_citation(browser, "char")
    assert fragment.startswith("#char=")
    mark = browser.find_element(By.ID, "cited")
    assert text_of(browser, mark) == quote and "harbour committee" in quote
    assert "<script>" in quote and browser.title != "pwned"  # shown as text, never run
    assert browser.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight", mark)
    shot(browser, tmp_path, "text-viewer")
    close_viewer(browser)

    ask(browser, service.base, QUESTIONS["page"], cut=OPEN_CUT)
    fragment, quote = open_citation(browser, "page")
    assert fragment.startswith("#page=")
    src = browser.find_element(By.ID, "pdf").get_attribute("src")
    assert src.endswith(fragment) and "/sources/" in src
    close_viewer(browser)

    ask(browser, service.base, QUESTIONS["sheet"], cut=OPEN_CUT)
    fragment, quote = open_citation(browser, "sheet")
    # One row per stored segment of the range, as the indexer rendered it (the view parses nothing).
    cells = [text_of(browser, td) for td in browser.find_elements(By.CSS_SELECTOR, "table.range td")]
    assert any("Audit | The auditors signed off on 2024-04-02." in cell for cell in cells), cells
    assert all(cell in quote for cell in cells if cell)  # exactly the cited cells, nothing around them
    shot(browser, tmp_path, "sheet-viewer")
    close_viewer(browser)

    ask(browser, service.base, QUESTIONS["time"], cut=OPEN_CUT)
    fragment, quote = open_citation(browser, "time")
    start, end = map(float, fragment.removeprefix("#t=").split(","))
    player = browser.find_element(By.ID, "player")
    WebDriverWait(browser, WAIT_S).until(lambda d: d.execute_script("return arguments[0].readyState", player) >= 1)
    assert abs(browser.execute_script("return arguments[0].currentTime", player) - start) <= 0.5
    assert 0 <= start < end <= make.SPEECH_SECONDS + 0.5
    close_viewer(browser)


def test_an_absurd_question_is_refused_with_the_closest_passages_to_check(service, browser, tmp_path):
    from selenium.webdriver.common.by import By

    ask(browser, service.base, "What is the airspeed velocity of an unladen swallow on Jupiter?")
    refusal = browser.find_element(By.ID, "refusal")
    assert refusal.is_displayed() and not browser.find_elements(By.CSS_SELECTOR, "#sources li")
    assert browser.find_element(By.ID, "refusal-message").text == (
        "No passage is close enough to answer from, so no answer is given.")
    expected = service.gate()  # the index's calibrated gate, not a number written here
    assert expected.message().split(" for ")[0] in browser.find_element(By.ID, "status").text
    closest = browser.find_element(By.ID, "closest")
    assert closest.is_displayed() and "not an answer" in closest.find_element(By.TAG_NAME, "h2").text
    assert "check them yourself" in browser.find_element(By.ID, "closest-note").text
    items = browser.find_elements(By.CSS_SELECTOR, "#closest-list li")
    assert 1 <= len(items) <= 4
    for item in items:  # each opens at its place and shows its quote, as a source does
        assert item.find_element(By.CSS_SELECTOR, "a.citation").get_attribute("href").endswith("#cited")
        assert item.find_element(By.CSS_SELECTOR, "blockquote.quote").text
    shot(browser, tmp_path, "refusal")


def test_the_documents_page_lists_every_document(service, browser):
    from selenium.webdriver.common.by import By

    browser.get(service.base + "/library")
    rows = browser.find_elements(By.CSS_SELECTOR, "#documents tbody tr")
    assert sorted(r.find_elements(By.TAG_NAME, "td")[1].text for r in rows) == [
        "meeting.ogg", "notes.md", "report.pdf", "sales.xlsx"]


@pytest.fixture(scope="module")
def bare_service(tmp_path_factory):
    """The service over an index not yet built (the fake embedder): /docs needs no model."""
    import uvicorn

    from citeline.api import Index
    from citeline.service import create_app
    from fakes import FAKE

    app = create_app(Index.create(str(tmp_path_factory.mktemp("bare") / "db"), model=FAKE), poll_s=0)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_S
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{server.config.port}"
    server.should_exit = True
    thread.join(timeout=30)


def test_the_api_docs_render_with_no_network(bare_service, browser, tmp_path):
    """Swagger UI draws the operations from files the service ships (no CDN), under its CSP."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get_log("browser")  # drop what earlier pages logged
    browser.get(bare_service + "/docs")
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#operations-query-ask_ask_post"))
    operation = browser.find_element(By.CSS_SELECTOR, "#operations-query-ask_ask_post")
    assert "POST" in operation.text and "/ask" in operation.text
    assert browser.find_elements(By.CSS_SELECTOR, "#operations-query-search_search_get")
    operation.find_element(By.CSS_SELECTOR, ".opblock-summary").click()  # opens: its icons and schema draw
    WebDriverWait(browser, WAIT_S).until(lambda d: operation.find_elements(By.CSS_SELECTOR, ".opblock-body"))
    assert not [entry["message"] for entry in browser.get_log("browser")]
    loaded = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert loaded and all(url.startswith(bare_service + "/") for url in loaded), loaded
    shot(browser, tmp_path, "api-docs")
