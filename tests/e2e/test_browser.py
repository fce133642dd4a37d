"""The pages people use, in a real Chromium (Debian's chromium + chromedriver, driven by Selenium),
at desktop (1280 px) and phone (400 px) width.

`citeline api` runs as its own process on a free loopback port over a small mixed index built
with the real model (text, Markdown, a PDF, an xlsx, a deck, a speech clip, a PDF that fails),
its chat endpoint a fake OpenAI-compatible server in this process (the one thing faked: a remote
LLM). Each test does what a person would, with the keyboard where it says so, and checks what
they would see; every page is checked by axe-core (npm, ``make setup`` installs it into
./node_modules) for serious or critical violations, and for sideways scrolling at 400 px.
Screenshots go to the test's temp folder (``CITELINE_SCREENSHOTS=DIR`` also copies them there,
as docs/screens/*.png were made).
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import make
from testkit import free_port, invoke

from citeline.schemas.retrieval import ASK_K

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
pytestmark = [
    pytest.mark.model, pytest.mark.slow, pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                       reason="needs Debian's chromium and chromium-driver (make setup installs them)"),
]
MINUTES = ("The harbour committee meets on Fridays at the old pier. "
           "A prankster typed <script>document.title='pwned'</script> and "
           "<img src=x onerror=\"document.title='pwned'\"> into the minutes.\n")
HOSTILE_NAME = "<img src=x onerror=alert(1)>.md"
QUESTIONS = {  # kind of citation -> a question whose best source is of that kind
    "char": "When does the harbour committee meet?",
    "page": "Within how many days must warranty claims be filed?",
    "sheet": "When did the auditors sign off?",
    "slide": "Which region led the revenue growth?",
    "time": "When was the quarterly report delivered to the board?",
}
ABSURD = "What is the airspeed velocity of an unladen swallow on Jupiter?"  # "Jupiter": in no document
FAR = "What is the airspeed velocity of an unladen swallow?"  # no name: refused by the cosine cut
WAIT_S = 60
# No name resolves but loopback's: the pages must work on a machine with no network.
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
OPEN_CUT = 0.8
WIDTHS = {"desktop": 1280, "phone": 400}
ROUND_TRIP_P50_MS = 300  # Warm, measured by the page's own Performance API entries


class FakeChat(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint streaming a canned answer, the rest a while after its first
    words, so the page is seen showing an answer as it arrives."""

    FIRST, REST = "The committee meets on Fridays [1]", [" at the old pier [1].", " Its boat is red [7]."]
    PAUSE_S = 1.5

    def do_POST(self):  # noqa: N802 - http.server's name
        json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self._send(self.FIRST)
        time.sleep(self.PAUSE_S)
        for text in self.REST:
            self._send(text)
        self.wfile.write(b"data: [DONE]\n\n")

    def _send(self, text: str) -> None:
        self.wfile.write(f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': text}}]})}\n\n".encode())
        self.wfile.flush()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def service(tmp_path_factory, prefect_harness):
    folder = tmp_path_factory.mktemp("mixed")
    (folder / "minutes.txt").write_text(MINUTES)
    (folder / HOSTILE_NAME).write_text("# Tricks\n\nThe lighthouse keeper keeps the logbook in the tower.\n")
    (folder / "report.pdf").write_bytes(make.two_column_pdf())
    (folder / "sales.xlsx").write_bytes(make.workbook())
    (folder / "review.pptx").write_bytes(make.deck_pptx())
    (folder / "meeting.ogg").write_bytes(make.speech())
    (folder / "broken.pdf").write_bytes(make.truncated_pdf())
    db = tmp_path_factory.mktemp("index") / "db"
    result = invoke("index", folder, "--db", db, "--no-progress")
    assert result.exit_code == 3, result.output  # broken.pdf fails, the rest is indexed
    chat = ThreadingHTTPServer(("127.0.0.1", 0), FakeChat)
    threading.Thread(target=chat.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITELINE_LLM_", "OPENAI_"))}
    env.update(CITELINE_LLM_URL=f"http://127.0.0.1:{chat.server_address[1]}", CITELINE_LLM_MODEL="fake")
    port = free_port()
    log = open(tmp_path_factory.mktemp("api") / "api.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "citeline", "api", "--db", str(db), "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, proc)
        yield Service(base, db)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        chat.shutdown()


@dataclass(frozen=True)
class Service:
    base: str
    db: Path

    def documents(self) -> list[dict]:
        with urllib.request.urlopen(self.base + "/documents", timeout=30) as response:
            return json.load(response)["documents"]

    def doc_id(self, path: str) -> str:
        return next(d["document_id"] for d in self.documents() if d["path"] == path)


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
    driver.set_script_timeout(WAIT_S)
    yield driver
    driver.quit()


@pytest.fixture(params=list(WIDTHS), ids=list(WIDTHS))
def width(request, browser) -> str:
    """The window at desktop or phone width (the viewport, as a phone's, is that wide)."""
    browser.set_window_size(WIDTHS[request.param], 1000)
    inner = browser.execute_script("return window.innerWidth")
    browser.set_window_size(2 * WIDTHS[request.param] - inner, 1000)  # the frame's width on top
    return request.param


def shot(driver, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))
    if target := os.environ.get("CITELINE_SCREENSHOTS"):
        shutil.copy(path, Path(target) / path.name)


def checked(driver, what: str, status: int = 200) -> None:
    """What every page must be: nothing wider than the window (tables scroll in their own box),
    no serious or critical axe-core violation, no script error or CSP violation logged (but the
    page's own status, when it is a 404 page)."""
    widths = driver.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"{what}: the page scrolls sideways ({widths[0]} px in {widths[1]} px)"
    violations = axe(driver)
    bad = [v for v in violations if v["impact"] in ("serious", "critical")]
    assert not bad, f"{what}: axe-core: " + json.dumps(bad, indent=1)[:3000]
    errors = [e["message"] for e in driver.get_log("browser") if "favicon" not in e["message"]
              and not (status != 200 and f"status of {status}" in e["message"])]
    assert not errors, f"{what}: {errors}"


def axe(driver) -> list[dict]:
    """axe-core's violations on the page now (the PDF viewer's frame is the browser's, not ours)."""
    assert AXE.exists(), "axe-core is missing: run make setup (npm ci installs it into node_modules/)"
    if not driver.execute_script("return typeof window.axe !== 'undefined'"):
        driver.execute_script(AXE.read_text())
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {iframes: false, resultTypes: ['violations']})"
        ".then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))))"
        ".catch(e => done([{id: 'axe-error', impact: 'critical', help: String(e), nodes: []}]));")


def ask(driver, base: str, question: str, cut: float | None = None, generate: bool = False):
    """Type the question and press Enter, as a person does; wait for sources or a refusal."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(base + "/" + (f"?cut={cut}" if cut is not None else ""))
    box = driver.find_element(By.ID, "question")
    toggle = driver.find_element(By.ID, "generate")
    if toggle.is_selected() != generate:
        toggle.click()
    box.send_keys(question, Keys.ENTER)
    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#sources li") or d.find_element(By.ID, "refusal").is_displayed())


def text_of(driver, element) -> str:
    return driver.execute_script("return arguments[0].textContent", element)


def open_citation(driver, kind: str):
    """Open the first source of ``kind`` from the keyboard (focus its link, Enter); return its
    fragment and quote, the viewer in front."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    item = driver.find_element(By.CSS_SELECTOR, f"#sources li[data-kind='{kind}']")
    fragment = text_of(driver, item.find_element(By.CSS_SELECTOR, ".fragment"))
    quote = text_of(driver, item.find_element(By.CSS_SELECTOR, ".quote"))
    before = set(driver.window_handles)
    item.find_element(By.CSS_SELECTOR, "a.open").send_keys(Keys.ENTER)
    (viewer,) = wait_for(lambda: set(driver.window_handles) - before)
    driver.switch_to.window(viewer)
    return fragment, quote


def wait_for(condition, timeout_s: float = WAIT_S):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.1)
    raise AssertionError("timed out")


def close_viewer(driver) -> None:
    driver.close()
    driver.switch_to.window(driver.window_handles[0])


def rect(driver, element) -> dict:
    return driver.execute_script("const r = arguments[0].getBoundingClientRect();"
                                 "return {top: r.top, left: r.left, right: r.right, bottom: r.bottom}", element)


# ---- item 1: the ask page -------------------------------------------------------------------


def test_the_ask_page_answers_with_source_cards_and_keeps_recent_questions_in_the_browser(service, browser, width, tmp_path):
    from selenium.webdriver.common.by import By

    browser.get(service.base + "/")
    browser.execute_script("localStorage.clear()")
    ask(browser, service.base, QUESTIONS["char"], cut=OPEN_CUT)
    button = browser.find_element(By.ID, "ask-button")
    assert button.size["height"] >= 44 and button.size["width"] >= 64  # a target a thumb can hit
    card = browser.find_element(By.CSS_SELECTOR, "#sources li.card")
    assert card.find_element(By.CSS_SELECTOR, ".doc").text == "minutes.txt"
    assert card.find_element(By.CSS_SELECTOR, ".where").text  # where in the document, in words
    marked = [m.text.lower() for m in card.find_elements(By.CSS_SELECTOR, ".quote mark")]
    assert {"harbour", "committee"} <= set(marked), marked  # the question's words, emphasised
    assert "<script>" in text_of(browser, card.find_element(By.CSS_SELECTOR, ".quote"))  # shown as text
    # the line that answers, whole, above the quote: the API's highlight for this source, visible
    request = urllib.request.Request(service.base + "/ask", data=json.dumps(
        {"question": QUESTIONS["char"], "cut": OPEN_CUT}).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        served = json.load(response)
    line = card.find_element(By.CSS_SELECTOR, ".answers")
    expected = " ".join(served["citations"][0]["highlight"]["text"].split())
    assert line.is_displayed() and line.text == expected and line.location["y"] < card.find_element(
        By.CSS_SELECTOR, ".quote").location["y"], (line.text, expected)
    assert line.size["width"] <= card.size["width"]  # no sideways scrolling at 400 px either
    assert browser.title != "pwned"
    link = card.find_element(By.CSS_SELECTOR, "a.open")
    assert link.text.startswith("Open at this place") and "/view/" in link.get_attribute("href")
    checked(browser, f"ask page ({width})")
    shot(browser, tmp_path, "ask" if width == "desktop" else "phone-ask")
    # Recent questions live in this browser's storage: a reload lists it, one click asks it again.
    assert QUESTIONS["char"] in browser.execute_script("return localStorage.getItem('citeline.recent')")
    browser.get(service.base + "/")
    recent = browser.find_elements(By.CSS_SELECTOR, "#recent-list button")
    assert [b.text for b in recent] == [QUESTIONS["char"]]
    recent[0].click()
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#sources li") or browser.find_element(By.ID, "refusal").is_displayed())
    assert browser.find_element(By.ID, "question").get_attribute("value") == QUESTIONS["char"]
    browser.find_element(By.ID, "recent-clear").click()
    assert browser.execute_script("return localStorage.getItem('citeline.recent')") is None


def test_a_generated_answer_streams_in_first_with_its_citations_linked(service, browser, width, tmp_path):
    from selenium.webdriver.common.by import By

    ask(browser, service.base, QUESTIONS["char"], cut=OPEN_CUT, generate=True)
    answer = browser.find_element(By.ID, "answer-text")
    # The first words are on the page while the endpoint is still writing the rest.
    wait_for(lambda: FakeChat.FIRST in answer.text, timeout_s=FakeChat.PAUSE_S * 4)
    assert "old pier" not in answer.text and "Writing the answer" in browser.find_element(By.ID, "status").get_attribute("textContent")
    wait_for(lambda: "Answered" in browser.find_element(By.ID, "status").get_attribute("textContent"))
    assert "old pier" in answer.text and "[7]" not in answer.text  # the server's check removed the unknown [7]
    refs = answer.find_elements(By.CSS_SELECTOR, "a.ref")
    assert refs and all(r.get_attribute("href").endswith("#source-1") for r in refs)
    assert rect(browser, browser.find_element(By.ID, "answer"))["top"] < rect(browser, browser.find_element(By.ID, "results"))["top"]
    refs[0].click()  # a citation in the answer goes to its source card
    assert browser.execute_script("return location.hash") == "#source-1"
    assert "old pier" in answer.text  # the page went to the card; it did not ask again
    checked(browser, f"streamed answer ({width})")
    if width == "desktop":
        shot(browser, tmp_path, "answer")


def test_a_refusal_is_one_sentence_and_the_closest_passages_are_marked_not_an_answer(service, browser, width, tmp_path):
    from selenium.webdriver.common.by import By

    ask(browser, service.base, ABSURD, generate=True)  # a refusal never calls the model
    assert not browser.find_elements(By.CSS_SELECTOR, "#sources li") and not browser.find_element(By.ID, "answer").is_displayed()
    refusal = browser.find_element(By.ID, "refusal")
    sentence = browser.find_element(By.ID, "refusal-message").text
    assert refusal.is_displayed() and sentence.endswith("so no answer is given.") and sentence.count(".") == 1
    assert sentence.startswith("Your documents never mention \u201cJupiter\u201d")  # the name it refused by
    # The gate's numbers are behind "Why no answer?", said once, not in the sentence.
    assert "cosine" not in refusal.text and "score" not in refusal.text
    detail = browser.find_element(By.ID, "refusal-detail")
    assert not detail.is_displayed() and "NO ANSWER" in text_of(browser, detail)
    closest = browser.find_element(By.ID, "closest")
    heading = closest.find_element(By.TAG_NAME, "h2").text
    assert closest.is_displayed() and heading.lower().startswith("not an answer")
    assert "check them yourself" in browser.find_element(By.ID, "closest-note").text
    items = browser.find_elements(By.CSS_SELECTOR, "#closest-list li.card")
    assert 1 <= len(items) <= ASK_K
    for item in items:  # each opens at its place and shows its quote, as a source does
        assert item.find_element(By.CSS_SELECTOR, "a.open").get_attribute("href").endswith(("#cited", "#line"))
        assert item.find_element(By.CSS_SELECTOR, "blockquote.quote").text
    checked(browser, f"refusal ({width})")
    shot(browser, tmp_path, "refusal" if width == "desktop" else "phone-refusal")
    ask(browser, service.base, FAR)  # nothing close enough, and no name to blame
    far = browser.find_element(By.ID, "refusal-message").text
    assert far.startswith("Nothing in your documents is close enough") and "mention" not in far


def test_beside_an_answer_the_passages_the_gate_cut_follow_the_sources_marked_not_an_answer(service, browser, width):
    """The sources may be the wrong passages: what the gate cut of ask's first k is shown after
    them, numbered on, dashed and headed "Not an answer"."""
    from selenium.webdriver.common.by import By

    request = urllib.request.Request(service.base + "/ask", data=json.dumps(
        {"question": QUESTIONS["char"], "cut": 2}).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        distances = sorted(c["distance"] for c in json.load(response)["citations"])
    assert len(distances) >= 2 and distances[0] < distances[-1]
    cut = round((distances[0] + distances[1]) / 2, 6)  # the nearest passes; the others do not
    ask(browser, service.base, QUESTIONS["char"], cut=cut)
    sources = browser.find_elements(By.CSS_SELECTOR, "#sources li.card")
    closest = browser.find_elements(By.CSS_SELECTOR, "#closest-list li.card")
    assert len(sources) >= 1 and len(closest) >= 1 and len(sources) + len(closest) <= len(distances)
    numbers = [c.find_element(By.CSS_SELECTOR, ".num").text for c in [*sources, *closest]]
    assert numbers == [str(i) for i in range(1, len(numbers) + 1)]  # the closest go on from the sources
    section = browser.find_element(By.ID, "closest")
    assert section.find_element(By.TAG_NAME, "h2").text.lower().startswith("not an answer")
    assert rect(browser, section)["top"] >= rect(browser, browser.find_element(By.ID, "results"))["bottom"]
    assert "not as an answer" in browser.find_element(By.ID, "status").text
    checked(browser, f"answer with closest passages ({width})")


# ---- item 2: the source views -----------------------------------------------------------------


def test_each_kind_of_citation_opens_the_source_at_the_cited_place(service, browser, width, tmp_path):
    """The click-through is under test here, not the gate: the page is opened with ``?cut=0.8``
    (on this small index the calibrated cut refuses the PDF questions)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    desktop = width == "desktop"
    ask(browser, service.base, QUESTIONS["char"], cut=OPEN_CUT)
    fragment, quote = open_citation(browser, "char")
    assert fragment.startswith("#char=")
    mark = browser.find_element(By.ID, "cited")
    assert text_of(browser, mark) == quote and "harbour committee" in quote and browser.title != "pwned"
    # the sentence that answered, marked inside the chunk and scrolled into sight (#line)
    line = browser.find_element(By.ID, "line")
    assert text_of(browser, line) in quote and "meet" in text_of(browser, line).lower() and line.text
    assert browser.execute_script("const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight", line)
    checked(browser, f"text view ({width})")
    close_viewer(browser)

    ask(browser, service.base, QUESTIONS["page"], cut=OPEN_CUT)
    # the card names the page its answering line is printed on (the chunk may cross a page break)
    card = browser.find_element(By.CSS_SELECTOR, "#sources li[data-kind='page']")
    line_page = card.find_element(By.CSS_SELECTOR, ".answers").get_attribute("title").rsplit("(", 1)[1].rstrip(")")
    fragment, quote = open_citation(browser, "page")
    assert fragment.startswith("#page=") and line_page.startswith("#page=")
    pdf = browser.find_element(By.ID, "pdf")
    assert pdf.get_attribute("src").endswith("/report.pdf" + line_page)  # the viewer titles itself report.pdf
    assert pdf.get_attribute("title").startswith("report")
    cited = browser.find_element(By.ID, "quote")
    assert "".join(quote.split()) == "".join(text_of(browser, cited).split())  # drawn as paragraphs
    q, p = rect(browser, cited), rect(browser, pdf)
    assert q["right"] <= p["left"] if desktop else q["bottom"] <= p["top"]  # beside the page, or above it
    assert q["top"] < browser.execute_script("return innerHeight")  # in sight without scrolling
    checked(browser, f"PDF view ({width})")
    shot(browser, tmp_path, "pdf" if desktop else "phone-pdf")
    close_viewer(browser)

    ask(browser, service.base, QUESTIONS["sheet"], cut=OPEN_CUT)
    fragment, quote = open_citation(browser, "sheet")
    (table,) = browser.find_elements(By.CSS_SELECTOR, "table.range")
    assert "Notes" in table.find_element(By.TAG_NAME, "caption").text
    head = [text_of(browser, th) for th in table.find_elements(By.CSS_SELECTOR, "thead th[scope='col']")]
    rows = [[text_of(browser, td) for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert head == ["Topic", "Remark"] and ["Audit", "The auditors signed off on 2024-04-02."] in rows
    assert all(len(row) == len(head) for row in rows)  # one table: every row in the header's columns
    assert all(cell in quote for row in rows for cell in row if cell)  # exactly the cited cells
    checked(browser, f"sheet view ({width})")
    shot(browser, tmp_path, "sheet" if desktop else "phone-sheet")
    close_viewer(browser)

    ask(browser, service.base, QUESTIONS["slide"], cut=OPEN_CUT)
    fragment, quote = open_citation(browser, "slide")
    slide = browser.find_element(By.CSS_SELECTOR, "section.slide")
    assert fragment == "#slide=1" and slide.find_element(By.TAG_NAME, "h2").text == "Quarterly results"
    bullets = [li.text for li in slide.find_elements(By.TAG_NAME, "li")]
    assert bullets == ["Revenue grew by twelve percent", "The northern region led the growth"]
    assert "auditors signed off" in browser.find_element(By.CSS_SELECTOR, ".slide-notes").text
    checked(browser, f"slide view ({width})")
    shot(browser, tmp_path, "slide" if desktop else "phone-slide")
    close_viewer(browser)

    ask(browser, service.base, QUESTIONS["time"], cut=OPEN_CUT)
    fragment, quote = open_citation(browser, "time")
    start, end = map(float, fragment.removeprefix("#t=").split(","))
    player = browser.find_element(By.ID, "player")
    WebDriverWait(browser, WAIT_S).until(lambda d: d.execute_script("return arguments[0].readyState", player) >= 1)
    assert abs(browser.execute_script("return arguments[0].currentTime", player) - start) <= 0.5
    assert 0 <= start < end <= make.SPEECH_SECONDS + 0.5
    checked(browser, f"player ({width})")
    close_viewer(browser)


# ---- item 3: the library and a document's page ------------------------------------------------------


def test_the_library_is_searched_and_filtered_with_the_keyboard_and_rows_open_documents(service, browser, width, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.select import Select

    browser.get(service.base + "/library")
    rows = browser.find_elements(By.CSS_SELECTOR, "#documents tbody tr")
    names = [r.find_element(By.CSS_SELECTOR, "a.doc-link").text for r in rows]
    assert sorted(names) == sorted(d["path"] for d in service.documents()) and names[0] == "broken.pdf"  # failed first
    assert "<img" in " ".join(names) and browser.title != "pwned"  # the hostile name, as text
    assert browser.page_source.count("all-MiniLM-L6-v2") == 1  # the stamps, once for the index
    checked(browser, f"library ({width})")
    shot(browser, tmp_path, "library" if width == "desktop" else "phone-library")

    # Keyboard only: Tab from the page's start to the name box, type, Enter.
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    for _ in range(10):
        if browser.switch_to.active_element.get_attribute("name") == "q":
            break
        browser.switch_to.active_element.send_keys(Keys.TAB)
    assert browser.switch_to.active_element.get_attribute("name") == "q"
    browser.switch_to.active_element.send_keys("report", Keys.ENTER)
    wait_for(lambda: "q=report" in browser.current_url)
    assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "a.doc-link")] == ["report.pdf"]
    browser.get(service.base + "/library")
    Select(browser.find_element(By.NAME, "status")).select_by_value("failed")
    browser.find_element(By.NAME, "status").submit()
    wait_for(lambda: "status=failed" in browser.current_url)
    assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "a.doc-link")] == ["broken.pdf"]
    assert "truncated" in browser.find_element(By.CSS_SELECTOR, "#documents .reason").text
    browser.get(service.base + "/library?type=xlsx")
    link = browser.find_element(By.CSS_SELECTOR, "a.doc-link")
    assert link.text == "sales.xlsx"
    link.send_keys(Keys.ENTER)
    wait_for(lambda: "/documents/" in browser.current_url)
    assert browser.find_element(By.TAG_NAME, "h1").text == "sales"
    facts = browser.find_element(By.ID, "facts").text
    assert "indexed" in facts and "formulas without a cached value" in facts
    chunks = browser.find_elements(By.CSS_SELECTOR, "#chunks li")
    assert len(chunks) == next(d["chunk_count"] for d in service.documents() if d["path"] == "sales.xlsx")
    checked(browser, f"document page ({width})")
    shot(browser, tmp_path, "document" if width == "desktop" else "phone-document")
    audit = next(c for c in chunks if "Notes" in c.text)
    audit.find_element(By.CSS_SELECTOR, "a.open").send_keys(Keys.ENTER)
    wait_for(lambda: "/view/" in browser.current_url)
    assert "The auditors signed off on 2024-04-02." in browser.find_element(By.CSS_SELECTOR, "table.range").text


def test_a_failed_document_page_says_why(service, browser, width):
    from selenium.webdriver.common.by import By

    browser.get(f"{service.base}/documents/{service.doc_id('broken.pdf')}")
    assert "truncated" in browser.find_element(By.ID, "reason").text
    checked(browser, f"failed document ({width})")


# ---- item 4: stale links -------------------------------------------------------------------------


def test_a_stale_link_is_a_page_that_says_the_document_changed_and_links_to_it(service, browser, width, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    notes = service.doc_id("minutes.txt")
    browser.get(f"{service.base}/view/{'0' * 32}?doc={notes}#cited")
    assert "changed" in browser.find_element(By.TAG_NAME, "h1").text
    assert "{" not in browser.find_element(By.TAG_NAME, "main").text  # a page, not raw JSON
    checked(browser, f"stale link ({width})", status=404)
    if width == "desktop":
        shot(browser, tmp_path, "stale-link")
    browser.find_element(By.ID, "current-view").send_keys(Keys.ENTER)
    wait_for(lambda: browser.current_url.endswith(f"/documents/{notes}"))
    assert browser.find_element(By.TAG_NAME, "h1").text
    with pytest.raises(urllib.error.HTTPError) as err:  # the JSON API keeps JSON, with a message
        urllib.request.urlopen(f"{service.base}/documents/{'0' * 32}", timeout=30)
    body = json.loads(err.value.read())["error"]
    assert err.value.code == 404 and body["type"] == "NotFound" and "no document" in body["message"]


# ---- item 5: keyboard --------------------------------------------------------------------------------


def test_the_keyboard_reaches_everything_and_focus_is_visible(service, browser, width):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    def tab() -> tuple[str, str, str]:
        ActionChains(browser).send_keys(Keys.TAB).perform()
        active = browser.switch_to.active_element
        seen = (active.tag_name, active.get_attribute("class") or "", active.text)
        if active.tag_name != "body":  # past the last control focus leaves the page
            outline = browser.execute_script("return getComputedStyle(arguments[0]).outlineStyle", active)
            assert outline != "none", f"no visible focus on {seen}"
        return seen

    browser.get(service.base + "/library")  # no autofocus: the first Tab starts at the top
    assert tab()[2] == "Skip to content"
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    assert browser.switch_to.active_element.get_attribute("id") == "main"
    ask(browser, service.base, QUESTIONS["char"], cut=OPEN_CUT)  # focus: the question box
    seen = []
    while len(seen) < 60 and (not seen or seen[-1][0] != "body"):
        seen.append(tab())
    assert seen[-1][0] == "body", "Tab never left the page: a focus trap"
    classes = " ".join(c for _, c, _ in seen)
    assert "primary" in classes and "open" in classes  # the Ask button, then the cards' links


# ---- item 6: fast ----------------------------------------------------------------------------------


def test_an_ask_round_trip_is_timed_in_the_browser(service, browser, width):
    """The page measures each ask (fetch to the sources drawn) with the Performance API; warm,
    its median must be within the issue's 300 ms. This index is small (docs/benchmarks.md, 13,
    measures 2,000 chunks)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    ask(browser, service.base, QUESTIONS["char"])  # warm: this page's first ask is not counted
    box = browser.find_element(By.ID, "question")
    for question in [*QUESTIONS.values(), ABSURD] * 2:  # one page, no reload between asks
        count = len(browser.execute_script("return performance.getEntriesByName('ask')"))
        box.clear()
        box.send_keys(question, Keys.ENTER)
        wait_for(lambda: len(browser.execute_script("return performance.getEntriesByName('ask')")) > count)
    durations = browser.execute_script("return performance.getEntriesByName('ask').map(e => e.duration)")[1:]
    p50 = statistics.median(durations)
    print(f"ask round trip in Chromium ({width}): p50 {p50:.0f} ms, max {max(durations):.0f} ms, n={len(durations)}")
    assert p50 <= ROUND_TRIP_P50_MS, durations


def test_the_api_docs_render_with_no_network(service, browser, tmp_path):
    """Swagger UI draws the operations from files the service ships (no CDN), under its CSP."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.set_window_size(1280, 1000)
    browser.get_log("browser")  # drop what earlier pages logged
    browser.get(service.base + "/docs")
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#operations-query-ask_ask_post"))
    operation = browser.find_element(By.CSS_SELECTOR, "#operations-query-ask_ask_post")
    assert "POST" in operation.text and "/ask" in operation.text
    assert browser.find_elements(By.CSS_SELECTOR, "#operations-query-search_search_get")
    operation.find_element(By.CSS_SELECTOR, ".opblock-summary").click()  # opens: its icons and schema draw
    WebDriverWait(browser, WAIT_S).until(lambda d: operation.find_elements(By.CSS_SELECTOR, ".opblock-body"))
    assert not [entry["message"] for entry in browser.get_log("browser")]
    loaded = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert loaded and all(url.startswith(service.base + "/") for url in loaded), loaded
    shot(browser, tmp_path, "api-docs")


@pytest.fixture
def rebinding_browser():
    """Chromium with attacker.test resolving to 127.0.0.1: what a DNS rebinding attack achieves."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--host-resolver-rules=MAP attacker.test 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(WAIT_S)
    driver.set_script_timeout(WAIT_S)
    yield driver
    driver.quit()


def test_a_dns_rebinding_page_reads_nothing(rebinding_browser, docs, tmp_path, cli_env):
    """A script on http://attacker.test:PORT (the name rebound to 127.0.0.1) fetches /documents and
    a source, same-origin as far as the browser knows; before, it read every document. The fake embedder serves here: the Host check comes before any model."""
    from testkit import served_api

    db = tmp_path / "db"
    assert subprocess.run([sys.executable, str(Path(__file__).parents[1] / "fixtures" / "fake_cli.py"), "index", docs,
                           "--db", db, "--model", "fake/hashed-bag-of-words", "--no-progress"], env=cli_env,
                          capture_output=True, timeout=300).returncode == 0
    with served_api(cli_env, "--db", db) as url:
        with urllib.request.urlopen(url + "documents", timeout=30) as response:  # the owner's own name works
            doc = json.load(response)["documents"][0]["document_id"]
        attacker = url.replace("127.0.0.1", "attacker.test")
        rebinding_browser.get(attacker)
        seen = rebinding_browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "Promise.all(['documents', 'sources/' + arguments[0]].map(p => fetch('/' + p)"
            ".then(r => r.text().then(t => [r.status, t])).catch(e => [0, String(e)]))).then(done);", doc)
    assert [status for status, _ in seen] == [400, 400], seen
    assert not any("dropout" in text.lower() or doc in text for _, text in seen), seen
