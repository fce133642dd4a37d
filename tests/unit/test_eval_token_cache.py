"""The evaluation harness's word-piece cache, with the real embedding model, on a tiny corpus."""
import json

import pytest

pytestmark = pytest.mark.model

NEEDLES = {
    "n1": "Dropout zeroes each hidden unit with probability p during training only.",
    "n2": "Batch normalization rescales activations with statistics of the current minibatch.",
}


def tiny_corpus(root):
    text = (
        "# Regularization notes\n\nSome words about models and how they are trained.\n\n"
        f"## Dropout\n\n{NEEDLES['n1']} At test time nothing is dropped.\n\n"
        f"## Normalization\n\n{NEEDLES['n2']} It was introduced in 2015.\n"
    )
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "01-notes.md").write_text(text)
    questions = {"n1": ("What does dropout do to hidden units?", "why do my neurons get switched off in training"),
                 "n2": ("What statistics does batch normalization use?", "batchnorm uses which numbers")}
    with open(root / "ground_truth.jsonl", "w") as f:
        for nid, needle in NEEDLES.items():
            f.write(json.dumps({"id": nid, "doc": "01-notes.md", "needle": needle, "course": questions[nid][0],
                                "ticket": questions[nid][1], "char_start": text.index(needle)}) + "\n")
    (root / "out_of_domain.jsonl").write_text(
        json.dumps({"id": "o1", "query": "What is the capital of France?", "kind": "absurd"}) + "\n")
    return root


def test_token_cache_scores_like_the_query_side(tmp_path):
    """The harness's cached MaxSim, fed by the index's own forward passes, gives the query
    side's rerank order and scores without encoding a candidate again."""
    from citeline.evaluation.dataset import load_corpus
    from citeline.evaluation.harness import EncodingCache, EvalConfig, TokenCache, _cache_tokens, index_strategy, load_embedder
    from citeline.query.search import Searcher

    corpus = load_corpus(tiny_corpus(tmp_path / "corpus"))
    config = EvalConfig()
    embedder = EncodingCache(load_embedder(config))
    index_strategy(corpus, "E", str(tmp_path / "E"), embedder, config)
    captured = dict(embedder.passage_tokens)
    plain, fast = Searcher.open(str(tmp_path / "E"), embedder), Searcher.open(str(tmp_path / "E"), embedder)
    _cache_tokens(fast, {}, embedder.passage_tokens)
    if not isinstance(fast.reranker, TokenCache):
        pytest.skip("the query side has no MaxSim reranker to cache")
    for query in [q.text for q in corpus.queries] + [o.query for o in corpus.out_of_domain]:
        a, b = plain.search(query, "rerank", 20), fast.search(query, "rerank", 20)
        assert [r.chunk_id for r in a] == [r.chunk_id for r in b]
        # The query side's word pieces come from ONNX, the cache's from the index's torch passes:
        # their cosines agree to 1e-5 (the bound), and on AVX512/AMX kernels a score, a mean
        # of such cosines, moved by 1.1e-5 (2026-12-04). The order above is the claim; this bounds the rest.
        assert [r.rerank_score for r in a] == pytest.approx([r.rerank_score for r in b], abs=5e-5)
    texts = plain.reader.texts([row["chunk_id"] for row in plain.store.chunk_rows(["chunk_id"])])
    assert captured and set(texts.values()) <= set(captured)  # every chunk's vectors came from indexing
    assert embedder.passage_tokens.keys() == captured.keys()  # so no candidate was encoded again
