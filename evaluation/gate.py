"""The refusal frontier: how many bluffs and lost answers each gate cut costs.

The query side's gate keeps at most ``window`` (4) chunks of the retriever's list, and
only those that pass the cut; when none pass it refuses. For every cut of a grid:

- **bluffs**: out-of-domain queries with at least one chunk passing (the model would
  be handed irrelevant text and asked to answer);
- **lost**: in-domain queries whose answer chunk is in the top ``window`` without a gate
  but is filtered out by it;
- **refused in domain**: in-domain queries where nothing passes at all (these include
  lost ones and ones whose answer was not retrieved anyway).

The counting is :func:`query.thresholds.sweep`, the same one the calibration uses;
this module adds what the report says about a frontier: the grids of cuts, the
recommended cut and whether one cut separates the two sides.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from citeline.query.refuse import MAX_CHUNKS
from citeline.query.thresholds import GatePoint, GateQuery, check_kind
from citeline.schemas.retrieval import COSINE

RULE = ("the cut with the fewest bluffs + lost answers (one bluff weighs as much as one lost "
        "answer); ties go to the stricter cut")


def cosine_grid(lo: float = 0.30, hi: float = 0.80, step: float = 0.025) -> list[float]:
    """Evenly spaced cosine cuts, rounded so that 0.45 prints as 0.45.

    >>> cosine_grid(0.3, 0.4, 0.05)
    [0.3, 0.35, 0.4]
    """
    if step <= 0 or hi < lo:
        raise ValueError(f"need step > 0 and hi >= lo, got {lo}..{hi} step {step}")
    count = int(math.floor((hi - lo) / step + 1e-9)) + 1
    return [round(lo + i * step, 6) for i in range(count)]


def score_grid(values: Iterable[float], points: int = 21) -> list[float]:
    """Evenly spaced cuts over the observed range of scores (rerank scores have no fixed scale).

    >>> score_grid([2.0, -1.0, 0.5], points=4)
    [-1.0, 0.0, 1.0, 2.0]
    """
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return []
    lo, hi = min(finite), max(finite)
    if points < 2 or hi == lo:
        return [round(lo, 6)]
    return [round(lo + (hi - lo) * i / (points - 1), 6) for i in range(points)]


def recommend(points: Sequence[GatePoint]) -> GatePoint | None:
    """The recommended cut (see :data:`RULE`): fewest bluffs + lost, ties to the stricter.

    Stricter means a lower cosine cut or a higher rerank cut.

    >>> pts = [GatePoint("cosine", c, b, 3, l, 5, 0, 10) for c, b, l in [(0.4, 0, 2), (0.5, 1, 1), (0.6, 3, 0)]]
    >>> recommend(pts).cut
    0.4
    """
    if not points:
        return None
    sign = 1 if points[0].kind == COSINE else -1
    return min(points, key=lambda p: (p.bluffs + p.lost, sign * p.cut))


def worst_answer(queries: Sequence[GateQuery], kind: str = COSINE, window: int = MAX_CHUNKS) -> float | None:
    """The answerable in-domain query furthest from its answer: its best answer chunk's value.

    For cosine: max over answerable queries of the smallest distance of a relevant chunk
    in the window. A cut must be beyond this to keep every answer.
    """
    check_kind(kind)
    pick, worst = (min, max) if kind == COSINE else (max, min)
    found = [
        _finite(pick, [v for v, r in zip(q.values[:window], q.relevant[:window]) if r])
        for q in queries if q.in_domain and any(q.relevant[:window])
    ]
    return _finite(worst, [v for v in found if v is not None])


def best_ood(queries: Sequence[GateQuery], kind: str = COSINE, window: int = MAX_CHUNKS) -> float | None:
    """The out-of-domain query closest to the corpus: its best top-window value.

    A cut must stay short of this to refuse every out-of-domain query.
    """
    check_kind(kind)
    pick = min if kind == COSINE else max
    found = [_finite(pick, list(q.values[:window])) for q in queries if not q.in_domain]
    return _finite(pick, [v for v in found if v is not None])


def separable(worst_in: float | None, best_out: float | None, kind: str = COSINE) -> bool:
    """Whether one cut keeps every answer and refuses every out-of-domain query."""
    if worst_in is None or best_out is None:
        return False
    return worst_in < best_out if kind == COSINE else worst_in > best_out


def _finite(pick, values: list[float]) -> float | None:
    values = [v for v in values if not math.isnan(v)]
    return pick(values) if values else None
