"""The results document and the report, from hand-made per-query outcomes (no index, no model)."""
import json
import math

import pytest

from citeline.evaluation.dataset import load_corpus
from citeline.evaluation.harness import EvalConfig, IndexCost, QueryResult, Run
from citeline.evaluation.report import comparisons, dumps, render, sentence, summarize, write

NAN = math.nan


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "mini"
    (root / "docs").mkdir(parents=True)
    text = "# T\n\n" + " ".join(f"Needle number {i} is unique." for i in range(4)) + "\n"
    (root / "docs" / "a.md").write_text(text)
    gt = [{"id": f"q{i}", "doc": "a.md", "needle": f"Needle number {i} is unique.", "course": f"c{i}",
           "ticket": f"t{i}", "char_start": text.index(f"Needle number {i} ")} for i in range(4)]
    (root / "ground_truth.jsonl").write_text("\n".join(json.dumps(g) for g in gt))
    (root / "out_of_domain.jsonl").write_text(json.dumps({"id": "o1", "query": "x", "kind": "absurd"}) + "\n"
                                              + json.dumps({"id": "o2", "query": "y", "kind": "adjacent"}))
    return load_corpus(root)


def q(qid, rank, distances=(0.3, 0.5, 0.6, 0.7), scores=None):
    relevant = tuple(rank == i + 1 for i in range(len(distances)))
    return QueryResult(qid, qid.split(":")[1], True, rank, distances[rank - 1] if rank and rank <= 4 else None,
                       tuple(distances), relevant, scores)


def ood(qid, distances, scores=None):
    return QueryResult(qid, "absurd", False, None, None, tuple(distances), (False,) * len(distances), scores)


def run(strategy, retriever, ranks, scores=None):
    ids = [f"q{i}:{p}" for i in range(4) for p in ("course", "ticket")]
    return Run(strategy, retriever, [q(i, r, scores=scores) for i, r in zip(ids, ranks)],
               [ood("o1", (0.45, 0.8), scores and (0.1, 0.0)), ood("o2", (0.9, 0.95), scores and (0.0, -1.0))], 1.0)


@pytest.fixture
def results(corpus):
    config = EvalConfig(strategies=("A", "B"), retrievers=("dense", "hybrid"))
    costs = {"A": IndexCost("A", 10, 1000, 0, 1, 256, ["q3"], 2.0), "B": IndexCost("B", 11, 1100, 0, 0, 256, [], 2.0)}
    runs = [
        run("A", "dense", [1, 2, 5, None, 1, 3, None, None]),
        run("A", "hybrid", [1, 1, 2, 4, 1, 2, None, None]),
        run("B", "dense", [1, 1, 1, 1, 2, 2, 1, 1]),
        run("B", "hybrid", [1, 1, 1, 1, 2, 2, 1, 1]),
    ]
    return summarize(corpus, config, costs, runs, ("dense", "hybrid"), {"rerank": "not installed"})


def test_schema(results):
    assert {"corpus", "config", "skipped", "index", "runs", "comparisons", "gate", "gate_summary",
            "recommended", "recommended_cut", "timings"} <= set(results)
    assert results["corpus"]["needles"] == 4 and results["corpus"]["queries"] == 8 and results["corpus"]["ood"] == 2
    r = results["runs"][0]
    assert {"strategy", "retriever", "recall", "recall_ci", "mrr", "destroyed", "needles", "queries",
            "per_query", "by_phrasing"} <= set(r)
    assert set(r["recall"]) == set(r["recall_ci"]) == {"1", "4", "8", "20"}
    assert {"id", "phrasing", "rank"} <= set(r["per_query"][0])
    assert {"a", "b", "metric", "wins", "losses", "p"} <= set(results["comparisons"][0])
    assert {"kind", "cut", "bluffs", "ood", "lost", "refused_in_domain"} <= set(results["gate"][0])
    assert results["recommended_cut"] == results["recommended"]["cut"]
    json.loads(dumps(results))  # valid JSON, no NaN


def test_metrics(results):
    a_dense = results["runs"][0]
    assert a_dense["recall"]["1"] == 0.25 and a_dense["recall"]["4"] == 0.5 and a_dense["recall"]["8"] == 0.625
    assert a_dense["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 5 + 1 + 1 / 3) / 8)
    lo, hi = a_dense["recall_ci"]["4"]
    assert lo < 0.5 < hi
    assert a_dense["by_phrasing"]["course"]["recall"]["1"] == 0.5  # q0, q2 course: ranks 1, 1
    assert a_dense["by_phrasing"]["ticket"]["recall"]["1"] == 0.0
    assert a_dense["destroyed"] == 1 and a_dense["needles"] == 4 and a_dense["queries"] == 8
    assert results["index"][0]["destroyed_needles"] == ["q3"]


def test_comparisons(results):
    found = {(c["a"], c["b"], c["metric"]): c for c in results["comparisons"]}
    b_vs_a = found["B/dense", "A/dense", "R@8"]
    assert (b_vs_a["wins"], b_vs_a["losses"], b_vs_a["ties"]) == (3, 0, 5)
    assert b_vs_a["p"] == 0.25 and b_vs_a["separates"] is False
    assert ("A/hybrid", "A/dense", "R@4") in found
    assert not any(c["metric"] == "R@1" for c in results["comparisons"])  # no rerank ran
    with pytest.raises(ValueError, match="same queries"):
        comparisons([results["runs"][0], {**results["runs"][2], "per_query": results["runs"][2]["per_query"][:3]}])


def test_gate(results):
    rows = [g for g in results["gate"] if (g["strategy"], g["retriever"]) == ("A", "dense")]
    assert [g["cut"] for g in rows] == list(EvalConfig().cosine_cuts)
    at_050 = next(g for g in rows if g["cut"] == 0.5)
    # Answers in the window: ranks 1, 2, 1, 3 at 0.3, 0.5, 0.3, 0.6; o1's best hit 0.45 bluffs.
    assert (at_050["bluffs"], at_050["ood"]) == (1, 2)
    assert at_050["lost"] == 2 and at_050["answerable"] == 4  # 0.5 is not under 0.5
    rec = results["recommended"]
    assert (rec["strategy"], rec["retriever"], rec["kind"]) == ("A", "dense", "cosine")
    assert rec["worst_in_domain"] == 0.6 and rec["best_ood"] == 0.45 and rec["separable"] is False
    assert "stricter" in rec["rule"]


def test_rerank_scores_get_their_own_gate(corpus):
    config = EvalConfig(strategies=("E",), retrievers=("rerank",))
    scored = run("E", "rerank", [1, 1, 2, 2, 1, 1, 1, 1], scores=(2.0, 1.0, 0.5, 0.2))
    results = summarize(corpus, config, {"E": IndexCost("E", 5, 50, 5, 0, 256, [], 1.0)}, [scored], ("rerank",), {})
    kinds = {g["kind"] for g in results["gate"]}
    assert kinds == {"cosine", "rerank"}
    summary = next(s for s in results["gate_summary"] if s["kind"] == "rerank")
    assert summary["worst_in_domain"] == 1.0 and summary["best_ood"] == 0.1 and summary["separable"] is True
    assert summary["bluffs"] == 0 and summary["lost"] == 0
    assert all("top_scores" in p for p in results["runs"][0]["per_query"])


def test_sentence_says_whether_the_evidence_separates():
    base = {"a": "E/dense", "b": "C/dense", "metric": "R@20", "ties": 50}
    assert "separates them; E/dense is better" in sentence({**base, "wins": 12, "losses": 2, "p": 0.0129, "separates": True})
    assert "C/dense is better" in sentence({**base, "wins": 0, "losses": 9, "p": 0.0039, "separates": True})
    assert "not distinguishable" in sentence({**base, "wins": 8, "losses": 6, "p": 0.79, "separates": False})
    assert "alike" in sentence({**base, "wins": 0, "losses": 0, "p": 1.0, "separates": False})


def test_report_and_files(results, tmp_path):
    text = render(results)
    for heading in ("## Index cost", "## Recall@k and MRR", "## By phrasing", "## Paired comparisons",
                    "## Refusal gate", "Not run: **rerank**"):
        assert heading in text
    assert "0.500 [" in text and "p = " in text
    report = write(results, tmp_path / "out")
    assert report.read_text().count("![") == 3
    for name in ("results.json", "recall_at_k.png", "distances.png", "frontier.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    saved = (tmp_path / "out" / "results.json").read_text()
    assert json.loads(saved)["runs"][0]["per_query"][0]["id"] == "q0:course"
    lines = saved.splitlines()
    records = [json.loads(line.strip().rstrip(",")) for line in lines if line.strip().startswith("{\"")]
    assert sum("rank" in r for r in records) == 4 * 8  # one line per in-domain query record
    assert sum("wins" in r for r in records) == len(results["comparisons"])
