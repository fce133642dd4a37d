"""One answerability score per source, from more evidence than one distance.

The cosine gate asks one question of a source: is it close to the question? A person's
wording and a table's cells both sit far from the words they answer, so a distance
alone refuses them with the off-topic questions. The index knows more about each
candidate it returns:

- ``distance``: 1 - cosine of the question and the chunk (what the cosine gate reads);
- ``rerank``: the reranker's absolute score (MaxSim over word pieces: every word of the
  question finds its best match in the chunk);
- ``coverage``: the share of the question's content words (crude stems) the chunk holds;
- ``gap``: how far the source's rerank score is below the list's best;
- the chunk's kind (prose, table, transcript, OCR'd page): a table's vectors sit farther
  from any question than prose does, so its distance must not be read on prose's scale.

:func:`fit` weighs them by logistic regression on the calibration's own samples (no
evaluation labels): pseudo-questions' own chunks are the positives; the off-topic bank's
sources and the pseudo-questions' sources from *other* documents (simulated adjacent
questions) are the negatives. The threshold is chosen by the calibration's rule for the
cosine cut (query/calibrate.py), on the fitted score instead of the distance.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from citeline.query.words import stems
from citeline.schemas.retrieval import ANSWERABILITY, Hit, Refusal

PROSE, TABLE, TRANSCRIPT, OCR = "prose", "table", "transcript", "ocr"
KINDS = (PROSE, TABLE, TRANSCRIPT, OCR)
_KIND_OF_LOCATOR = {"sheet": TABLE, "rows": TABLE, "time": TRANSCRIPT}
# The fitted features, in order: the numeric evidence, then one indicator per non-prose kind.
NUMERIC = ("distance", "rerank", "coverage", "gap")
FEATURES = (*NUMERIC, *(f"kind={k}" for k in KINDS[1:]))
# Logistic regression's inverse regularisation: strong enough that a kind with a handful of
# pseudo-questions does not get a wild weight, weak enough not to flatten the rest.
REGULARISATION = 1.0


@dataclass(frozen=True)
class Evidence:
    """What the index knows about one source of one question (see the module docstring)."""

    distance: float
    rerank: float
    coverage: float
    gap: float
    kind: str = PROSE

    def vector(self) -> list[float]:
        return [self.distance, self.rerank, self.coverage, self.gap, *(float(self.kind == k) for k in KINDS[1:])]


def chunk_kind(locators: str) -> str:
    """The kind of a chunk from its stored locators (JSON text; "" or "[]" for plain text).

    >>> chunk_kind('[{"kind": "sheet", "sheet": "S", "first": "A1", "last": "B2"}]')
    'table'
    >>> chunk_kind('[{"kind": "page", "page": 3, "ocr_confidence": 71.5}]')
    'ocr'
    >>> chunk_kind("[]")
    'prose'
    """
    for locator in json.loads(locators or "[]"):
        kind = locator.get("kind")
        if kind in _KIND_OF_LOCATOR:
            return _KIND_OF_LOCATOR[kind]
        if kind == "page" and locator.get("ocr_confidence") is not None:
            return OCR
    return PROSE


def coverage(question: frozenset[str], content: str) -> float:
    """The share of ``question``'s stems (:func:`query.words.stems`) found in ``content``.

    >>> coverage(stems("why does dropout regularise"), "Dropout is a regulariser.")
    1.0
    >>> coverage(stems("forget gate"), "The input gate decides.")
    0.5
    """
    if not question:
        return 0.0
    return len(question & stems(content)) / len(question)


def evidence(question: str, hits: Sequence[Hit]) -> list[Evidence]:
    """The evidence of each reranked hit, in the hits' order.

    Raises:
        ValueError: a hit without ``distance``, ``rerank_score`` or its chunk.
    """
    if any(h.distance is None or h.rerank_score is None or h.chunk is None for h in hits):
        raise ValueError("the answerability score reads reranked hits with their distance and chunk")
    words = stems(question)
    best = max((h.rerank_score for h in hits), default=0.0)
    return [Evidence(h.distance, h.rerank_score, coverage(words, h.chunk.content), best - h.rerank_score,
                     chunk_kind(h.chunk.locators)) for h in hits]


@dataclass(frozen=True)
class Answerability:
    """A fitted linear score over :data:`FEATURES` and the threshold a source must pass.

    ``score`` is the logit of "this source answers the question"; a source passes when
    its score is strictly over ``threshold``. Standardisation is folded into the weights,
    so scoring is one dot product.

    >>> model = Answerability(weights=(-4.0, 6.0, 1.0, -2.0, 0.5, 0.5, 0.0), bias=-1.0, threshold=0.5)
    >>> round(model.score(Evidence(0.3, 0.7, 0.5, 0.0)), 2)
    2.5
    >>> model.passes(Evidence(0.3, 0.7, 0.5, 0.0)), model.passes(Evidence(0.6, 0.4, 0.0, 0.3))
    (True, False)
    """

    weights: tuple[float, ...]
    bias: float
    threshold: float
    reranker: str = "maxsim"  # whose scores the ``rerank`` feature was fitted on
    features: tuple[str, ...] = FEATURES

    def __post_init__(self) -> None:
        if len(self.weights) != len(self.features):
            raise ValueError(f"{len(self.weights)} weights for {len(self.features)} features")

    def score(self, evidence: Evidence) -> float:
        return float(np.dot(self.weights, evidence.vector()) + self.bias)

    def passes(self, evidence: Evidence) -> bool:
        return self.score(evidence) > self.threshold

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> "Answerability":
        return cls(tuple(raw["weights"]), raw["bias"], raw["threshold"], raw["reranker"], tuple(raw["features"]))


def fit(positives: Sequence[Evidence], negatives: Sequence[Evidence]) -> tuple[tuple[float, ...], float]:
    """Weights and bias of a class-balanced logistic regression, in raw feature units.

    Raises:
        ValueError: either side is empty.
    """
    from sklearn.linear_model import LogisticRegression

    if not positives or not negatives:
        raise ValueError("the answerability score needs answered and unanswerable examples to be fitted")
    x = np.array([e.vector() for e in (*positives, *negatives)], dtype=float)
    y = np.array([1] * len(positives) + [0] * len(negatives))
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0  # a kind absent from the index: its weight stays 0
    model = LogisticRegression(C=REGULARISATION, class_weight="balanced").fit((x - mean) / scale, y)
    weights = model.coef_[0] / scale
    bias = float(model.intercept_[0] - weights @ mean)
    return tuple(round(float(w), 6) for w in weights), round(bias, 6)


def rate_threshold(scores: Sequence[float], rate: float) -> float:
    """The lowest threshold letting at most ``rate`` of ``scores`` strictly over it.

    >>> rate_threshold([0.1, 0.9, 0.5, 0.3], rate=0.25)
    0.5
    >>> rate_threshold([], rate=0.1)
    -inf
    """
    if not scores:
        return float("-inf")
    ordered = sorted(scores, reverse=True)
    return float(ordered[min(int(rate * len(ordered)), len(ordered) - 1)])


def gate_answerable(hits: Sequence[Hit], question: str, model: Answerability, k: int) -> list[Hit] | Refusal:
    """Keep at most ``k`` reranked hits whose answerability score passes, in their order.

    Returns:
        The kept hits, or a ``Refusal`` (kind "answerability") whose ``best`` is the best score seen.
    """
    scores = [model.score(e) for e in evidence(question, hits)]
    kept = [hit for hit, score in zip(hits, scores) if score > model.threshold][:k]
    if kept:
        return kept
    return Refusal(query=question, threshold=model.threshold, kind=ANSWERABILITY,
                   best=max(scores) if scores else None)
