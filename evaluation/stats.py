"""Interval estimates and paired tests for retrieval metrics.

Recall at 64 queries is a proportion with a wide interval; strategies answer the
same queries, so they are compared per query with the exact sign test.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from scipy import stats


def wilson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (Wilson, 1927).

    With p = successes / n and z the (1 + confidence) / 2 normal quantile::

        centre = (p + z^2 / 2n) / (1 + z^2 / n)
        half   = z * sqrt(p (1 - p) / n + z^2 / 4n^2) / (1 + z^2 / n)

    Args:
        successes: how many of the ``n`` trials succeeded.
        n: the number of trials; 0 gives the uninformative (0.0, 1.0).
        confidence: the coverage, strictly between 0 and 1.

    Returns:
        (lo, hi), clipped to [0, 1].

    Raises:
        ValueError: if not 0 <= successes <= n, or confidence is outside (0, 1).

    >>> tuple(round(x, 3) for x in wilson(32, 64))
    (0.381, 0.619)
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    if not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return 0.0, 1.0
    z = float(stats.norm.ppf((1 + confidence) / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0 or n successes the bound is exactly 0 or 1; rounding would leave 1e-16 off.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test on discordant pairs.

    Under H0 each discordant query is a win with probability 1/2, so
    p = P(|X - m/2| >= |wins - m/2|) for X ~ Binomial(m = wins + losses, 1/2),
    which ``scipy.stats.binomtest`` computes exactly. Ties are not counted.

    Args:
        wins: queries where A did better than B.
        losses: queries where A did worse than B.

    Returns:
        The p-value; 1.0 when there is no discordant pair.

    Raises:
        ValueError: if a count is negative.

    >>> round(sign_test(12, 2), 4)
    0.0129
    """
    if wins < 0 or losses < 0:
        raise ValueError(f"counts must be >= 0, got +{wins}/-{losses}")
    if wins + losses == 0:
        return 1.0
    return float(stats.binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue)


class Paired(NamedTuple):
    wins: int
    losses: int
    p: float


def paired(a: Sequence[float], b: Sequence[float]) -> Paired:
    """Per-query comparison of A and B: discordant counts and the sign-test p-value.

    Args:
        a: A's per-query values (a hit as 1/0, a reciprocal rank, ...), higher better.
        b: B's values for the same queries, in the same order.

    Returns:
        ``Paired(wins, losses, p)``: wins where a > b, losses where a < b; ties
        (equal values) are concordant and ignored.

    Raises:
        ValueError: if the lists differ in length.

    >>> paired([1, 1, 0, 1], [0, 1, 1, 0])
    Paired(wins=2, losses=1, p=1.0)
    """
    if len(a) != len(b):
        raise ValueError(f"paired values need the same queries: {len(a)} vs {len(b)}")
    wins = sum(1 for x, y in zip(a, b) if x > y)
    losses = sum(1 for x, y in zip(a, b) if x < y)
    return Paired(wins, losses, sign_test(wins, losses))
