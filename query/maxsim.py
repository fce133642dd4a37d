"""Late interaction (ColBERT-style MaxSim) over a bi-encoder's token vectors.

Pure scoring over arrays lives here; the token vectors come from the embedder
(``Embedder.token_vectors`` in pipeline/embedder.py: one unit vector per word-piece,
[CLS], [SEP] and padding dropped). ``query/rerank.py`` wraps both as a reranker.

MaxSim (Khattab & Zaharia, 2020, eq. 3, normalised by query length)::

    S(q, d) = (1 / |q|) * sum over query tokens i of  max over doc tokens j of  cos(q_i, d_j)

so S lies in [-1, 1] and does not grow with the question's length, which lets a
single cut gate it.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def maxsim(query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
    """MaxSim of one query against each document, normalised by query length.

    Args:
        query: ``(m, d)`` unit token vectors of the query.
        docs: per document an ``(n_i, d)`` array of unit token vectors.

    Returns:
        One float per document in [-1, 1]; a document (or query) without tokens scores -1.

    >>> q = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> maxsim(q, [np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0]])]).tolist()
    [0.5, 1.0]
    """
    out = np.full(len(docs), -1.0)
    if len(query) == 0:
        return out
    for i, doc in enumerate(docs):
        if len(doc):
            out[i] = float((query @ doc.T).max(axis=1).mean())
    return out


def zscore(values: Sequence[float]) -> np.ndarray:
    """(x - mean) / std over the list (population std); all zeros when the list is flat.

    >>> zscore([1.0, 2.0, 3.0]).round(3).tolist()
    [-1.225, 0.0, 1.225]
    >>> zscore([5.0, 5.0]).tolist()
    [0.0, 0.0]
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return x
    std = x.std()
    return (x - x.mean()) / std if std > 0 else np.zeros_like(x)


def mix(scores: Sequence[float], cosines: Sequence[float], weight: float) -> np.ndarray:
    """``weight * z(scores) + (1 - weight) * z(cosines)`` over one candidate list.

    Z-scoring puts the two signals on one scale *within the list*; the result
    orders the candidates but is not comparable across queries (gate on the raw
    score instead). ``weight`` 1 is pure ``scores``, 0 is pure cosine.

    Raises:
        ValueError: if ``weight`` is outside [0, 1] or the lists differ in length.

    >>> mix([0.9, 0.5, 0.1], [0.3, 0.9, 0.6], 0.5).round(3).tolist()
    [0.0, 0.612, -0.612]
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight must be in [0, 1], got {weight}")
    if len(scores) != len(cosines):
        raise ValueError(f"one cosine per score needed: {len(scores)} vs {len(cosines)}")
    return weight * zscore(scores) + (1.0 - weight) * zscore(cosines)
