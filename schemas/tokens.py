"""The token table's row format: a chunk's word-piece vectors as int8 with one float16 scale each.

Defined here, below both layers, because the pipeline makes these rows in the pass that embeds
a chunk and the index stores and reads them (index/tokens.py).
"""
from __future__ import annotations

import numpy as np


def quantize(vectors: np.ndarray) -> tuple[bytes, bytes]:
    """(float16 scales, int8 values) of ``(count, dim)`` vectors: each row over its largest magnitude.

    Row ``i`` is stored as ``round(v_i / s_i)`` with ``s_i = max |v_i| / 127``, so the
    largest component of every word-piece uses the whole int8 range.

    >>> scale, values = quantize(np.array([[0.6, -0.8], [0.0, 0.0]], dtype=np.float32))
    >>> [[round(float(x), 2) for x in row] for row in dequantize(2, 2, scale, values)]
    [[0.6, -0.8], [0.0, 0.0]]
    """
    v = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(v).max(axis=1, keepdims=True) if v.size else np.zeros((len(v), 1), dtype=np.float32)
    scale = (peak / 127.0).astype(np.float16)
    safe = np.where(scale > 0, scale, 1).astype(np.float32)
    q = np.clip(np.rint(v / safe), -127, 127).astype(np.int8)
    return scale.tobytes(), q.tobytes()


def dequantize(count: int, dim: int, scale: bytes, values: bytes) -> np.ndarray:
    """The float32 ``(count, dim)`` vectors that ``quantize`` gave ``scale`` and ``values`` for."""
    s = np.frombuffer(scale, dtype=np.float16).astype(np.float32).reshape(count, 1)
    # one pass, no int8 -> float32 copy first: the same floats, ~15% less of a question's decoding
    return np.multiply(np.frombuffer(values, dtype=np.int8).reshape(count, dim), s, dtype=np.float32)


def as_stored(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` as a reader gets them back from the table: scored on the fly, a chunk scores
    as it would from its stored vectors."""
    v = np.asarray(vectors, dtype=np.float32)
    return dequantize(len(v), v.shape[1] if v.ndim == 2 else 0, *quantize(v)) if len(v) else v


def as_float16(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` as table version 1 stored them (float16), read back as float32."""
    return np.asarray(vectors, dtype=np.float16).astype(np.float32)


# How a passage's word-piece vectors may be stored, by name, for comparing them (bench/token_codec.py).
CODECS = {"int8": as_stored, "float16": as_float16, "float32": lambda v: np.asarray(v, dtype=np.float32)}


def token_row(chunk_id: str, vectors: np.ndarray) -> dict:
    """A row of the token table (TOKENS_SCHEMA) for one chunk's ``(count, dim)`` unit vectors."""
    scale, values = quantize(vectors)
    return {"chunk_id": chunk_id, "count": len(vectors), "scale": scale, "vectors": values}
