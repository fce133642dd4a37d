"""Encoding in word-piece-sorted batches: same vectors, every text once, less padding."""
import pytest

from citeline.pipeline.embed import get_embedder
from citeline.pipeline.embedder import sorted_batches


def test_sorted_batches_cover_every_index_once_longest_first():
    tokens = [5, 300, 12, 7, 260, 40, 9]
    batches = sorted_batches(tokens, batch_size=3, limit=256)
    assert sorted(i for b in batches for i in b) == list(range(len(tokens)))
    assert [len(b) for b in batches] == [3, 3, 1]
    lengths = [min(tokens[i], 256) for b in batches for i in b]
    assert lengths == sorted(lengths, reverse=True)  # over the limit counts as the limit


@pytest.mark.model
def test_sorted_encoding_gives_the_vectors_and_counts_of_plain_encode():
    embedder = get_embedder("all-MiniLM-L6-v2", "fp32", 4)
    texts = ["short", "a somewhat longer sentence about dropout and weight decay",
             "x " * 300, "learning rate warmup", "the KV cache grows with the context", "ok"]
    vectors, tokens = embedder.embed_counted(texts)
    assert tokens == embedder.count_tokens(texts)
    assert tokens[2] > embedder.max_tokens  # counted untruncated
    assert (vectors * embedder.encode_bare(texts)).sum(axis=1).min() > 0.99999


@pytest.mark.model
@pytest.mark.parametrize("model", ["all-MiniLM-L6-v2", "minilm-int8"])
def test_queries_in_batches_are_the_queries_one_at_a_time(model):
    """The gate's calibration embeds hundreds of questions in batches; its cut must be the one
    each question embedded alone (as ``ask`` embeds it) gives."""
    embedder = get_embedder(model, "fp32", 4)
    questions = ["What does dropout zero out?", "why warm up the learning rate " * 40, "ok",
                 "How does a residual block help a deep network train?", "KV cache size", "capital of France?"]
    batched = embedder.embed_queries(questions)
    alone = [embedder.embed_query(q) for q in questions]
    assert batched.shape == (len(questions), embedder.dim)
    assert min(float(b @ a) for b, a in zip(batched, alone)) > 0.99999
