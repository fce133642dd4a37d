"""The harness end to end on a tiny synthetic corpus, with a deterministic fake embedder.

The corpus is built so that the answers destroyed by chunking are known: one needle
straddles the 512-character boundary of blind chunking (lost under A, kept by B's
overlap and by every boundary strategy). Every strategy makes fewer than 20 chunks, so a
dense search at depth 20 returns all of them and Recall@20 = 1 - destroyed exactly.
"""
import json

import pytest
from click.testing import CliRunner
from fakes import HashEmbedder

from citeline.cli.eval_command import eval_command
from citeline.evaluation import harness as harness_module
from citeline.evaluation.dataset import load_corpus
from citeline.evaluation.harness import EvalConfig, EvalError, run_evaluation
from citeline.evaluation.report import RESULTS, dumps, render
from citeline.query.search import Searcher
from citeline.schemas.retrieval import ASK_K, DEFAULT_RERANK, RerankConfig

CUT = "The zebra protocol retransmits every lost packet after exactly seven heartbeats."
SECOND = "Quokka caches expire when the lighthouse counter reaches ninety."
THIRD = "Walrus indexes are rebuilt nightly from the granite ledger."


def filler(length: int, word: str) -> str:
    """Sentences about ``word``, exactly ``length`` characters, ending with a full stop."""
    text = ""
    n = 0
    while len(text) < length:
        text += f"The {word} note number {n} stays quiet and plain. "
        n += 1
    return text[: length - 1].rstrip() + "." if length > 1 else "."


def pad_to(prefix: str, at: int, word: str) -> str:
    """Filler that makes the next character of ``prefix + filler + ' '`` land at offset ``at``."""
    body = filler(at - len(prefix) - 1, word)
    assert len(prefix + body + " ") == at
    return body


def tiny_corpus(root):
    head = "# Alpha protocols\n\n" + filler(250, "meadow") + "\n\n"
    doc1 = head + pad_to(head, 490, "river") + " " + CUT + " The tail follows the needle here.\n\n"
    doc1 += "## Caches\n\n" + SECOND + " " + filler(300, "forest") + "\n\n" + filler(400, "canyon") + "\n"
    doc2 = "# Beta ledgers\n\n" + THIRD + " " + filler(200, "harbor") + "\n\n## Notes\n\n" + filler(380, "valley") + "\n"
    assert doc1.index(CUT) == 490 and doc1.index(CUT) + len(CUT) > 512  # straddles the blind cut
    for needle, doc in ((SECOND, doc1), (THIRD, doc2)):  # the others cross no multiple of 512
        start = doc.index(needle)
        assert start // 512 == (start + len(needle)) // 512
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "01-alpha.md").write_text(doc1)
    (root / "docs" / "02-beta.md").write_text(doc2)
    gt = [
        ("n1", "01-alpha.md", doc1, CUT, "How often does the zebra protocol retransmit lost packets?",
         "zebra keeps resending stuff, after how many heartbeats?"),
        ("n2", "01-alpha.md", doc1, SECOND, "When do quokka caches expire?", "my quokka cache vanished, lighthouse?"),
        ("n3", "02-beta.md", doc2, THIRD, "How are walrus indexes rebuilt?", "walrus index rebuilt from what ledger"),
    ]
    with open(root / "ground_truth.jsonl", "w") as f:
        for nid, doc, text, needle, course, ticket in gt:
            f.write(json.dumps({"id": nid, "doc": doc, "needle": needle, "course": course, "ticket": ticket,
                                "char_start": text.index(needle)}) + "\n")
    with open(root / "out_of_domain.jsonl", "w") as f:
        f.write(json.dumps({"id": "o1", "query": "What is the capital of France?", "kind": "absurd"}) + "\n")
        f.write(json.dumps({"id": "o2", "query": "How does a GRU update gate work?", "kind": "adjacent"}) + "\n")
    return root


def narrow_fake() -> HashEmbedder:
    """The shared fake with a 64-word-piece window, so that chunks of the tiny corpus truncate."""
    fake = HashEmbedder()
    fake.max_tokens = 64
    return fake


BASIC = ("dense", "bm25", "hybrid")


@pytest.fixture
def corpus(tmp_path):
    return load_corpus(tiny_corpus(tmp_path / "tiny"))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tiny_corpus(tmp_path_factory.mktemp("c") / "tiny")
    return run_evaluation(load_corpus(root), EvalConfig(retrievers=BASIC), embedder=narrow_fake())


def test_destroyed_known_by_construction(results):
    destroyed = {e["strategy"]: e["destroyed_needles"] for e in results["index"]}
    assert destroyed == {"A": ["n1"], "B": [], "C": [], "D": [], "E": [], "F": []}
    for run in results["runs"]:
        assert run["destroyed"] == len(destroyed[run["strategy"]])
        assert (run["needles"], run["queries"]) == (3, 6)
        ranks = {q["id"]: q["rank"] for q in run["per_query"]}
        if run["strategy"] == "A":
            assert ranks["n1:course"] is None and ranks["n1:ticket"] is None
    dense = {r["strategy"]: r for r in results["runs"] if r["retriever"] == "dense"}
    assert all(e["chunks"] <= 20 for e in results["index"])
    assert dense["A"]["recall"]["20"] == pytest.approx(4 / 6)
    assert all(dense[s]["recall"]["20"] == 1.0 for s in "BCDEF")


def test_index_cost(results):
    cost = {e["strategy"]: e for e in results["index"]}
    assert all(cost[s]["header_tokens"] == 0 for s in "ABCD")
    # The header "[Alpha protocols]" / "[Alpha protocols > Caches]" adds 2-4 words per chunk.
    assert all(cost[s]["header_tokens"] >= 2 * cost[s]["chunks"] for s in "EF")
    assert 0 < cost["E"]["header_share"] < 1
    assert all(0 < cost[s]["truncated"] <= cost[s]["chunks"] for s in "ABCDEF")  # window is 64 here
    assert cost["A"]["destroyed_ci"][0] > 0 and cost["B"]["destroyed_ci"][0] == 0


def test_every_strategy_and_retriever_ran(results):
    assert [(r["strategy"], r["retriever"]) for r in results["runs"]] == [(s, r) for s in "ABCDEF" for r in BASIC]
    assert results["config"]["retrievers"] == list(BASIC) and results["skipped"] == []
    # A run's every query has a rank within the depth or None, and a gate window.
    for run in results["runs"]:
        assert all(q["rank"] is None or 1 <= q["rank"] <= 20 for q in run["per_query"])
        assert len(run["ood"]) == 2 and all(len(q["top_distances"]) <= ASK_K for q in run["ood"])


def test_identical_inputs_give_identical_results(corpus, tmp_path):
    config = EvalConfig(strategies=("A", "E"), retrievers=BASIC)
    first = run_evaluation(corpus, config, embedder=narrow_fake())
    second = run_evaluation(corpus, config, embedder=narrow_fake(), db_dir=tmp_path / "kept")
    strip = lambda r: dumps({k: v for k, v in r.items() if k != "timings"})  # noqa: E731
    assert strip(first) == strip(second)
    assert set(first["timings"]) == {"index_s", "query_ms", "total_s"}
    # A kept --db-dir is reused: running again over it changes nothing either.
    third = run_evaluation(corpus, config, embedder=narrow_fake(), db_dir=tmp_path / "kept")
    assert strip(third) == strip(first)


def _without_rerank(monkeypatch):
    real = Searcher.search

    def search(self, query, retriever="dense", k=8, filters=None):
        if retriever == "rerank":
            raise ValueError("unknown retriever 'rerank'")
        return real(self, query, retriever, k)

    monkeypatch.setattr(Searcher, "search", search)


def test_unavailable_rerank_is_skipped_by_default_and_refused_when_asked(corpus, monkeypatch):
    _without_rerank(monkeypatch)
    results = run_evaluation(corpus, EvalConfig(strategies=("C",)), embedder=narrow_fake())
    assert results["config"]["retrievers"] == list(BASIC)
    assert results["skipped"][0]["retriever"] == "rerank" and "unknown retriever" in results["skipped"][0]["reason"]
    with pytest.raises(EvalError, match="'rerank' retriever is not available"):
        run_evaluation(corpus, EvalConfig(strategies=("C",), retrievers=("dense", "rerank")), embedder=narrow_fake())


def test_config_is_checked():
    with pytest.raises(EvalError, match="unknown strategies"):
        EvalConfig(strategies=("G",))
    with pytest.raises(EvalError, match="unknown retrievers"):
        EvalConfig(retrievers=("colbert",))
    with pytest.raises(EvalError, match="between 1 and the depth"):
        EvalConfig(ks=(1, 50))


# ---- the command -----------------------------------------------------------------------


@pytest.fixture
def fake_model(monkeypatch):
    monkeypatch.setattr(harness_module, "load_embedder", lambda config: narrow_fake())


def test_command_writes_report(tmp_path, fake_model):
    root = tiny_corpus(tmp_path / "tiny")
    out = tmp_path / "out"
    result = CliRunner().invoke(eval_command, [str(root), "--out", str(out), "--strategies", "a,C",
                                               "--retrievers", "dense,bm25", "--k", "1,4", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "A/dense" in result.output and "recommended cosine cut" in result.output
    saved = json.loads((out / RESULTS).read_text())
    assert saved["config"]["strategies"] == ["A", "C"] and saved["config"]["ks"] == [1, 4]
    assert {p.name for p in out.iterdir()} == {"results.json", "report.md", "recall_at_k.png", "distances.png",
                                               "frontier.png"}


def test_command_refuses_unavailable_rerank(tmp_path, fake_model, monkeypatch):
    _without_rerank(monkeypatch)
    root = tiny_corpus(tmp_path / "tiny")
    result = CliRunner().invoke(eval_command, [str(root), "--out", str(tmp_path / "o"), "--strategies", "C",
                                               "--retrievers", "rerank", "--no-progress"])
    assert result.exit_code == 1
    assert "'rerank' retriever is not available" in result.output and "Help:" in result.output


@pytest.mark.parametrize("args, code, message", [
    (["--strategies", "A,Z"], 2, "unknown strategies ['Z']"),
    (["--retrievers", "dense,colbert"], 2, "unknown retrievers ['colbert']"),
    (["--k", "1,x"], 2, "whole numbers"),
    (["--k", "0,4"], 2, ">= 1"),
    (["--k", "4,25"], 2, "at most the depth 20"),
    (["--strategies", " , "], 2, "at least one value"),
])
def test_command_errors(tmp_path, args, code, message):
    root = tmp_path / "c"
    root.mkdir()
    result = CliRunner().invoke(eval_command, [str(root), "--out", str(tmp_path / "o"), *args])
    assert result.exit_code == code and message in result.output


def test_command_bad_corpus(tmp_path):
    (tmp_path / "c" / "docs").mkdir(parents=True)
    result = CliRunner().invoke(eval_command, [str(tmp_path / "c"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and "holds no documents" in result.output
    result = CliRunner().invoke(eval_command, [str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2


def test_command_help():
    result = CliRunner().invoke(eval_command, ["--help"])
    assert result.exit_code == 0
    for option in ("--out", "--strategies", "--retrievers", "--k", "--db-dir"):
        assert option in result.output


# ---- rerank configurations ---------------------------------------------------------------


def test_rerank_configurations_parse_and_name_themselves():
    for spec in ("hybrid@25", "dense@50+cos0.25", "union@25", "hybrid*2@50+cos0.5", "bm25@10"):
        assert RerankConfig.parse(spec).spec == spec
    assert DEFAULT_RERANK == RerankConfig.parse(DEFAULT_RERANK.spec)
    for bad in ("dense", "colbert@25", "dense*2@25", "dense@25+cos2", "dense@0", "union@50+prf3"):
        with pytest.raises(ValueError):
            RerankConfig.parse(bad)


@pytest.fixture(scope="module")
def searcher(tmp_path_factory):
    root = tmp_path_factory.mktemp("s")
    corpus = load_corpus(tiny_corpus(root / "tiny"))
    embedder = narrow_fake()
    harness_module.index_strategy(corpus, "E", str(root / "E"), embedder, EvalConfig(strategies=("E",)))
    return Searcher.open(str(root / "E"), embedder)


QUESTION = "zebra protocol heartbeats walrus ledger"


def test_union_is_dense_then_what_only_bm25_found(searcher):
    dense, lexical = searcher.dense(QUESTION, 3), searcher.bm25(QUESTION, 3)
    pool = searcher.candidates(QUESTION, RerankConfig("union", 3))
    ids = [h.chunk_id for h in dense] + [h.chunk_id for h in lexical if h.chunk_id not in {d.chunk_id for d in dense}]
    assert [h.chunk_id for h in pool] == ids and [h.rank for h in pool] == list(range(1, len(ids) + 1))
    every = {h.chunk_id: h.distance for h in searcher.dense(QUESTION, 20)}
    assert all(h.distance == pytest.approx(every[h.chunk_id], abs=1e-6) for h in pool)  # the gate's distance


def test_a_heavy_dense_weight_makes_hybrid_follow_dense(searcher):
    dense = [h.chunk_id for h in searcher.dense(QUESTION, 5)]
    assert [h.chunk_id for h in searcher.hybrid(QUESTION, 5, dense_weight=1000.0)] == dense


def test_rerank_reorders_the_configured_candidates(searcher):
    config = RerankConfig("dense", 3)
    dense = {h.chunk_id for h in searcher.dense(QUESTION, 3)}
    reranked = searcher.rerank(QUESTION, 3, config=config)
    assert {h.chunk_id for h in reranked} == dense and all(h.candidate_rank <= 3 for h in reranked)
    assert searcher.rerank(QUESTION, 4) == searcher.rerank(QUESTION, 4, config=DEFAULT_RERANK)


def test_rerank_configurations_run_beside_the_default(corpus):
    variants = (RerankConfig.parse("dense@5"), RerankConfig.parse("union@5+cos0.5"), DEFAULT_RERANK)
    results = run_evaluation(corpus, EvalConfig(strategies=("E",), rerank_variants=variants, cut=0.9),
                             embedder=narrow_fake())
    labels = [r["retriever"] for r in results["runs"]]
    assert labels == ["dense", "bm25", "hybrid", "rerank", "rerank[dense@5]", "rerank[union@5+cos0.5]"]
    assert results["config"]["rerank_variants"] == ["dense@5", "union@5+cos0.5"]  # the default's twin dropped
    tested = {(c["a"], c["b"], c["metric"]) for c in results["comparisons"]}
    for metric in ("R@1", "R@20", "MRR", "answered", "answered ticket", "R@20 course"):
        assert ("E/rerank[dense@5]", "E/rerank", metric) in tested
    assert ("E/rerank[dense@5]", "E/dense", "R@20") in tested
    assert {e["retriever"] for e in results["answered_honestly"]} == set(labels)
    assert "## Rerank configurations" in render(results)


def test_command_takes_rerank_configurations_and_a_cut(tmp_path, fake_model):
    root = tiny_corpus(tmp_path / "tiny")
    out = tmp_path / "out"
    result = CliRunner().invoke(eval_command, [str(root), "--out", str(out), "--strategies", "E", "--cut", "0.9",
                                               "--rerank-configs", "dense@5,union@5", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "answered honestly E/rerank[union@5]: course" in result.output
    saved = json.loads((out / RESULTS).read_text())
    assert saved["config"]["cut"] == 0.9 and saved["config"]["rerank_variants"] == ["dense@5", "union@5"]
    bad = CliRunner().invoke(eval_command, [str(root), "--out", str(out), "--rerank-configs", "colbert@5"])
    assert bad.exit_code == 2 and "unknown candidate list 'colbert'" in bad.output
