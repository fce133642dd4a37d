"""*Answered honestly*: the needle among the sources ask keeps after its gate, from hand-made hit lists."""
import json

import pytest

from citeline.evaluation.dataset import load_corpus
from citeline.evaluation.harness import EvalConfig, IndexCost, QueryResult, Run
from citeline.evaluation.honest import Outcome, by_phrasing, gated, tally
from citeline.evaluation.report import render, summarize
from citeline.schemas.retrieval import ChunkRow, Hit


def hits(*distances, scores=None):
    """Hits c1, c2, ... at these cosine distances (and rerank scores), ranked in this order."""
    out = []
    for i, d in enumerate(distances, 1):
        chunk = ChunkRow(f"c{i}", "d", "a.md", "T", "", 0, 1, f"chunk {i} of the notes", "")
        out.append(Hit(f"c{i}", i, d, "rerank", chunk, distance=d, rerank_score=scores and scores[i - 1]))
    return out


def relevant_at(position, n=6):
    return [i == position for i in range(1, n + 1)]


def test_the_needle_kept_is_answered():
    kept = gated(hits(0.30, 0.40, 0.60), relevant_at(2, 3), "q", cut=0.45, k=4)
    assert kept == (False, True)  # c1 and c2 pass; c2 holds the needle
    assert Outcome("course", True, (False, True, False), kept).answered


def test_a_needle_over_the_cut_is_lost_though_other_sources_pass():
    kept = gated(hits(0.30, 0.50), relevant_at(2, 2), "q", cut=0.45, k=4)
    assert kept == (False,)
    outcome = Outcome("ticket", True, (False, True), kept)
    assert not outcome.answered and outcome.lost and not outcome.refused


def test_nothing_passing_is_a_refusal():
    kept = gated(hits(0.50, 0.60), relevant_at(1, 2), "q", cut=0.45, k=4)
    assert kept == ()
    outcome = Outcome("course", True, (True, False), kept)
    assert outcome.refused and outcome.lost and not outcome.answered


def test_only_the_first_k_count_as_ask_retrieves_k():
    # The needle at rank 5 passes the cut, but ask retrieves 4: not answered, and not "found" either.
    listed = hits(0.40, 0.41, 0.42, 0.43, 0.20)
    kept = gated(listed, relevant_at(5, 5), "q", cut=0.45, k=4)
    assert kept == (False,) * 4
    outcome = Outcome("course", True, tuple(relevant_at(5, 5)[:4]), kept)
    assert not outcome.answered and not outcome.found and not outcome.lost


def test_the_rerank_score_cut_applies_when_ask_has_one():
    listed = hits(0.30, 0.35, scores=[0.5, 0.7])
    assert gated(listed, relevant_at(1, 2), "q", cut=0.45, k=4) == (True, False)
    assert gated(listed, relevant_at(1, 2), "q", cut=0.45, k=4, min_rerank_score=0.6) == (False,)


def test_out_of_domain_with_anything_passing_bluffs():
    outcomes = [Outcome("absurd", False, (False, False), gated(hits(0.40, 0.6), [False, False], "q", 0.45, 4)),
                Outcome("adjacent", False, (False,), gated(hits(0.50), [False], "q", 0.45, 4))]
    assert tally(outcomes).bluffs == 1 and tally(outcomes).ood == 2


def test_tally_per_phrasing_shares_the_bluffs():
    outcomes = [
        Outcome("course", True, (True,), (True,)),
        Outcome("course", True, (False, True), (False,)),  # lost
        Outcome("ticket", True, (False,), ()),  # refused, never found
        Outcome("ticket", True, (True,), (True,)),
        Outcome("absurd", False, (False,), (False,)),  # bluff
    ]
    every = tally(outcomes)
    assert (every.answered, every.queries, every.refused, every.lost, every.found) == (2, 4, 1, 1, 3)
    assert (every.bluffs, every.ood) == (1, 1) and every.share == 0.5
    split = by_phrasing(outcomes, ("course", "ticket"))
    assert (split["course"].answered, split["course"].queries, split["course"].lost) == (1, 2, 1)
    assert (split["ticket"].answered, split["ticket"].refused, split["ticket"].bluffs) == (1, 1, 1)


# ---- in the results document and the report ------------------------------------------


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "mini"
    (root / "docs").mkdir(parents=True)
    text = "# T\n\n" + " ".join(f"Needle number {i} is unique." for i in range(2)) + "\n"
    (root / "docs" / "a.md").write_text(text)
    gt = [{"id": f"q{i}", "doc": "a.md", "needle": f"Needle number {i} is unique.", "course": f"c{i}",
           "ticket": f"t{i}", "char_start": text.index(f"Needle number {i} ")} for i in range(2)]
    (root / "ground_truth.jsonl").write_text("\n".join(json.dumps(g) for g in gt))
    (root / "out_of_domain.jsonl").write_text(json.dumps({"id": "o1", "query": "x", "kind": "absurd"}))
    return load_corpus(root)


def result(qid, top, kept, in_domain=True):
    rank = next((i for i, r in enumerate(top, 1) if r), None)
    return QueryResult(qid, qid.split(":")[1] if in_domain else "absurd", in_domain, rank, 0.3 if rank else None,
                       (0.3,) * len(top), tuple(top), None, kept)


def honest_run(kept_ticket):
    queries = [result("q0:course", (True,), (True,)), result("q0:ticket", (False, True), kept_ticket),
               result("q1:course", (True,), (True,)), result("q1:ticket", (False,), ())]
    return Run("E", "dense", queries, [result("o1:absurd", (False,), (), in_domain=False)], 1.0)


def test_report_leads_with_answered_honestly(corpus):
    config = EvalConfig(strategies=("E",), retrievers=("dense",))
    results = summarize(corpus, config, {"E": IndexCost("E", 2, 20, 0, 0, 256, [], 1.0)},
                        [honest_run((False,))], ("dense",), {})
    [entry] = results["answered_honestly"]
    assert entry["by_phrasing"]["course"]["answered"] == 2 and entry["by_phrasing"]["ticket"]["answered"] == 0
    assert entry["all"]["lost"] == 1 and entry["all"]["refused"] == 1 and entry["all"]["bluffs"] == 0
    assert [q["answered"] for q in results["runs"][0]["per_query"]] == [True, False, True, False]
    text = render(results)
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Answered honestly"  # the headline, before every other table
    # course answered, ticket answered, course within reach, ticket within reach (q0: cut, shown as closest), ...
    assert "| E | dense | 1.000 (2/2) | 0.000 (0/2) | 2/2 | 1/2 | 0.500 (2/4) | 1/4 | 1/3 | 0/1 |" in text


def test_a_needle_retrieved_but_not_kept_is_within_reach_beside_a_refusal_or_an_answer():
    """ask shows its top k that the gate did not keep as closest passages, on a refusal and beside
    the sources of an answer: a needle there is in reach; one never retrieved is not."""
    refused_found = Outcome("ticket", True, (False, True), ())
    passed_other = Outcome("ticket", True, (False, True), (False,))
    never_found = Outcome("ticket", True, (False, False), ())
    other_sources = Outcome("ticket", True, (False, False), (False,))
    answered = Outcome("course", True, (True,), (True,))
    assert refused_found.within_reach and not refused_found.answered
    assert passed_other.within_reach and not passed_other.answered
    assert not never_found.within_reach and not other_sources.within_reach and answered.within_reach
    assert tally([refused_found, passed_other, never_found, other_sources, answered]).within_reach == 3
    assert not Outcome("absurd", False, (False,), ()).within_reach


def test_answered_is_compared_with_the_paired_test(corpus):
    config = EvalConfig(strategies=("E",), retrievers=("dense", "rerank"))
    better = Run("E", "rerank", honest_run((True,)).queries, honest_run((True,)).ood, 1.0)
    results = summarize(corpus, config, {"E": IndexCost("E", 2, 20, 0, 0, 256, [], 1.0)},
                        [honest_run((False,)), better], ("dense", "rerank"), {})
    found = {(c["a"], c["b"], c["metric"]): c for c in results["comparisons"]}
    test = found["E/rerank", "E/dense", "answered"]
    assert (test["wins"], test["losses"], test["ties"]) == (1, 0, 3)


def test_no_cut_means_not_measured(corpus):
    run = honest_run(None)
    config = EvalConfig(strategies=("E",), retrievers=("dense",))
    results = summarize(corpus, config, {"E": IndexCost("E", 2, 20, 0, 0, 256, [], 1.0)}, [run], ("dense",), {})
    assert results["answered_honestly"] == []
    assert "Not measured: no refusal cut" in render(results)


def test_the_nearest_chunks_ask_reads_beside_a_reranked_list_are_measured_too():
    """ask's cosine gate reads the k nearest beside the reranked top k (query.ask.gate_window):
    the evaluation gates the same window, or it would count an answer ask gives as refused."""
    listed = hits(0.50, 0.55, 0.60, 0.62, 0.30)  # c5, the nearest, reranked fifth
    nearest = [(listed[4], True), (listed[0], False)]
    assert gated(listed, relevant_at(5, 5), "q", cut=0.45, k=4) == ()
    assert gated(listed, relevant_at(5, 5), "q", cut=0.45, k=4, nearest=nearest) == (True,)
