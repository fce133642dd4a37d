"""Refusal cuts, calibrated per embedding model, and the sweep that chooses them (SPEC §4).

A cosine distance means something only for the model that produced it, so cuts
are keyed by the model name stamped on the index. A model without a calibrated
cut gets none: the caller must pass one (``--cut``) rather than borrow another
model's number.

The sweep counts, for each candidate cut, the two ways the gate can be wrong:

- a *bluff*: an out-of-domain query for which at least one chunk passes (a model
  would be handed irrelevant sources and asked to answer);
- a *lost answer*: an in-domain query whose answer chunk was among the retrieved
  chunks but was cut by the gate.

No cut removes both (docs/query.md has the dev-corpus numbers); where to cut is a
product decision, and these counts are what it is made from.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from citeline.schemas.errors import CitelineError

# Chosen from the dev-corpus sweep in docs/query.md (bench/query_latency.py --quality).
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
class Retrieved:
    """One query's gated candidates: a value per chunk (distance or score) and whether it holds the answer."""

    values: tuple[float, ...]
    relevant: tuple[bool, ...] = ()


@dataclass(frozen=True)
class SweepPoint:
    """What one cut does: bluffs among out-of-domain queries, answers lost among those retrieved."""

    cut: float
    bluffs: int
    out_of_domain: int
    lost: int
    answerable: int
    refused_in_domain: int
    in_domain: int

    def line(self) -> str:
        return (f"cut {self.cut:.3f}: bluffs {self.bluffs}/{self.out_of_domain}, "
                f"lost {self.lost}/{self.answerable} answers found, "
                f"refused {self.refused_in_domain}/{self.in_domain} in-domain")


def sweep(
    in_domain: Sequence[Retrieved],
    out_of_domain: Sequence[Retrieved],
    cuts: Sequence[float],
    passes: Callable[[float, float], bool],
) -> list[SweepPoint]:
    """Bluffs and lost answers for each cut.

    Args:
        in_domain: per answerable query, the retrieved chunks' values and relevance.
        out_of_domain: per unanswerable query, the retrieved chunks' values.
        cuts: the cuts to try.
        passes: ``passes(value, cut)``, e.g. ``lambda d, c: d < c`` for distances.

    Returns:
        One ``SweepPoint`` per cut, in the order given. ``answerable`` counts queries
        with a relevant chunk among those retrieved; ``lost`` those among them whose
        every relevant chunk fails the cut; ``refused_in_domain`` in-domain queries
        where nothing passes.

    >>> ind = [Retrieved((0.3, 0.6), (False, True)), Retrieved((0.7,), (False,))]
    >>> [p.line() for p in sweep(ind, [Retrieved((0.5,))], [0.55], lambda d, c: d < c)]
    ['cut 0.550: bluffs 1/1, lost 1/1 answers found, refused 1/2 in-domain']
    """
    points = []
    answerable = [q for q in in_domain if any(q.relevant)]
    for cut in cuts:
        bluffs = sum(any(passes(v, cut) for v in q.values) for q in out_of_domain)
        lost = sum(
            not any(r and passes(v, cut) for v, r in zip(q.values, q.relevant)) for q in answerable
        )
        refused = sum(not any(passes(v, cut) for v in q.values) for q in in_domain)
        points.append(SweepPoint(cut, bluffs, len(out_of_domain), lost, len(answerable), refused, len(in_domain)))
    return points


def under(value: float, cut: float) -> bool:
    """A cosine distance passes when strictly under the cut (as ``query.refuse.gate``)."""
    return value < cut


def over(value: float, cut: float) -> bool:
    """A reranker score passes when strictly over the cut (as ``query.refuse.gate_score``)."""
    return value > cut
