"""The embedders' one pass for an index that keeps token vectors: sentence vectors and word-piece
vectors from the same forward pass, each as the separate calls give them."""
import numpy as np
import pytest

from citeline.pipeline.embed import get_embedder

TEXTS = ["Dropout zeroes activations at random during training only.",
         "[Scheduling > Warmup]\nA cosine schedule decays the learning rate after a linear warmup of 500 steps.",
         "short"]


@pytest.mark.model
@pytest.mark.parametrize("model", ["minilm-int8", "all-MiniLM-L6-v2"])
def test_one_pass_gives_the_vectors_and_word_pieces_the_separate_calls_give(model):
    embedder = get_embedder(model, "fp32")
    vectors, counts, pieces = embedder.embed_with_token_vectors(TEXTS)
    alone, alone_counts = embedder.embed_counted(TEXTS)
    assert counts == alone_counts and np.abs(vectors - alone).max() < 1e-5
    for mine, theirs in zip(pieces, embedder.token_vectors(TEXTS)):
        assert mine.shape == theirs.shape and np.abs(mine - theirs).max() < 1e-4
