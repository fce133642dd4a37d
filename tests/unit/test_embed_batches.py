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
