"""Reciprocal rank fusion: combine rankings by position, never by score.

Cosine distances and BM25 scores live on different scales, so the fused score uses
only each chunk's rank in each list.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from citeline.schemas.retrieval import HYBRID, Hit


def rrf(
    rankings: Sequence[Sequence[str]],
    k: int = 60,
    limit: int | None = None,
    retriever: str = HYBRID,
    weights: Sequence[float] | None = None,
) -> list[Hit]:
    """Fuse ranked id lists with reciprocal rank fusion (Cormack, Clarke & Buettcher, 2009).

    score(d) = sum over rankings r containing d of 1 / (k + rank_r(d)), with ranks
    counted from 1. This is the formula of lancedb's ``RRFReranker`` (``1 / (i + K)``
    over ``enumerate(ids, 1)``, K <= 0 rejected). Two differences, both for
    determinism: an id repeated within one ranking counts once, at its best rank;
    and equal scores (compared exactly, as fractions) are ordered by the best single
    rank the id reached, then by id.

    Args:
        rankings: one list of chunk ids per retriever, best first.
        k: the smoothing constant; 60 in the paper and in lancedb.
        limit: keep only the first ``limit`` fused hits; None keeps all.
        retriever: the name stamped on the returned hits.
        weights: one weight per ranking multiplying its 1 / (k + rank) terms (weighted
            RRF); None weighs every ranking 1.

    Returns:
        Hits in fused order, ranks from 1, ``score`` the fused RRF score.

    Raises:
        ValueError: if ``k`` <= 0, ``limit`` < 0, or the weights are not one positive
            number per ranking.

    >>> [(h.chunk_id, h.rank) for h in rrf([["a", "b"], ["b", "c"]])]
    [('b', 1), ('a', 2), ('c', 3)]
    >>> [h.chunk_id for h in rrf([["a", "b"], ["b", "c"]], k=1, weights=[3, 1])]
    ['a', 'b', 'c']
    """
    if k <= 0:
        raise ValueError(f"k must be greater than 0, got {k}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    weights = [1.0] * len(rankings) if weights is None else [float(w) for w in weights]
    if len(weights) != len(rankings) or min(weights, default=1.0) <= 0:
        raise ValueError(f"need one positive weight per ranking, got {weights} for {len(rankings)}")
    ranks = _ranks_by_id(rankings)
    scores = {cid: math.fsum(weights[i] / (k + r) for i, r in rs) for cid, rs in ranks.items()}
    best = {cid: min(r for _, r in rs) for cid, rs in ranks.items()}
    order = sorted(scores, key=lambda cid: (-scores[cid], best[cid], cid))
    order = _settle_near_ties(order, scores, ranks, k, weights)
    if limit is not None:
        order = order[:limit]
    return [
        Hit(chunk_id=cid, rank=i, score=scores[cid], retriever=retriever)
        for i, cid in enumerate(order, 1)
    ]


def _ranks_by_id(rankings: Sequence[Sequence[str]]) -> dict[str, list[tuple[int, int]]]:
    """Each id's (ranking, rank) in every ranking that holds it (an id repeated in one list counts once)."""
    ranks: dict[str, list[tuple[int, int]]] = {}
    for which, ranking in enumerate(rankings):
        seen: set[str] = set()
        for rank, cid in enumerate(ranking, 1):
            if cid not in seen:  # a retriever that repeats an id does not vote twice
                seen.add(cid)
                ranks.setdefault(cid, []).append((which, rank))
    return ranks


# Float sums of 1/(k + r) are within a few ulps (~1e-17) of their exact value, so
# ids whose float scores are more than _NEAR apart are already in exact order; only
# runs closer than that are re-sorted exactly.
_NEAR = 1e-12


def _settle_near_ties(
    order: list[str], scores: dict[str, float], ranks: dict[str, list[tuple[int, int]]], k: int,
    weights: Sequence[float],
) -> list[str]:
    """Re-sort runs of near-equal float scores by their exact sums, as fractions.

    1/3 + 1/3 and 1/2 + 1/6 must tie exactly so that the documented tie-break
    (best single rank, then id) decides, not the rounding of the float sums.
    Fractions are built only for those runs: a few ids, not the whole list.
    """
    def exact(cid: str) -> tuple:
        total = sum(Fraction(weights[i]) / (Fraction(k) + r) for i, r in ranks[cid])
        return (-total, min(r for _, r in ranks[cid]), cid)

    settled: list[str] = []
    run: list[str] = []
    for cid in order:
        if run and scores[run[-1]] - scores[cid] > _NEAR:
            settled.extend(sorted(run, key=exact) if len(run) > 1 else run)
            run = []
        run.append(cid)
    settled.extend(sorted(run, key=exact) if len(run) > 1 else run)
    return settled
