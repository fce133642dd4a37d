"""The pages of ``citeline api`` a person reads: the library's search, filters and
pages, a document's page, the source views' layout, and what a stale link shows.

A real index (fake embedder, real flow, real LanceDB) served in-process by FastAPI's TestClient;
the same pages in Chromium, at desktop and phone width, are tests/e2e/test_browser.py.
"""
from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

import make
from citeline.web import pages
from citeline.library import Index
from citeline.web.app import create_app
from fakes import FAKE

pytestmark = pytest.mark.usefixtures("prefect_harness")
HOSTILE = "<img src=x onerror=alert(1)>.md"
HTML = {"Accept": "text/html,application/xhtml+xml"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    (root / "notes.md").write_text("# Notes\n\nThe harbour committee meets on Fridays at the pier.\n")
    (root / HOSTILE).write_text("# Tricks <script>alert(1)</script>\n\nThe keeper wrote <b>bold</b> in the margin.\n")
    (root / "report.pdf").write_bytes(make.two_column_pdf())
    (root / "sales.xlsx").write_bytes(make.workbook())
    (root / "deck.pptx").write_bytes(make.deck_pptx())
    (root / "bad.pdf").write_bytes(make.truncated_pdf())
    return root


@pytest.fixture(scope="module")
def index(folder, tmp_path_factory, prefect_harness):
    index = Index.create(str(tmp_path_factory.mktemp("db") / "db"), model=FAKE)
    assert index.sync(str(folder)).indexed == 5
    return index


@pytest.fixture(scope="module")
def client(index):
    with TestClient(create_app(index, poll_s=0), base_url="http://127.0.0.1") as client:
        yield client


def doc_id(client, path):
    return next(d["document_id"] for d in client.get("/documents").json()["documents"] if d["path"] == path)


def chunk(client, path, words):
    return next(c for c in client.get(f"/documents/{doc_id(client, path)}/chunks").json()["chunks"]
                if words in c["content"])


def rows(page: str) -> list[str]:
    return re.findall(r'<a class="doc-link" href="/documents/([0-9a-f]{32})">', page)


def test_the_library_lists_failed_first_links_each_row_and_shows_the_stamps_once(client):
    page = client.get("/library").text
    ids = rows(page)
    docs = client.get("/documents").json()["documents"]
    assert ids == [d["document_id"] for d in docs] and ids[0] == doc_id(client, "bad.pdf")  # failed first
    assert page.count("sentence-transformers") == 0 and page.count(FAKE) == 1  # the index stamp, once
    assert "extractor_version" not in page and "embed_model=" not in page  # no row repeats the stamps
    assert "&lt;img src=x onerror=alert(1)&gt;.md" in page and "<img src=x" not in page


def test_the_library_searches_by_name_and_filters_by_status_and_type(client):
    assert rows(client.get("/library", params={"q": "NOTES"}).text) == [doc_id(client, "notes.md")]
    assert rows(client.get("/library", params={"status": "failed"}).text) == [doc_id(client, "bad.pdf")]
    pdfs = rows(client.get("/library", params={"type": "pdf"}).text)
    assert sorted(pdfs) == sorted([doc_id(client, "bad.pdf"), doc_id(client, "report.pdf")])
    both = client.get("/library", params={"type": "pdf", "status": "indexed"}).text
    assert rows(both) == [doc_id(client, "report.pdf")] and "1 of 6 documents match" in both
    none = client.get("/library", params={"q": "no such name"}).text
    assert rows(none) == [] and "No document matches" in none
    assert client.get("/library", params={"status": "bogus", "page": "x"}).status_code == 200


def test_the_library_is_paginated(client, monkeypatch):
    monkeypatch.setattr(pages, "LIBRARY_PAGE", 4)
    first, second = client.get("/library").text, client.get("/library", params={"page": 2}).text
    assert len(rows(first)) == 4 and len(rows(second)) == 2 and not set(rows(first)) & set(rows(second))
    assert "Page 1 of 2" in first and 'href="/library?page=2"' in first and "Page 2 of 2" in second
    filtered = client.get("/library", params={"type": "md", "page": 1}).text
    assert "Page" not in re.sub(r"<title>.*?</title>", "", filtered).split("</table>")[1]  # 2 rows: one page


def test_a_document_page_shows_status_notes_and_its_chunks_each_opening_at_its_place(client):
    sales = doc_id(client, "sales.xlsx")
    page = client.get(f"/documents/{sales}", headers=HTML)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    chunks = client.get(f"/documents/{sales}/chunks").json()["chunks"]
    links = re.findall(r'href="/view/([0-9a-f]{32})\?doc=([0-9a-f]{32})#cited"', page.text)
    assert links == [(c["chunk_id"], sales) for c in chunks]
    assert "formulas without a cached value" in page.text and f"<dd>{len(chunks)}</dd>" in page.text
    for c in chunks:  # every chunk's place is named
        assert pages.esc(c["label"]) in page.text
    # an API client still gets the record as JSON
    assert client.get(f"/documents/{sales}").json()["document_id"] == sales


def test_a_failed_document_page_says_why(client):
    page = client.get(f"/documents/{doc_id(client, 'bad.pdf')}", headers=HTML).text
    assert 'id="reason"' in page and "truncated" in page and "no chunks" in page


def test_a_hostile_title_is_escaped_on_its_document_page_and_view(client):
    hostile = doc_id(client, HOSTILE)
    page = client.get(f"/documents/{hostile}", headers=HTML).text
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;.md" in page  # its name, as text
    (c,) = client.get(f"/documents/{hostile}/chunks").json()["chunks"]
    view = client.get(f"/view/{c['chunk_id']}").text
    assert "<script>alert" not in view and "<b>bold" not in view and pages.esc(c["content"]) in view


def test_a_stale_link_is_a_page_that_says_the_document_changed_and_links_to_it(client):
    notes = doc_id(client, "notes.md")
    gone = "0" * 32
    page = client.get(f"/view/{gone}", params={"doc": notes})
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "changed" in page.text and f'href="/documents/{notes}"' in page.text
    assert "KeyError" not in page.text and "{" not in page.text.split("<body>")[1].split("<script")[0]
    unknown = client.get("/view/not-a-chunk-id")
    assert unknown.status_code == 404 and "library" in unknown.text.lower()


def test_the_json_api_names_an_unknown_id_not_found_with_a_message(client):
    for path in (f"/documents/{'0' * 32}", f"/documents/{'0' * 32}/chunks", f"/sources/{'0' * 32}"):
        error = client.get(path).json()["error"]
        assert error["status"] == 404 and error["type"] == "NotFound" and "no document" in error["message"], path


def test_a_link_kept_from_before_a_re_index_finds_its_document(folder, index, client):
    """The chunk is looked for in the chunks table's earlier versions: the link names no document."""
    old = chunk(client, "notes.md", "harbour")["chunk_id"]
    (folder / "notes.md").write_text("# Notes\n\nThe harbour committee now meets on Mondays.\n")
    try:
        index.sync(str(folder))
        assert client.get(f"/view/{old}").status_code == 404
        page = client.get(f"/view/{old}").text
        assert f'id="current-view" href="/documents/{doc_id(client, "notes.md")}"' in page
        assert "Notes" in page
    finally:
        (folder / "notes.md").write_text("# Notes\n\nThe harbour committee meets on Fridays at the pier.\n")
        index.sync(str(folder))


def test_the_pdf_view_names_the_document_and_shows_the_quote_beside_the_page(client):
    report = doc_id(client, "report.pdf")
    c = chunk(client, "report.pdf", "alpha paragraph")
    page = client.get(f"/view/{c['chunk_id']}").text
    src = re.search(r'<iframe id="pdf" src="([^"]+)" title="([^"]+)"', page)
    assert src.group(1) == f"/sources/{report}/report.pdf{c['fragment']}" and "report" in src.group(2)
    assert page.index('id="quote"') < page.index('id="pdf"')  # beside it (desktop) or above it (phone)
    assert "alpha paragraph opens the left column" in page
    served = client.get(f"/sources/{report}/report.pdf")
    assert served.status_code == 200 and served.headers["content-type"] == "application/pdf"
    assert client.get(f"/sources/{report}/other.pdf").status_code == 404


def test_the_sheet_view_is_one_table_with_the_header_and_the_cited_rows_aligned(client):
    c = chunk(client, "sales.xlsx", "Region 01")
    page = client.get(f"/view/{c['chunk_id']}").text
    assert page.count("<table") == 1 and "Sheet Q1 sales, cells A3:D13" in page and page.count('class="range"') == 1
    head = re.search(r"<thead>(.*?)</thead>", page).group(1)
    body = re.search(r"<tbody>(.*?)</tbody>", page).group(1)
    assert re.findall(r'<th scope="col">(.*?)</th>', head) == ["Region", "Share", "Revenue", "Closed on"]
    cited = re.findall(r'<tr class="cited-row">(.*?)</tr>', body)
    assert len(cited) == 11 and all(r.count("<td>") == 4 for r in cited)  # 11 rows under 4 columns
    assert re.findall(r'<th class="rownum" scope="row">(\d+)</th>', body) == [str(n) for n in range(3, 14)]
    for row in cited:  # each cell is the quote's, in its column
        assert " | ".join(re.findall(r"<td>(.*?)</td>", row)) in c["content"]


def test_the_slide_view_lays_out_the_slide(client):
    c = chunk(client, "deck.pptx", "Revenue grew")
    page = client.get(f"/view/{c['chunk_id']}").text
    slide = re.search(r'<section class="slide" id="cited" aria-label="Slide 1" data-slide="1">(.*?)</section>', page).group(1)
    assert "<h2>Quarterly results</h2>" in slide and '<li class="sub"><mark>The northern region led the growth' in slide
    assert "Speaker notes" in page and "auditors signed off on 2 April" in page
    table = chunk(client, "deck.pptx", "smtp")
    page = client.get(f"/view/{table['chunk_id']}").text
    assert "<h2>Ports</h2>" in page and '<th scope="col">service</th>' in page and "<td>smtp</td>" in page


def test_the_ask_page_offers_to_write_an_answer_only_with_an_endpoint(client, monkeypatch):
    for name in ("CITELINE_LLM_URL", "CITELINE_LLM_MODEL", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert 'id="generate"' not in client.get("/").text
    monkeypatch.setenv("CITELINE_LLM_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CITELINE_LLM_MODEL", "tiny")
    assert 'id="generate" type="checkbox" checked' in client.get("/").text


def test_the_service_warms_the_reranker_of_an_index_that_stores_no_word_piece_vectors(folder, tmp_path):
    """Without stored token vectors (``--no-token-vectors``) every ask encoded its
    candidates; the service encodes them once (before the fix the warm-up found no token table
    and encoded nothing)."""
    import threading

    from citeline.web.app import warm_reranker

    index = Index.create(str(tmp_path / "db"), model=FAKE)
    assert index.sync(str(folder), token_vectors=False).indexed == 5
    reranker = index.snapshot().searcher.default_reranker()
    chunks = index.snapshot().searcher.store.count_chunks(owned=True)
    warm_reranker(index, threading.Event())
    assert reranker._encoded is not None and len(reranker._encoded._items) == chunks
    assert warm_reranker(index, threading.Event()) == 0  # each chunk once
