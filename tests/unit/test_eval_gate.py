"""The refusal frontier on hand-made distances, where every count is known by hand."""
import math

import pytest

from citeline.evaluation.gate import best_ood, cosine_grid, recommend, score_grid, separable, worst_answer
from citeline.query.thresholds import GatePoint, GateQuery, gate_point, passing
from citeline.query.thresholds import sweep as frontier
from citeline.schemas.retrieval import RERANK

NAN = math.nan

# Three answerable in-domain queries (answer at position 0, 1, 2), one whose answer was not
# retrieved in the window, and three out-of-domain queries.
QUERIES = [
    GateQuery((0.20, 0.50, 0.60, 0.70), (True, False, False, False), True),   # answer at 0.20
    GateQuery((0.30, 0.45, 0.70, 0.80), (False, True, False, False), True),   # answer at 0.45
    GateQuery((0.55, 0.58, 0.62, 0.90), (False, False, True, False), True),   # answer at 0.62
    GateQuery((0.65, 0.70, 0.75, 0.80), (False, False, False, False), True),  # not in window
    GateQuery((0.40, 0.60, 0.70, 0.70), (False,) * 4, False),                 # best OOD: 0.40
    GateQuery((0.52, 0.60, 0.70, 0.70), (False,) * 4, False),
    GateQuery((0.85, 0.90, 0.95, 0.99), (False,) * 4, False),
]


@pytest.mark.parametrize("cut, bluffs, lost, refused", [
    (0.10, 0, 3, 4),   # nothing passes: every answerable query lost, every in-domain query refused
    (0.25, 0, 2, 3),   # only 0.20 passes
    (0.46, 1, 1, 2),   # 0.45 passes (strict <), 0.40 OOD bluffs; 0.62 answer still out
    (0.60, 2, 1, 1),   # 0.55/0.58 pass for query 3 but its answer (0.62) does not: lost, not refused
    (0.63, 2, 0, 1),   # the unanswerable in-domain query (0.65) is still refused
    (0.90, 3, 0, 0),
])
def test_gate_point_counts(cut, bluffs, lost, refused):
    point = gate_point(QUERIES, cut)
    assert (point.bluffs, point.lost, point.refused_in_domain) == (bluffs, lost, refused)
    assert (point.ood, point.answerable, point.in_domain) == (3, 3, 4)


def test_cut_is_strict_like_the_query_side():
    assert passing(QUERIES[1], 0.45) == [0]          # 0.45 is not under 0.45
    assert passing(QUERIES[1], 0.4500001) == [0, 1]


def test_only_the_window_is_gated():
    q = GateQuery((0.9, 0.9, 0.9, 0.9, 0.1), (False, False, False, False, True), True)
    point = gate_point([q], 0.5)
    assert (point.answerable, point.lost, point.refused_in_domain) == (0, 0, 1)
    assert gate_point([q], 0.5, window=5).answerable == 1


def test_missing_distance_never_passes():
    q = GateQuery((NAN, 0.3), (True, False), True)
    assert passing(q, 0.9) == [1]
    assert gate_point([q], 0.9).lost == 1


def test_rerank_scores_pass_when_higher():
    q = GateQuery((2.0, -1.0), (False, True), True)
    ood = GateQuery((0.5,), (False,), False)
    assert passing(q, 0.0, RERANK) == [0]
    point = gate_point([q, ood], -2.0, RERANK)
    assert (point.bluffs, point.lost) == (1, 0)
    assert worst_answer([q], RERANK) == -1.0 and best_ood([ood], RERANK) == 0.5
    assert not separable(-1.0, 0.5, RERANK) and separable(1.0, 0.5, RERANK)


def test_worst_answer_and_best_ood():
    assert worst_answer(QUERIES) == pytest.approx(0.62)
    assert best_ood(QUERIES) == pytest.approx(0.40)
    assert not separable(0.62, 0.40)
    easy = [GateQuery((0.2,), (True,), True), GateQuery((0.5,), (False,), False)]
    assert separable(worst_answer(easy), best_ood(easy))
    cut = recommend(frontier(easy, cosine_grid(0.1, 0.6, 0.1)))
    assert (cut.cut, cut.bluffs, cut.lost) == (0.3, 0, 0)  # 0.3..0.5 all perfect: the strictest wins


def test_recommend_minimises_bluffs_plus_lost_ties_to_stricter():
    points = frontier(QUERIES, cosine_grid(0.1, 0.9, 0.05))
    best = recommend(points)
    assert best.bluffs + best.lost == min(p.bluffs + p.lost for p in points)
    assert best.cut == min(p.cut for p in points if p.bluffs + p.lost == best.bluffs + best.lost)
    scores = [GatePoint(RERANK, c, 0, 1, 0, 1, 0, 1) for c in (1.0, 2.0)]
    assert recommend(scores).cut == 2.0  # a higher score cut is the stricter one
    assert recommend([]) is None


def test_grids():
    grid = cosine_grid()
    assert grid[0] == 0.3 and grid[-1] == 0.8 and len(grid) == 21 and 0.45 in grid
    assert score_grid([1.0, NAN, 3.0], points=3) == [1.0, 2.0, 3.0]
    assert score_grid([]) == [] and score_grid([2.0, 2.0]) == [2.0]
    with pytest.raises(ValueError, match="step"):
        cosine_grid(0.5, 0.4)


def test_bad_inputs():
    with pytest.raises(ValueError, match="relevance"):
        GateQuery((0.1, 0.2), (True,), True)
    with pytest.raises(ValueError, match="kind"):
        passing(QUERIES[0], 0.5, "bm25")
