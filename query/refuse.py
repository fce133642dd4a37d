"""The refusal gate: the only part of the pipeline that can say no.

A retriever always returns something; the gate keeps at most ``max_chunks`` hits
that pass a cut and otherwise returns a ``Refusal``, so no prompt is built and no
model is called. lancedb's ``distance_range(upper_bound=...)`` is the storage-side
version of the cosine cut.

Both cuts are strict, matching the message: a cosine distance passes when it is
strictly *under* the cut (``distance < cut``), a rerank score when it is strictly
*over* it (``score > min_score``). Hits keep the order they came in (the
retriever's ranking, e.g. hybrid or reranked), and the first ``max_chunks`` that
pass are kept.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar, Union

from citeline.schemas.document import carries_content, tabular
from citeline.schemas.retrieval import COSINE, RERANK, Hit, Refusal

T = TypeVar("T", bound=Union[Hit, tuple])

MAX_CHUNKS = 4


def with_content(hits: Sequence[T]) -> list[T]:
    """``hits`` less the fragments (``schemas.document.carries_content``): a fragment never becomes a
    source on its own; ``ask`` still shows it among the closest passages."""
    return [h for h in hits if not isinstance(h, Hit) or h.chunk is None or carries_content(h.chunk.content)]


def gate(
    hits: Sequence[T], cut: float, max_chunks: int = MAX_CHUNKS, *, query: str = "",
    table_cut: float | None = None,
) -> list[T] | Refusal:
    """Keep at most ``max_chunks`` hits whose cosine distance is strictly under ``cut``
    (``table_cut`` instead for a ``Hit`` whose chunk is a table, when given).

    Args:
        hits: ``(key, distance)`` pairs, or ``Hit``s (gated on their ``distance``),
            in ranking order.
        cut: the cosine-distance threshold; a hit passes when ``distance < cut``.
        max_chunks: how many passing hits to keep at most.
        query: the question, quoted in the refusal message.
        table_cut: the index's calibrated cut for table chunks (query/calibrate.py), None: ``cut``.

    Returns:
        The kept hits (same items, same order), or a ``Refusal`` when none pass; its
        ``best`` is the smallest distance seen (None if ``hits`` is empty).

    Raises:
        ValueError: if ``max_chunks`` < 1, or a ``Hit`` carries no distance (a fused
            or BM25 score is not one: see ``Searcher.fill_distances``).

    >>> gate([("a", 0.3), ("b", 0.7), ("c", 0.5)], cut=0.6)
    [('a', 0.3), ('c', 0.5)]
    >>> gate([("a", 0.7)], cut=0.675, query="q").message()
    'NO ANSWER: nothing under cosine distance 0.675 for "q"'
    """
    values = [_value(h, COSINE) for h in hits]
    cuts = [table_cut if table_cut is not None and _is_table(h) else cut for h in hits]
    kept = _keep(hits, [v < c for v, c in zip(values, cuts)], max_chunks)
    if kept:
        return kept
    best = min((v for v in values if not math.isnan(v)), default=None)
    return Refusal(query=query, threshold=cut, kind=COSINE, best=best)


def gate_score(
    hits: Sequence[T], min_score: float, max_chunks: int = MAX_CHUNKS, *, query: str = ""
) -> list[T] | Refusal:
    """Keep at most ``max_chunks`` hits whose reranker score is strictly over ``min_score``.

    Args:
        hits: ``(key, score)`` pairs, or reranked ``Hit``s (gated on their
            ``rerank_score``; higher is better), in ranking order.
        min_score: the score threshold; a hit passes when ``score > min_score``.
        max_chunks: how many passing hits to keep at most.
        query: the question, quoted in the refusal message.

    Returns:
        The kept hits, or a ``Refusal`` of kind ``"rerank"`` whose ``best`` is the
        highest score seen (None if ``hits`` is empty).

    Raises:
        ValueError: if ``max_chunks`` < 1, or a ``Hit`` carries no rerank score.

    >>> gate_score([("a", 1.5), ("b", -2.0)], min_score=0.0)
    [('a', 1.5)]
    """
    values = [_value(h, RERANK) for h in hits]
    kept = _keep(hits, [v > min_score for v in values], max_chunks)
    if kept:
        return kept
    best = max((v for v in values if not math.isnan(v)), default=None)
    return Refusal(query=query, threshold=min_score, kind=RERANK, best=best)


def _keep(hits: Sequence[T], passed: Sequence[bool], max_chunks: int) -> list[T]:
    if max_chunks < 1:
        raise ValueError(f"max_chunks must be at least 1, got {max_chunks}")
    # NaN fails every comparison, so a missing distance never passes the gate.
    return [h for h, ok in zip(hits, passed) if ok][:max_chunks]


def _is_table(hit: Hit | tuple) -> bool:
    return isinstance(hit, Hit) and hit.chunk is not None and tabular(hit.chunk.content)


def _value(hit: Hit | tuple, kind: str) -> float:
    if not isinstance(hit, Hit):
        _, value = hit
        return float(value)
    value = hit.distance if kind == COSINE else hit.rerank_score
    if value is None:
        need = "cosine distance" if kind == COSINE else "rerank score"
        err = ValueError(f"{hit.retriever!r} hit {hit.chunk_id!r} carries no {need}")
        err.add_note("Help: fill BM25 hits' distances (Searcher.fill_distances); gate scores only on reranked hits.")
        raise err
    return float(value)
