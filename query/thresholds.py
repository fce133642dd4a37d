"""Refusal cuts, calibrated per embedding model, and the sweep that chooses them.

A cosine distance means something only for the model that produced it, so cuts
are keyed by the model name stamped on the index. A model without a calibrated
cut gets none: the caller must pass one (``--cut``) rather than borrow another
model's number.

The sweep runs the query side's own gate (:mod:`query.refuse`) over the top
``window`` chunks of each query at every candidate cut, and counts the two ways
it can be wrong:

- a *bluff*: an out-of-domain query for which at least one chunk passes (a model
  would be handed irrelevant sources and asked to answer);
- a *lost answer*: an in-domain query whose answer chunk was in the window but was
  cut by the gate;

and the in-domain queries refused outright (lost ones, and ones whose answer was
not retrieved anyway). No cut removes both errors (docs/query.md has the
dev-corpus numbers); where to cut is a product decision, and these counts are what
it is made from. The calibration (bench/query_latency.py --quality) and the
evaluation report (evaluation/report.py) both call :func:`sweep`.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from citeline.query.refuse import MAX_CHUNKS, gate, gate_score
from citeline.schemas.errors import CitelineError
from citeline.schemas.retrieval import COSINE, CUT_KINDS, Refusal

# Chosen from the dev-corpus sweep in docs/query.md (bench/query_latency.py --quality).
# Only a fallback now: every index calibrates its own cut (query/calibrate.py); this
# serves all-MiniLM-L6-v2 indexes built before that and not calibrated since.
COSINE_CUTS: dict[str, float] = {
    "sentence-transformers/all-MiniLM-L6-v2": 0.45,
}
# Cuts on the reranker's absolute score, keyed by (embedding model, reranker name).
# None: measured, but no cut is on by default (docs/query.md says why).
RERANK_CUTS: dict[tuple[str, str], float | None] = {}


class Uncalibrated(CitelineError, LookupError):
    """No refusal cut has been calibrated for this embedding model."""


def cosine_cut(model: str) -> float:
    """The default cosine-distance cut for an embedding model.

    Args:
        model: the model name as stamped on the index (``IndexStamp.embed_model``).

    Raises:
        Uncalibrated: if no cut is recorded for ``model``.

    >>> cosine_cut("sentence-transformers/all-MiniLM-L6-v2")
    0.45
    """
    try:
        return COSINE_CUTS[model]
    except KeyError:
        err = Uncalibrated(f"no refusal cut is calibrated for the embedding model {model!r}")
        err.add_note(
            "Help: pass --cut X, chosen from a sweep of in-domain vs out-of-domain queries "
            f"(bench/query_latency.py --quality); calibrated models: {sorted(COSINE_CUTS)}"
        )
        raise err from None


def rerank_cut(model: str, reranker: str) -> float | None:
    """The default minimum reranker score for a model and reranker, or None (no score gate)."""
    return RERANK_CUTS.get((model, reranker))


@dataclass(frozen=True)
class GateQuery:
    """What the gate sees of one query: its top chunks, best first.

    Attributes:
        values: the gated value of each top chunk (cosine distance or rerank score),
            NaN where the hit carried none (a NaN never passes).
        relevant: per chunk, whether it holds the answer; all False for an
            out-of-domain query.
        in_domain: False for out-of-domain queries.
    """

    values: tuple[float, ...]
    relevant: tuple[bool, ...]
    in_domain: bool

    def __post_init__(self) -> None:
        if len(self.values) != len(self.relevant):
            raise ValueError(f"{len(self.values)} values but {len(self.relevant)} relevance flags")


@dataclass(frozen=True)
class GatePoint:
    """The gate's outcome at one cut: bluffs among out-of-domain queries, answers lost among those found."""

    kind: str
    cut: float
    bluffs: int
    ood: int
    lost: int
    answerable: int  # in-domain queries with the answer in the top window, no gate
    refused_in_domain: int
    in_domain: int

    def to_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        return (f"cut {self.cut:.3f}: bluffs {self.bluffs}/{self.ood}, "
                f"lost {self.lost}/{self.answerable} answers found, "
                f"refused {self.refused_in_domain}/{self.in_domain} in-domain")


def passing(query: GateQuery, cut: float, kind: str = COSINE, window: int = MAX_CHUNKS) -> list[int]:
    """Positions (0-based) of the chunks the gate keeps for one query at ``cut``.

    Args:
        query: the query's top chunks.
        cut: the threshold.
        kind: "cosine" (distance < cut passes) or "rerank" (score > cut passes).
        window: how many top chunks the gate looks at and keeps at most.

    Returns:
        The kept positions, best first; empty when the gate refuses.

    >>> passing(GateQuery((0.3, 0.6, 0.4), (False, True, False), True), 0.5)
    [0, 2]
    """
    check_kind(kind)
    pairs = list(enumerate(query.values[:window]))
    kept = gate(pairs, cut, window) if kind == COSINE else gate_score(pairs, cut, window)
    return [] if isinstance(kept, Refusal) else [position for position, _ in kept]


def gate_point(queries: Sequence[GateQuery], cut: float, kind: str = COSINE, window: int = MAX_CHUNKS) -> GatePoint:
    """Count bluffs, lost answers and in-domain refusals at one cut.

    >>> qs = [GateQuery((0.2,), (True,), True), GateQuery((0.5,), (True,), True),
    ...       GateQuery((0.4,), (False,), False)]
    >>> gate_point(qs, 0.45).line()
    'cut 0.450: bluffs 1/1, lost 1/2 answers found, refused 1/2 in-domain'
    """
    bluffs = lost = answerable = refused = 0
    for q in queries:
        kept = passing(q, cut, kind, window)
        if not q.in_domain:
            bluffs += bool(kept)
            continue
        refused += not kept
        if any(q.relevant[:window]):
            answerable += 1
            lost += not any(q.relevant[i] for i in kept)
    ood = sum(not q.in_domain for q in queries)
    return GatePoint(kind, cut, bluffs, ood, lost, answerable, refused, len(queries) - ood)


def sweep(queries: Sequence[GateQuery], cuts: Iterable[float], kind: str = COSINE,
          window: int = MAX_CHUNKS) -> list[GatePoint]:
    """:func:`gate_point` at every cut, in the order given: the refusal frontier."""
    return [gate_point(queries, cut, kind, window) for cut in cuts]


def check_kind(kind: str) -> None:
    if kind not in CUT_KINDS:
        raise ValueError(f"unknown gate kind {kind!r}; choose one of {list(CUT_KINDS)}")
