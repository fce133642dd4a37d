"""Reciprocal rank fusion: ranks only, 1/(k + rank), deterministic ties."""
from __future__ import annotations

import pytest

from citeline.query.fuse import rrf
from citeline.schemas.retrieval import Hit


def test_scores_are_sums_of_reciprocal_ranks_with_k_60():
    # a: ranks 1 and 2 -> 1/61 + 1/62; c: ranks 3 and 1 -> 1/63 + 1/61;
    # b: rank 2 only -> 1/62; d: rank 3 only -> 1/63.
    hits = rrf([["a", "b", "c"], ["c", "a", "d"]])
    assert [h.chunk_id for h in hits] == ["a", "c", "b", "d"]
    expected = [1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62, 1 / 63]
    assert [h.score for h in hits] == pytest.approx(expected, rel=1e-12)
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    assert all(isinstance(h, Hit) and h.retriever == "hybrid" for h in hits)


def test_small_k_lets_one_first_place_beat_two_middling_ranks():
    # k=1: x first in one list -> 1/2 = 0.5; y third in both -> 1/4 + 1/4 = 0.5 (tie);
    # z second in one list -> 1/3. With k=60 the two votes of y win instead.
    rankings = [["x", "z", "y"], ["w", "v", "y"]]
    assert rrf(rankings, k=60)[0].chunk_id == "y"  # 2/63 > 1/61
    by_id = {h.chunk_id: h.score for h in rrf(rankings, k=1)}
    assert by_id["x"] == pytest.approx(0.5) and by_id["y"] == pytest.approx(0.5)
    assert by_id["z"] == pytest.approx(1 / 3)


def test_exact_tie_is_broken_by_best_single_rank_then_id():
    # k=1: p is 2nd in both lists -> 1/3 + 1/3; q is 1st and 5th -> 1/2 + 1/6.
    # Both are exactly 2/3; q reached rank 1, so q comes first.
    a = ["q", "p", "f1", "f2", "f3"]
    b = ["g1", "p", "g2", "g3", "q"]
    order = [h.chunk_id for h in rrf([a, b], k=1)]
    assert order.index("q") < order.index("p")
    assert order.index("q") == order.index("p") - 1
    # Same score and same best rank: alphabetical id.
    assert [h.chunk_id for h in rrf([["m"], ["e"]])] == ["e", "m"]


def test_exact_tie_is_found_even_where_float_sums_disagree():
    # k=60: p at ranks 3 and 80 -> 1/63 + 1/140 = 20/1260 + 9/1260 = 29/1260;
    #       q at ranks 24 and 30 -> 1/84 + 1/90 = 15/1260 + 14/1260 = 29/1260.
    # As floats q's sum comes out one ulp larger; the exact tie goes to p (best rank 3).
    a = [f"a{i}" for i in range(1, 81)]
    b = [f"b{i}" for i in range(1, 81)]
    a[3 - 1], a[24 - 1] = "p", "q"
    b[30 - 1], b[80 - 1] = "q", "p"
    order = [h.chunk_id for h in rrf([a, b])]
    assert order.index("p") + 1 == order.index("q")
    scores = {h.chunk_id: h.score for h in rrf([a, b])}
    assert scores["p"] == pytest.approx(29 / 1260, rel=1e-15)
    assert scores["q"] == pytest.approx(29 / 1260, rel=1e-15)


def test_only_ranks_matter_not_the_order_of_the_lists():
    one = rrf([["a", "b", "c"], ["b", "c", "a"]])
    two = rrf([["b", "c", "a"], ["a", "b", "c"]])
    assert one == two


def test_limit_keeps_the_top_of_the_fused_list():
    hits = rrf([["a", "b", "c"], ["c", "a", "d"]], limit=2)
    assert [(h.chunk_id, h.rank) for h in hits] == [("a", 1), ("c", 2)]
    assert rrf([["a"]], limit=0) == []


def test_id_repeated_within_one_ranking_votes_once_at_its_best_rank():
    hits = rrf([["a", "b", "a"]])
    assert {h.chunk_id: h.score for h in hits} == {
        "a": pytest.approx(1 / 61),
        "b": pytest.approx(1 / 62),
    }


def test_empty_inputs_give_no_hits():
    assert rrf([]) == []
    assert rrf([[], []]) == []


@pytest.mark.parametrize("k", [0, -1, -60])
def test_non_positive_k_is_rejected(k):
    with pytest.raises(ValueError, match="k must be greater than 0"):
        rrf([["a"]], k=k)


def test_negative_limit_is_rejected():
    with pytest.raises(ValueError, match="limit"):
        rrf([["a"]], limit=-1)


def test_retriever_name_is_stamped_on_hits():
    assert rrf([["a"]], retriever="fused")[0].retriever == "fused"


def test_rankings_are_not_mutated():
    rankings = [["a", "b"], ("c",)]
    rrf(rankings)
    assert rankings == [["a", "b"], ("c",)]


def test_hit_rank_counts_from_one():
    with pytest.raises(ValueError, match="rank counts from 1"):
        Hit("a", 0, 0.1, "dense")
