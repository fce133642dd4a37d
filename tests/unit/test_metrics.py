"""Recall@k, MRR and destroyed answers, by hand."""
from __future__ import annotations


import pytest

from citeline.evaluation.metrics import (
    collapse_ws,
    contains_needle,
    destroyed,
    first_relevant_rank,
    hits_at,
    mrr,
    reciprocal_rank,
    recall_at,
)

NEEDLE = "The cache holds 16 tokens per block."


def test_collapse_ws_turns_every_run_into_one_space_and_nothing_else():
    assert collapse_ws("a\n\n b\t\tc") == "a b c"
    assert collapse_ws("  Mixed CASE.  ") == " Mixed CASE. "  # no strip, no lowercasing
    assert collapse_ws("a\u00a0\u2003b") == "a b"  # Unicode spaces are whitespace too


def test_needle_matches_across_line_breaks_and_double_spaces():
    content = "Intro.\nThe cache  holds 16\ntokens per block. More."
    assert contains_needle(content, NEEDLE)


def test_needle_must_be_whole_and_exact_otherwise():
    assert not contains_needle("The cache holds 16 tokens", NEEDLE)  # cut by a boundary
    assert not contains_needle("the cache holds 16 tokens per block.", NEEDLE)  # case
    assert not contains_needle("The cache holds 16 tokens per block", NEEDLE)  # full stop


def test_first_relevant_rank_is_one_based_and_bounded_by_depth():
    ranked = ["nothing", "The cache holds 16", "x " + NEEDLE, NEEDLE]
    assert first_relevant_rank(ranked, NEEDLE) == 3
    assert first_relevant_rank(ranked, NEEDLE, depth=2) is None
    assert first_relevant_rank(["x"] * 20 + [NEEDLE], NEEDLE) is None  # rank 21 > 20
    assert first_relevant_rank([], NEEDLE) is None


def test_recall_at_k_over_hand_ranks():
    ranks = [1, 2, 4, 8, 20, None, 25, 3]
    assert recall_at(ranks, 1) == 1 / 8
    assert recall_at(ranks, 4) == 4 / 8
    assert recall_at(ranks, 8) == 5 / 8
    assert recall_at(ranks, 20) == 6 / 8
    assert hits_at(ranks, 4) == [1, 1, 1, 0, 0, 0, 0, 1]


def test_mrr_counts_only_the_top_20():
    # 1/1 + 1/2 + 1/4 + 1/20 + 0 (None) + 0 (rank 25) = 1.8, over 6 queries
    assert mrr([1, 2, 4, 20, None, 25]) == pytest.approx(1.8 / 6)
    assert reciprocal_rank(20) == 0.05 and reciprocal_rank(21) == 0.0
    assert reciprocal_rank(None) == 0.0
    assert mrr([3, 5], depth=4) == pytest.approx((1 / 3 + 0) / 2)


def test_metrics_accept_qid_dicts():
    ranks = {"q1": 1, "q2": None, "q3": 4, "q4": 10}
    assert recall_at(ranks, 4) == 0.5
    assert mrr(ranks) == pytest.approx((1 + 0 + 0.25 + 0.1) / 4)


def test_empty_query_sets_and_bad_k_are_rejected():
    with pytest.raises(ValueError):
        recall_at([], 4)
    with pytest.raises(ValueError):
        mrr([])
    with pytest.raises(ValueError):
        recall_at([1], 0)


def test_destroyed_lists_needles_no_chunk_contains_whole():
    # A 512-character boundary falls inside the second needle: each half is in a chunk.
    kept = "Alpha beta gamma."
    cut = "Delta epsilon zeta eta."
    chunks = ["Intro. Alpha  beta\ngamma. Then Delta epsilon", " zeta eta. End."]
    assert destroyed([kept, cut], chunks) == [cut]
    assert destroyed([kept, cut], chunks + ["Delta epsilon zeta eta."]) == []
    assert destroyed([kept], []) == [kept]


