"""``citeline api`` in-process (FastAPI's TestClient) over a small index built with the fake embedder."""
from __future__ import annotations

import json
import os
import random
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import make
from citeline.library import Index
from citeline.index.store import Store
from citeline.pipeline import embed
from citeline.web.app import MAX_BODY, create_app
from fakes import FAKE, HashEmbedder

pytestmark = pytest.mark.usefixtures("prefect_harness")
CUT = 0.95  # the fake embedder has no calibrated cut
HOSTILE_NAME = "<img src=x onerror=alert(1)>.md"
# In code spans: Markdown's inline HTML is read as its text (the tags dropped), code is kept as
# written, so the markup reaches the stored text and every page must escape it.
HOSTILE_TEXT = ("# Tricks\n\nThe lighthouse keeper wrote `<script>document.title='pwned'</script>` and "
                "`<img src=x onerror=\"document.title='pwned'\">` in the margin.\n")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    (root / "notes.md").write_text("# Notes\n\nThe harbour committee meets on Fridays at the pier.\n")
    (root / HOSTILE_NAME).write_text(HOSTILE_TEXT)
    (root / "report.pdf").write_bytes(make.two_column_pdf())
    (root / "sales.xlsx").write_bytes(make.workbook())
    (root / "bad.pdf").write_bytes(make.truncated_pdf())
    return root


@pytest.fixture(scope="module")
def index(folder, tmp_path_factory, prefect_harness):
    index = Index.create(str(tmp_path_factory.mktemp("db") / "db"), model=FAKE)
    assert index.sync(str(folder)).indexed == 4
    return index


@pytest.fixture(scope="module")
def client(index):
    with TestClient(create_app(index, poll_s=0.2), base_url="http://127.0.0.1") as client:
        yield client


def ask(client, query, **body):
    return client.post("/ask", json={"query": query, "cut": CUT, "retriever": "dense", **body})


def doc_id(client, path):
    return next(d["document_id"] for d in client.get("/documents").json()["documents"] if d["path"] == path)


def test_health_and_openapi(client):
    assert client.get("/health").json() == {"ok": True, "ready": True, "model": FAKE, "dim": 64, "strategy": "E"}
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/ask", "/search", "/documents", "/documents/{document_id}", "/documents/{document_id}/chunks",
            "/sources/{document_id}", "/health"} <= set(paths)
    assert client.get("/docs").status_code == 200


def test_docs_need_no_network(client):
    """/docs names no outside URL: Swagger UI's files come from this service, under a CSP."""
    page = client.get("/docs")
    assert page.status_code == 200 and not re.search(r"(https?:)?//", page.text), page.text
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "'unsafe-inline'" not in policy and "http" not in policy
    assets = re.findall(r'(?:src|href)="(/[^"]+)"', page.text)
    assert {a.rsplit("/", 1)[1] for a in assets} >= {"swagger-ui-bundle.js", "swagger-ui.css"}
    for asset in assets:
        response = client.get(asset)
        assert response.status_code == 200 and len(response.content) > 100, asset


def test_ask_answers_with_located_citations_or_refuses(client, folder):
    data = ask(client, "harbour committee meets Fridays pier", k=2).json()
    assert data["refused"] is False and data["citations"][0]["path"] == "notes.md"
    assert data["citations"][0]["uri"].startswith((folder / "notes.md").as_uri() + "#char=")
    refused = ask(client, "zzyzx qwertyuiop", cut=0.01).json()
    assert refused["refused"] is True and refused["refusal"]["message"].startswith("NO ANSWER")


def test_a_refusal_returns_the_closest_passages_located_and_marked(client, folder):
    refused = ask(client, "harbour committee meets Fridays pier", cut=0.0001, k=2).json()
    assert refused["refused"] is True and refused["citations"] == [] and refused["prompt"] is None
    assert refused["closest_note"] == "closest passages, below the confidence cut \u2014 check them yourself"
    closest = refused["closest"]
    assert len(closest) == 2 and closest[0]["path"] == "notes.md"  # the passage that would have answered
    assert closest[0]["uri"].startswith((folder / "notes.md").as_uri() + "#char=")
    assert closest[0]["distance"] >= 0.0001 and closest[0]["chunk_id"]


def test_ask_takes_the_question_as_query_and_still_as_question(client):
    """One name in the request and the answer (``query``); ``question``, the old request name, still works."""
    new = ask(client, "harbour committee meets Fridays pier", k=1).json()
    old = client.post("/ask", json={"question": "harbour committee meets Fridays pier", "cut": CUT,
                                    "retriever": "dense", "k": 1}).json()
    assert new["query"] == old["query"] == "harbour committee meets Fridays pier"
    assert new["citations"] == old["citations"]
    both = client.post("/ask", json={"query": "a", "question": "b"})
    assert both.status_code == 400, both.text
    schema = client.get("/openapi.json").json()["components"]["schemas"]["AskRequest"]
    assert "query" in schema["properties"] and schema["required"] == ["query"]


def test_search_documents_and_chunks(client):
    response = client.get("/search", params={"q": "quarterly sales region", "k": 3})
    assert re.fullmatch(r"app;dur=\d+\.\d", response.headers["server-timing"])  # the service's own time
    results = response.json()["results"]
    assert len(results) == 3 and all(r["chunk_id"] and r["uri"] for r in results)
    docs = client.get("/documents").json()["documents"]
    assert docs[0]["path"] == "bad.pdf" and docs[0]["status"] == "failed"
    notes = doc_id(client, "notes.md")
    assert client.get(f"/documents/{notes}").json()["path"] == "notes.md"
    chunks = client.get(f"/documents/{notes}/chunks").json()["chunks"]
    assert chunks and chunks[0]["fragment"].startswith("#char=")


@pytest.mark.parametrize("body, status", [
    ({"query": ""}, 400),
    ({"query": "x", "k": 0}, 400),
    ({"query": "x", "k": 21}, 400),
    ({"query": "x", "retriever": "telepathy"}, 400),
    ({"query": "x", "surprise": 1}, 400),
    ({"query": "x" * 2001}, 400),
    ({"question": ""}, 400),
    ({}, 400),
])
def test_bad_ask_requests_are_json_400(client, body, status):
    response = client.post("/ask", json=body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["status"] == status


def test_an_index_without_a_cut_is_a_json_400_not_a_500(tmp_path):
    """An index whose gate was never calibrated (built before calibration, or its
    calibration lost) and whose model has no legacy cut: ask says so."""
    import lancedb

    from citeline.index.filters import equals
    from citeline.schemas.tables import CALIBRATION_KEY, META

    index = Index.create(str(tmp_path / "db"), model=FAKE)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nThe pier opens at dawn.\n")
    index.sync(str(tmp_path / "docs"))
    lancedb.connect(str(tmp_path / "db")).open_table(META).delete(equals("key", CALIBRATION_KEY + Store(
        str(tmp_path / "db")).active_table()))
    with TestClient(create_app(Index.open(str(tmp_path / "db")), poll_s=0), base_url="http://127.0.0.1") as fresh:
        response = fresh.post("/ask", json={"question": "x"})
    assert response.status_code == 400, response.text
    assert "calibrat" in response.json()["error"]["message"]


def test_request_size_and_k_are_bounded(client):
    big = client.post("/ask", content=b"{" + b" " * MAX_BODY + b"}", headers={"Content-Type": "application/json"})
    assert big.status_code == 413 and big.json()["error"]["type"] == "TooLarge"
    assert client.get("/search", params={"q": "x", "k": 101}).status_code == 400
    assert client.get("/search", params={"q": ""}).status_code == 400


@pytest.mark.parametrize("ident", [
    "...", "..%2F..%2Fetc%2Fpasswd", "%2e%2e", "%2Fetc%2Fpasswd", "notes.md", "0" * 31, "G" * 32,
])
def test_sources_never_take_a_path_from_the_request(client, ident):
    response = client.get(f"/sources/{ident}")
    assert response.status_code in (400, 404), (ident, response.status_code)
    assert "harbour" not in response.text and "root:" not in response.text


def test_sources_serve_the_original_bytes_with_type_and_ranges(client, folder):
    pdf = doc_id(client, "report.pdf")
    whole = client.get(f"/sources/{pdf}")
    assert whole.status_code == 200 and whole.headers["content-type"] == "application/pdf"
    assert whole.content == (folder / "report.pdf").read_bytes() and whole.headers["accept-ranges"] == "bytes"
    part = client.get(f"/sources/{pdf}", headers={"Range": "bytes=10-19"})
    assert part.status_code == 206 and part.content == whole.content[10:20]
    assert part.headers["content-range"] == f"bytes 10-19/{len(whole.content)}"
    assert client.get(f"/sources/{pdf}", headers={"Range": "bytes=-4"}).content == whole.content[-4:]
    assert client.get(f"/sources/{pdf}", headers={"Range": f"bytes={len(whole.content)}-"}).status_code == 416
    hostile = client.get(f"/sources/{doc_id(client, HOSTILE_NAME)}")
    assert hostile.headers["content-type"] == "text/plain; charset=utf-8"  # never HTML
    assert hostile.headers["x-content-type-options"] == "nosniff" and "sandbox" in hostile.headers["content-security-policy"]


def test_sources_read_ranges_as_rfc_9110_says(client):
    """`bytes=-0` was a 206 with `Content-Range: bytes N-(N-1)/N`; a header
    in another unit, malformed or naming several ranges was a 416 where it is to be ignored."""
    pdf = doc_id(client, "report.pdf")
    whole = client.get(f"/sources/{pdf}").content
    for unsatisfiable in ("bytes=-0", f"bytes={len(whole)}-", f"bytes={len(whole) + 5}-{len(whole) + 9}"):
        response = client.get(f"/sources/{pdf}", headers={"Range": unsatisfiable})
        assert response.status_code == 416, unsatisfiable
        assert response.headers["content-range"] == f"bytes */{len(whole)}", unsatisfiable
    for ignored in ("items=0-9", "bytes=abc", "bytes=0-1,5-9", "bytes=9-2", "bytes=-", "bytes 0-9"):
        response = client.get(f"/sources/{pdf}", headers={"Range": ignored})
        assert response.status_code == 200 and response.content == whole, ignored
        assert "content-range" not in response.headers, ignored
    last = client.get(f"/sources/{pdf}", headers={"Range": "Bytes=-1"})
    assert last.status_code == 206 and last.content == whole[-1:]
    assert last.headers["content-range"] == f"bytes {len(whole) - 1}-{len(whole) - 1}/{len(whole)}"


def bytes_read() -> int:
    """What this process has read through read(2) and friends so far (Linux's own count)."""
    return int(Path("/proc/self/io").read_text().split("rchar:")[1].split()[0])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts reads with Linux's /proc/self/io")
def test_a_range_reads_only_its_bytes(tmp_path):
    """A player seeking in a long recording costs what it fetches, not the whole file per request."""
    size, offset = 48 * 1024 * 1024, 31 * 1024 * 1024 + 7
    data = random.Random(13).randbytes(size)
    (tmp_path / "long").mkdir()
    (tmp_path / "long" / "recording.pdf").write_bytes(data)  # not a PDF: a failed document, still served
    index = Index.create(str(tmp_path / "db"), model=FAKE)
    index.sync(str(tmp_path / "long"))
    with TestClient(create_app(index, poll_s=0), base_url="http://127.0.0.1") as client:
        source = f"/sources/{doc_id(client, 'recording.pdf')}"
        client.get(source, headers={"Range": "bytes=0-0"})  # the lookups' own first reads
        # /proc/self/io counts every thread of this process (Prefect's, LanceDB's): the
        # least of three requests, against a bound far below the 31 MiB before the range.
        reads = []
        for _ in range(3):
            before = bytes_read()
            part = client.get(source, headers={"Range": f"bytes={offset}-{offset + 99}"})
            reads.append(bytes_read() - before)
        read = min(reads)
        whole = client.get(source)
    assert part.status_code == 206 and part.content == data[offset:offset + 100]
    assert part.headers["content-range"] == f"bytes {offset}-{offset + 99}/{size}"
    assert part.headers["content-length"] == "100"
    assert read < 1024 * 1024, f"{read:,} bytes read for a 100-byte range of {size:,} (reads: {reads})"
    assert whole.status_code == 200 and whole.content == data


def test_a_source_swapped_for_a_symlink_or_deleted_is_not_served(client, folder, tmp_path):
    notes = doc_id(client, "notes.md")
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0")
    original = (folder / "notes.md").read_bytes()
    (folder / "notes.md").unlink()
    try:
        assert client.get(f"/sources/{notes}").status_code == 404  # gone
        (folder / "notes.md").symlink_to(secret)
        response = client.get(f"/sources/{notes}")
        assert response.status_code == 404 and "root:x" not in response.text
    finally:
        (folder / "notes.md").unlink()
        (folder / "notes.md").write_bytes(original)
    assert client.get(f"/sources/{notes}").content == original


def test_pages_escape_what_documents_contribute(client):
    hostile = doc_id(client, HOSTILE_NAME)
    (chunk,) = client.get(f"/documents/{hostile}/chunks").json()["chunks"]
    page = client.get(f"/view/{chunk['chunk_id']}")
    assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
    assert "<script>document" not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in page.text
    library = client.get("/library").text
    assert "<img src=x onerror" not in library and "&lt;img src=x onerror=alert(1)&gt;.md" in library


def test_sheet_view_is_a_table_of_exactly_the_range(client):
    sales = doc_id(client, "sales.xlsx")
    chunk = next(c for c in client.get(f"/documents/{sales}/chunks").json()["chunks"] if "auditors" in c["content"])
    page = client.get(f"/view/{chunk['chunk_id']}").text
    assert "The auditors signed off on 2024-04-02." in page and page.count("class=\"range\"") >= 1


def test_token_guards_everything_but_health(index):
    with TestClient(create_app(index, token="s3cret", poll_s=0), base_url="http://127.0.0.1") as client:
        assert client.get("/health").status_code == 200
        for path in ("/documents", "/search?q=x", "/", "/docs", "/openapi.json"):
            assert client.get(path).status_code == 401, path
        assert client.get("/documents", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get("/documents", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert client.get("/?token=s3cret").status_code == 200  # sets the page's cookie
        assert client.get("/documents").status_code == 200


def test_without_a_token_only_loopback_names_are_answered(index):
    """DNS rebinding: a page on attacker.test, its name pointed at 127.0.0.1,
    sends its own name as Host; before, every path answered it (200 with every document)."""
    doc = index.documents()[0].document_id
    with TestClient(create_app(index, poll_s=0), base_url="http://127.0.0.1") as client:
        for host in ("attacker.test:8000", "attacker.test", "127.0.0.1.attacker.test", "localhost:x", ""):
            for path in ("/documents", f"/sources/{doc}", "/", "/health"):
                response = client.get(path, headers={"Host": host})
                assert response.status_code == 400 and response.json()["error"]["type"] == "BadHost", (host, path)
        for host in ("127.0.0.1:8000", "localhost:8000", "localhost", "[::1]:8000", "[::1]"):
            assert client.get("/documents", headers={"Host": host}).status_code == 200, host
    with TestClient(create_app(index, poll_s=0, allowed_hosts=("docs.internal",)),
                    base_url="http://127.0.0.1") as client:
        assert client.get("/documents", headers={"Host": "docs.internal:8000"}).status_code == 200
        assert client.get("/documents", headers={"Host": "attacker.test:8000"}).status_code == 400


def test_with_a_token_the_operators_names_are_answered(index):
    auth = {"Authorization": "Bearer s3cret"}
    with TestClient(create_app(index, token="s3cret", poll_s=0), base_url="http://127.0.0.1") as client:
        assert client.get("/documents", headers={**auth, "Host": "search.example.org"}).status_code == 200
    with TestClient(create_app(index, token="s3cret", poll_s=0, allowed_hosts=("search.example.org",)),
                    base_url="http://127.0.0.1") as client:
        assert client.get("/documents", headers={**auth, "Host": "search.example.org:443"}).status_code == 200
        assert client.get("/documents", headers={**auth, "Host": "attacker.test"}).status_code == 400


def test_no_index_yet_is_503_and_another_model_is_409(index, tmp_path):
    with TestClient(create_app(Index.create(str(tmp_path / "empty"), model=FAKE), poll_s=0),
                    base_url="http://127.0.0.1") as client:
        assert client.get("/health").json()["ready"] is False
        response = client.get("/search", params={"q": "x"})
        assert response.status_code == 503 and response.json()["error"]["type"] == "NoIndex"
    other = "fake/other-model"
    with embed.registered(other, lambda precision, batch_size: HashEmbedder(name=other)):
        with TestClient(create_app(Index(index.uri, other), poll_s=0), base_url="http://127.0.0.1") as client:
            response = client.get("/search", params={"q": "x"})
            assert response.status_code == 409 and response.json()["error"]["type"] == "IndexMismatch"


class FakeChat(BaseHTTPRequestHandler):
    """A tiny OpenAI-compatible server that streams a canned answer (the one allowed fake)."""

    ANSWER = ["The committee ", "meets on Fridays [1]. ", "It owns a boat [9]."]

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body["stream"] is True and "QUESTION" in body["messages"][0]["content"]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for text in self.ANSWER:
            chunk = {"choices": [{"index": 0, "delta": {"content": text}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_server(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeChat)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for name in ("CITELINE_LLM_URL", "CITELINE_LLM_MODEL", "CITELINE_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("OPENAI_MODEL", "tiny")
    yield server
    server.shutdown()


def events(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_generation_streams_and_checks_the_citations(client, chat_server):
    response = ask(client, "harbour committee meets Fridays pier", k=2, generate=True)
    assert response.headers["content-type"].startswith("text/event-stream")
    got = events(response.text)
    assert [name for name, _ in got] == ["sources", "delta", "delta", "delta", "done"]
    assert got[0][1]["citations"][0]["path"] == "notes.md"
    done = got[-1][1]
    assert done["answer_checks"]["unknown"] == [9] and done["answer_checks"]["cited"] == [1]
    assert "[9]" not in done["answer"]


def test_generation_without_an_endpoint_is_a_json_400(client, monkeypatch):
    for name in ("CITELINE_LLM_URL", "CITELINE_LLM_MODEL", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    response = ask(client, "harbour committee meets Fridays pier", generate=True)
    assert response.status_code == 400 and response.json()["error"]["type"] == "LLMError"


def test_a_sync_is_seen_after_it_commits_and_queries_never_fail_meanwhile(client, index, folder):
    statuses, stop = [], threading.Event()

    def query():
        while not stop.is_set():
            statuses.append(client.get("/search", params={"q": "zeppelin orchard", "k": 3}).status_code)

    (folder / "late.md").write_text("# Late\n\nA zeppelin landed in the orchard.\n")
    worker = threading.Thread(target=query)
    worker.start()
    try:
        writer = Index.create(index.uri, model=FAKE)  # another writer, as `citeline index` would be
        assert writer.sync(str(folder)).indexed == 1
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            top = client.get("/search", params={"q": "zeppelin orchard", "k": 1}).json()["results"][0]
            if top["path"] == "late.md":
                break
            time.sleep(0.2)
        assert top["path"] == "late.md"
    finally:
        stop.set()
        worker.join()
        os.unlink(folder / "late.md")
    assert statuses and set(statuses) == {200}


def test_a_question_naming_what_no_passage_mentions_is_refused_by_that_name(client):
    """Distances cannot tell an adjacent question from an answerable one (docs/query.md); a name
    the documents never mention can. The refusal names it and still shows the closest passages."""
    asked = "When does the Harbour committee meet the Zanzibar ferry crew at the pier?"
    refused = ask(client, asked, k=2).json()  # the cut lets every passage through: only the name refuses
    assert refused["refused"] is True and refused["prompt"] is None and refused["citations"] == []
    assert refused["refusal"]["kind"] == "unmentioned" and refused["refusal"]["terms"] == ["Zanzibar"]
    assert refused["refusal"]["message"] == f'NO ANSWER: no passage mentions "Zanzibar" for "{asked}"'
    assert [c["path"] for c in refused["closest"]][:1] == ["notes.md"]
    unchecked = ask(client, asked, k=2, check_names=False).json()
    assert unchecked["refused"] is False and unchecked["citations"][0]["path"] == "notes.md"
    # "PIERS" is a name by its capitals, and the full-text analyser meets "pier" in it: mentioned.
    answered = ask(client, "Does the committee meet at the PIERS on Fridays?", k=2).json()
    assert answered["refused"] is False and answered["citations"][0]["path"] == "notes.md"
    # The analyser drops stopwords from the index ("now" is one of LanceDB's, not citeline's):
    # a name made of one is in no index whatever the documents say, so it is never looked up.
    shouted = ask(client, "Do the members Themselves meet NOW, on Fridays at the pier?", k=2).json()
    assert shouted["refused"] is False, shouted["refusal"]


def test_ask_on_the_command_line_names_the_unmentioned_term_and_can_skip_the_check(index):
    from testkit import invoke

    asked = "When does the committee meet the Zanzibar ferry crew?"
    common = ["--db", index.uri, "--cut", CUT, "--retriever", "dense", "-k", 1]
    refused = invoke("ask", asked, *common)
    assert refused.exit_code == 0, refused.output
    assert refused.output.startswith(f'NO ANSWER: no passage mentions "Zanzibar" for "{asked}"')
    assert "NOT AN ANSWER: closest passages" in refused.output
    as_json = json.loads(invoke("ask", asked, *common, "--json").output)
    assert as_json["refusal"]["kind"] == "unmentioned" and as_json["refusal"]["terms"] == ["Zanzibar"]
    answered = invoke("ask", asked, *common, "--no-name-check")
    assert answered.exit_code == 0 and answered.output.startswith("SOURCES (1 under cosine distance"), answered.output
