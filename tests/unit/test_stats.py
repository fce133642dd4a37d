"""Wilson intervals and exact sign tests against values computed by hand."""
from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from citeline.evaluation.stats import paired, sign_test, wilson

Z95 = 1.959963984540054  # the textbook 97.5% normal quantile, written out


def _wilson_closed_form(s: int, n: int, z: float = Z95) -> tuple[float, float]:
    p = s / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _two_sided_sign_p(wins: int, losses: int) -> float:
    m, low = wins + losses, min(wins, losses)
    return min(1.0, 2 * sum(math.comb(m, i) for i in range(low + 1)) / 2**m)


def test_wilson_of_half_at_64_queries():
    # p = .5, z^2 = 3.8415: centre .5, half = 1.96 * sqrt(.25/64 + 3.8415/16384) / 1.06002 = .1190
    lo, hi = wilson(32, 64)
    assert (round(lo, 3), round(hi, 3)) == (0.381, 0.619)
    assert (lo, hi) == pytest.approx(_wilson_closed_form(32, 64), abs=1e-12)
    assert hi - 0.5 == pytest.approx(0.5 - lo)  # symmetric at p = .5
    assert hi - lo == pytest.approx(0.238, abs=5e-4)  # about +/-0.12 at this n


def test_wilson_agrees_with_scipys_own_wilson_interval():
    for s, n in [(32, 64), (7, 64), (57, 64), (1, 3), (20, 21)]:
        ci = sps.binomtest(s, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson(s, n) == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_wilson_at_the_edges():
    # s = 0: lo = 0 and hi = z^2 / (n + z^2) = 3.8415 / 13.8415 = .2775
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(Z95**2 / (10 + Z95**2), rel=1e-12)
    lo, hi = wilson(10, 10)
    assert hi == 1.0 and lo == pytest.approx(10 / (10 + Z95**2), rel=1e-12)
    assert wilson(0, 0) == (0.0, 1.0)


def test_wilson_other_confidence_levels_use_their_own_quantile():
    z99 = 2.5758293035489004
    assert wilson(32, 64, 0.99) == pytest.approx(_wilson_closed_form(32, 64, z99), abs=1e-12)
    assert wilson(32, 64, 0.99)[0] < wilson(32, 64)[0]


@pytest.mark.parametrize("s, n, conf", [(-1, 5, 0.95), (6, 5, 0.95), (1, 5, 1.0), (1, 5, 0.0)])
def test_wilson_rejects_impossible_inputs(s, n, conf):
    with pytest.raises(ValueError):
        wilson(s, n, conf)


@pytest.mark.parametrize(
    "wins, losses, approx",
    [(18, 3, 0.0015), (12, 2, 0.0129), (8, 6, 0.79), (10, 6, 0.45), (14, 0, 0.0001)],
)
def test_sign_test_known_values(wins, losses, approx):
    # +18/-3: 2 * (1 + 21 + 210 + 1330) / 2^21 = 3124 / 2097152 = .00149
    # +12/-2: 2 * (1 + 14 + 91) / 2^14 = 212 / 16384 = .01294
    # +8/-6:  2 * 6476 / 16384 = .7905
    p = sign_test(wins, losses)
    assert p == pytest.approx(_two_sided_sign_p(wins, losses), rel=1e-9)
    assert round(p, len(str(approx)) - 2) == approx


def test_sign_test_is_symmetric_and_caps_at_one():
    assert sign_test(3, 18) == sign_test(18, 3)
    assert sign_test(5, 5) == 1.0
    assert sign_test(0, 0) == 1.0
    assert sign_test(1, 0) == 1.0  # 2 * 1/2


def test_sign_test_rejects_negative_counts():
    with pytest.raises(ValueError):
        sign_test(-1, 3)


def test_paired_counts_only_discordant_queries():
    a = [1, 1, 0, 0, 1, 0.5, 0.25]
    b = [0, 1, 0, 1, 0, 0.5, 1.0]
    # wins at 0 and 4; losses at 3 and 6; ties at 1, 2, 5.
    result = paired(a, b)
    assert (result.wins, result.losses) == (2, 2)
    assert result.p == 1.0
    wins, losses, p = paired([1] * 12 + [0] * 2 + [1] * 5, [0] * 12 + [1] * 2 + [1] * 5)
    assert (wins, losses) == (12, 2) and p == pytest.approx(212 / 16384)


def test_paired_needs_the_same_queries():
    with pytest.raises(ValueError, match="3 vs 2"):
        paired([1, 0, 1], [1, 0])
