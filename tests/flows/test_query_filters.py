"""Query-time filters end to end: a synced folder of md/pdf/csv documents in subfolders (fake
embedder; LanceDB and Prefect real), searched and asked through the API, the CLI and HTTP."""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone

import pymupdf
import pytest
from fastapi.testclient import TestClient

from citeline.schemas.retrieval import Filters
from citeline.web.app import create_app
from testkit import invoke, synced_index

pytestmark = pytest.mark.usefixtures("prefect_harness")
CUT = 0.95  # the fake embedder has no calibrated cut
RETRIEVERS = ("dense", "bm25", "hybrid", "rerank")
QUESTION = "harbour committee meets fridays pier"
OLD, NEW = datetime(2020, 1, 1, tzinfo=timezone.utc), datetime(2025, 6, 1, tzinfo=timezone.utc)
HOSTILE = "it's 100%_done.md"
DECOY = "its 100xxdone.md"  # what an unescaped ' or % or _ would also match


def pdf(text: str) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    return doc.tobytes()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("filtered")
    for sub in ("notes", "reports", "data", "odd"):
        (root / sub).mkdir()
    for n in range(5):  # the unfiltered top hits for QUESTION: every word of it
        text = f"# Notes {n}\n\nThe harbour committee meets on Fridays at the pier.\n"
        (root / "notes" / f"n{n}.md").write_text(text)
    for n in range(3):  # one word of QUESTION each
        (root / "reports" / f"r{n}.pdf").write_bytes(pdf(f"Quarterly pier maintenance budget, volume {n}."))
    for n in range(2):
        (root / "data" / f"d{n}.csv").write_text(f"town,asset,cost\nSeaham,pier,{n}00\n")
    (root / "odd" / HOSTILE).write_text("# Odd\n\nThe pier lamp is odd.\n")
    (root / "odd" / DECOY).write_text("# Decoy\n\nThe pier lamp is a decoy.\n")
    for path in root.rglob("*.*"):
        when = NEW if path.parent.name == "reports" else OLD
        os.utime(path, (when.timestamp(), when.timestamp()))
    return root


@pytest.fixture(scope="module")
def index(folder, tmp_path_factory, prefect_harness):
    return synced_index(folder, tmp_path_factory, indexed=12)


ALL = {f"notes/n{n}.md" for n in range(5)} | {f"reports/r{n}.pdf" for n in range(3)} | {
    "data/d0.csv", "data/d1.csv", f"odd/{HOSTILE}", f"odd/{DECOY}"}


@pytest.mark.parametrize("filters, keep", [
    (Filters(paths=("reports/",)), lambda p: p.startswith("reports/")),
    (Filters(paths=("*.csv", "notes/n1*")), lambda p: p.endswith(".csv") or p == "notes/n1.md"),
    (Filters(types=("pdf",)), lambda p: p.endswith(".pdf")),
    (Filters(types=("csv",)), lambda p: p.endswith(".csv")),  # the extractor is "csv" too
    (Filters(types=("text",)), lambda p: p.endswith(".md")),  # the extractor name, not an extension
    (Filters.parse(since="2024-01-01"), lambda p: p.startswith("reports/")),
    (Filters.parse(paths=["notes/", "reports/"], since="2024-01-01"), lambda p: p.startswith("reports/")),
    (Filters(paths=(f"odd/{HOSTILE[:10]}",)), lambda p: p == f"odd/{HOSTILE}"),
    (Filters(paths=("odd/it's 100%_*",)), lambda p: p == f"odd/{HOSTILE}"),
    (Filters(paths=("x' OR '1'='1",)), lambda p: False),
])
@pytest.mark.parametrize("retriever", RETRIEVERS)
def test_each_filter_returns_exactly_the_matching_documents(index, filters, keep, retriever):
    found = {c.path for c in index.search("pier", k=50, retriever=retriever, filters=filters)}
    assert found == {p for p in ALL if keep(p)}


@pytest.mark.parametrize("retriever", RETRIEVERS)
def test_k_results_come_back_when_the_unfiltered_top_k_all_fail_the_filter(index, retriever):
    unfiltered = index.search(QUESTION, k=3, retriever=retriever)
    assert all(c.path.startswith("notes/") for c in unfiltered)  # a post-filter would leave nothing
    found = index.search(QUESTION, k=3, retriever=retriever, filters=Filters(types=("pdf",)))
    assert len(found) == 3 and {c.path for c in found} == {f"reports/r{n}.pdf" for n in range(3)}


def test_ask_judges_only_filtered_hits_and_refuses_when_none_match(index):
    answer = index.ask(QUESTION, cut=CUT, filters=Filters(types=("csv",)))
    assert not answer.refused and {c.path for c in answer.citations} <= {"data/d0.csv", "data/d1.csv"}
    for retriever in RETRIEVERS:
        nothing = index.ask(QUESTION, cut=CUT, retriever=retriever, filters=Filters(paths=("nowhere/",)))
        assert nothing.refused and nothing.citations == () and nothing.refusal.message().startswith("NO ANSWER")


def test_the_index_checks_clean_with_the_filter_indexes(index):
    assert index.check().ok


@pytest.fixture(scope="module")
def client(index):
    with TestClient(create_app(index, poll_s=0), base_url="http://127.0.0.1") as client:
        yield client


def test_http_search_takes_the_filters(client):
    found = client.get("/search", params={"q": QUESTION, "k": 3, "type": "pdf"}).json()["results"]
    assert len(found) == 3 and all(r["path"].startswith("reports/") for r in found)
    both = client.get("/search", params=[("q", "pier"), ("k", 50), ("path", "data/"), ("path", "odd/it's")])
    assert {r["path"] for r in both.json()["results"]} == {"data/d0.csv", "data/d1.csv", f"odd/{HOSTILE}"}
    recent = client.get("/search", params={"q": "pier", "k": 50, "since": "2024-01-01T00:00:00+00:00"})
    assert {r["path"] for r in recent.json()["results"]} == {f"reports/r{n}.pdf" for n in range(3)}


@pytest.mark.parametrize("params", [{"since": "last tuesday"}, {"type": "p df"}, {"path": ""}])
def test_http_bad_filter_values_are_400(client, params):
    response = client.get("/search", params={"q": "pier", **params})
    assert response.status_code == 400 and response.json()["error"]["type"] == "ValueError"
    asked = client.post("/ask", json={"question": "pier", "cut": CUT, **{k: [v] if k != "since" else v
                                                                       for k, v in params.items()}})
    assert asked.status_code == 400


def test_http_ask_filters_and_refuses_when_nothing_matches(client):
    body = {"question": QUESTION, "cut": CUT, "retriever": "dense", "type": ["pdf"]}
    answer = client.post("/ask", json=body).json()
    assert not answer["refused"] and {c["path"][:8] for c in answer["citations"]} == {"reports/"}
    refused = client.post("/ask", json={**body, "path": ["nowhere/"]}).json()
    assert refused["refused"] and refused["refusal"]["message"].startswith("NO ANSWER")


def test_cli_search_and_ask_take_the_filters(index):
    result = invoke("search", QUESTION, "--db", index.uri, "-k", 3, "--type", "pdf", "--json")
    assert result.exit_code == 0, result.output
    assert [r["path"][:8] for r in json.loads(result.output)["results"]] == ["reports/"] * 3
    result = invoke("ask", QUESTION, "--db", index.uri, "--cut", CUT, "--path", "nowhere/")
    assert result.exit_code == 0 and result.output.startswith("NO ANSWER"), result.output
    result = invoke("search", "pier", "--db", index.uri, "--since", "2024-99-01")
    assert result.exit_code == 2 and "bad date" in result.output


def test_cli_chunks_lists_offsets_labels_and_token_counts(index, folder):
    result = invoke("chunks", "reports/r1.pdf", "--db", index.uri, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["path"] == "reports/r1.pdf" and data["chunks"]
    text = index.canonical(data["document_id"])
    for chunk in data["chunks"]:
        assert text[chunk["start"]:chunk["end"]] == chunk["content"] and chunk["tokens"] > 0
        assert chunk["label"] and chunk["fragment"].startswith("#page=1")
    local = invoke("chunks", folder / "odd" / HOSTILE, "--db", index.uri)  # a file here, by its real path
    assert local.exit_code == 0 and "odd/it's 100%_done.md" in local.output and "tokens" in local.output
    missing = invoke("chunks", "nowhere.md", "--db", index.uri)
    assert missing.exit_code == 1 and "no document" in missing.output
