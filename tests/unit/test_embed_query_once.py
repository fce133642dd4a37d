"""A reranked ask encodes its question once: the sentence vector and the word-piece
vectors MaxSim needs come from one forward pass, bit for bit what two fp32 passes gave
(a question is encoded in fp32 whatever the embedder's precision: faster for one text)."""
import numpy as np
import pytest

from citeline.pipeline.embed import get_embedder

QUESTIONS = ["What does dropout zero out?", "why warm up the learning rate " * 40, "ok",
             "How does a residual block help a deep network train?"]


def _torch_only(embedder):
    """The embedder with its questions on torch: the ONNX query side (tests/e2e/test_query_onnx.py
    checks it against these very numbers) is switched off for this process's copy."""
    embedder.__dict__["query_side"] = None
    return embedder


def _forward_counter(embedder) -> list[int]:
    calls = [0]
    embedder.model[0].register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return calls


@pytest.mark.model
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_query_and_its_word_pieces_are_one_forward_pass_with_the_same_numbers(precision):
    embedder = _torch_only(get_embedder("all-MiniLM-L6-v2", precision, 7))  # a batch size no other test loads
    fp32 = _torch_only(get_embedder("all-MiniLM-L6-v2", "fp32", 5))  # a question is encoded in fp32 at any precision
    calls = _forward_counter(embedder)
    for question in QUESTIONS:
        two_passes = (fp32._encode_locked([question])[0], fp32.token_vectors([question, "x"])[0])
        alone = fp32.token_vectors([question])[0]
        calls[0] = 0
        vector = embedder.embed_query(question)
        tokens = embedder.token_vectors([question])[0]
        assert calls[0] == 1
        assert vector.dtype == np.float32 and np.array_equal(vector, two_passes[0])
        assert np.array_equal(tokens, alone)  # what token_vectors of the text alone computes
        assert np.allclose(tokens, two_passes[1], atol=1e-2)  # and what a padded batch gives, nearly


@pytest.mark.model
def test_a_text_not_asked_as_a_query_is_encoded():
    embedder = _torch_only(get_embedder("all-MiniLM-L6-v2", "fp32", 7))
    embedder.embed_query("What does dropout zero out?")
    calls = _forward_counter(embedder)
    assert embedder.token_vectors(["Dropout zeroes activations at random."])[0].shape[1] == embedder.dim
    assert calls[0] == 1
