"""Stored word-piece vectors as int8 with a float16 scale per word-piece (schemas/tokens.py)."""
import numpy as np

from citeline.schemas.tokens import as_stored, dequantize, quantize, token_row
from citeline.pipeline.embedder import unit_rows
from citeline.query.maxsim import maxsim


def pieces(rng, count, dim=384):
    """Unit rows with a few large components, as a transformer's outlier dimensions give them."""
    v = rng.normal(size=(count, dim)).astype(np.float32)
    v[:, :3] *= 8
    return unit_rows(v)


def test_the_round_trip_keeps_each_component_within_half_a_step():
    rng = np.random.default_rng(0)
    v = pieces(rng, 200)
    scale, values = quantize(v)
    back = dequantize(200, 384, scale, values)
    step = np.abs(v).max(axis=1, keepdims=True) / 127
    assert len(scale) == 200 * 2 and len(values) == 200 * 384  # 386 bytes a word-piece, float16 took 768
    assert np.all(np.abs(back - v) <= 0.5 * step * 1.01 + 1e-6)
    cos = (back * v).sum(axis=1) / np.linalg.norm(back, axis=1)
    assert cos.min() > 0.999  # 0.99948 at worst here: outlier dimensions widen the step


def test_maxsim_on_the_round_trip_agrees_with_float32():
    rng = np.random.default_rng(1)
    query = pieces(rng, 12)
    docs = [pieces(rng, n) for n in (5, 60, 120, 250)]
    exact, stored = maxsim(query, docs), maxsim(query, [as_stored(d) for d in docs])
    assert np.abs(exact - stored).max() < 2e-3


def test_zero_rows_and_empty_texts_survive():
    v = np.zeros((2, 4), dtype=np.float32)
    assert np.array_equal(as_stored(v), v)
    row = token_row("c", np.zeros((0, 4), dtype=np.float32))
    assert row["count"] == 0 and row["scale"] == b"" and row["vectors"] == b""
    assert as_stored(np.zeros((0, 4), dtype=np.float32)).shape == (0, 4)
