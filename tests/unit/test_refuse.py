"""The refusal gate: at most 4 chunks, strictly under the cosine cut, else a Refusal."""
from __future__ import annotations

import math

import pytest

from citeline.query.refuse import gate, gate_score
from citeline.schemas.retrieval import Hit, Refusal


def test_keeps_hits_strictly_under_the_cut_in_ranking_order():
    hits = [("a", 0.40), ("b", 0.70), ("c", 0.20), ("d", 0.60)]
    assert gate(hits, cut=0.6) == [("a", 0.40), ("c", 0.20)]


def test_a_distance_equal_to_the_cut_does_not_pass():
    assert gate([("a", 0.5), ("b", 0.499)], cut=0.5) == [("b", 0.499)]


def test_keeps_at_most_four_by_default_and_max_chunks_otherwise():
    hits = [(f"c{i}", 0.1 * i) for i in range(1, 8)]  # 0.1 .. 0.7
    assert [cid for cid, _ in gate(hits, cut=0.65)] == ["c1", "c2", "c3", "c4"]
    assert [cid for cid, _ in gate(hits, cut=0.65, max_chunks=2)] == ["c1", "c2"]


def test_refusal_when_nothing_passes_reports_the_cut_and_the_closest_hit():
    result = gate([("a", 0.80), ("b", 0.72)], cut=0.675, query="what is the capital of France")
    assert result == Refusal("what is the capital of France", 0.675, "cosine", 0.72)
    assert result.message() == (
        'NO ANSWER: nothing under cosine distance 0.675 for "what is the capital of France"'
    )


def test_refusal_message_prints_the_actual_cut_without_float_noise():
    result = gate([("a", 0.9)], cut=0.1 + 0.35, query="q")  # 0.45000000000000007
    assert result.message() == 'NO ANSWER: nothing under cosine distance 0.45 for "q"'


def test_no_hits_at_all_is_a_refusal_without_a_best_distance():
    result = gate([], cut=0.675, query="q")
    assert isinstance(result, Refusal) and result.best is None


def test_nan_distance_never_passes():
    result = gate([("a", math.nan)], cut=0.675)
    assert isinstance(result, Refusal) and result.best is None


def test_hits_are_gated_on_their_distance_and_returned_as_hits():
    hits = [Hit("a", 1, 0.03, "hybrid", distance=0.3), Hit("b", 2, 0.02, "hybrid", distance=0.9)]
    assert gate(hits, cut=0.5) == [hits[0]]


def test_a_fused_score_is_not_a_distance():
    # RRF scores are ~0.03: gating them on a cosine cut would pass everything.
    with pytest.raises(ValueError, match="'hybrid' hit 'a' carries no cosine distance"):
        gate([Hit("a", 1, 0.03, "hybrid")], cut=0.5)


def test_max_chunks_below_one_is_rejected():
    with pytest.raises(ValueError, match="max_chunks"):
        gate([("a", 0.1)], cut=0.5, max_chunks=0)


def test_score_gate_keeps_scores_strictly_over_the_minimum():
    hits = [("a", 3.0), ("b", 0.0), ("c", -1.0), ("d", 1.5)]
    assert gate_score(hits, min_score=0.0) == [("a", 3.0), ("d", 1.5)]


def test_score_gate_refusal_reports_the_highest_score():
    result = gate_score([("a", -3.0), ("b", -1.25)], min_score=0.5, query="q")
    assert result == Refusal("q", 0.5, "rerank", -1.25)
    assert result.message() == 'NO ANSWER: nothing over rerank score 0.5 for "q"'


def test_score_gate_takes_reranked_hits_but_not_distances():
    hits = [Hit("a", 1, 0.1, "rerank", rerank_score=2.0), Hit("b", 2, 0.0, "rerank", rerank_score=-4.0)]
    assert gate_score(hits, min_score=0.0) == [hits[0]]
    with pytest.raises(ValueError, match="'dense' hit 'a' carries no rerank score"):
        gate_score([Hit("a", 1, 0.2, "dense", distance=0.2)], min_score=0.0)


def test_refusal_serialises_for_json_output():
    data = Refusal("q", 0.675, best=0.7).to_dict()
    assert data["refused"] is True and data["threshold"] == 0.675 and data["best"] == 0.7
    assert data["message"].startswith("NO ANSWER: nothing under cosine distance 0.675")


def test_unknown_refusal_kind_is_rejected():
    with pytest.raises(ValueError, match="unknown refusal kind"):
        Refusal("q", 0.5, kind="bm25")
