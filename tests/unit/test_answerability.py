"""The answerability score: evidence, fit, threshold rule, gate."""
from __future__ import annotations

import random

import pytest

from citeline.query.answerability import (
    ANSWERABILITY, OCR, PROSE, TABLE, TRANSCRIPT, Answerability, Evidence, chunk_kind, evidence, fit,
    gate_answerable, rate_threshold,
)
from citeline.query.calibrate import ADJACENT_RATE, BLUFF_RATE, Calibration, CutInUse, ScoredViews, fit_answerability
from citeline.schemas.retrieval import ChunkRow, Hit, Refusal


def chunk_hit(cid: str, content: str, distance: float, score: float, locators: str = "[]") -> Hit:
    row = ChunkRow(cid, "d", "a.md", "", "", 0, len(content), content, locators)
    return Hit(cid, 1, score, "rerank", row, distance=distance, rerank_score=score)


def noisy(rng: random.Random, distance: float, rerank: float, kind: str = PROSE, coverage: float = 0.5) -> Evidence:
    return Evidence(distance + rng.gauss(0, 0.05), rerank + rng.gauss(0, 0.05), coverage, 0.0, kind)


def test_evidence_reads_distance_score_coverage_gap_and_kind():
    hits = [chunk_hit("a", "The forget gate decides what to keep.", 0.3, 0.8),
            chunk_hit("b", "Row | Region | Sales", 0.5, 0.6, '[{"kind": "sheet", "sheet": "S"}]')]
    first, second = evidence("What does the forget gate keep?", hits)
    assert (first.distance, first.rerank, first.gap, first.kind) == (0.3, 0.8, 0.0, PROSE)
    assert first.coverage == 1.0  # forget, gate, keep: all three in the chunk
    assert second.kind == TABLE and second.gap == pytest.approx(0.2) and second.coverage == 0.0


def test_evidence_refuses_hits_that_were_not_reranked():
    plain = Hit("a", 1, 0.3, "dense", chunk_hit("a", "x", 0.3, 0.1).chunk, distance=0.3)
    with pytest.raises(ValueError, match="reranked"):
        evidence("q", [plain])


def test_chunk_kind_of_each_locator():
    assert chunk_kind('[{"kind": "time", "start": 1.0, "end": 2.0}]') == TRANSCRIPT
    assert chunk_kind('[{"kind": "rows", "first": 2, "last": 9}]') == TABLE
    assert chunk_kind('[{"kind": "page", "page": 2}]') == PROSE
    assert chunk_kind('[{"kind": "page", "page": 2, "ocr_confidence": 80.0}]') == OCR
    assert chunk_kind("") == PROSE


def test_fit_ranks_answers_over_off_topic_and_learns_the_signs():
    rng = random.Random(1)
    answers = [noisy(rng, 0.30, 0.75) for _ in range(80)]
    offtopic = [noisy(rng, 0.60, 0.40) for _ in range(200)]
    weights, bias = fit(answers, offtopic)
    model = Answerability(weights, bias, threshold=0.0)
    assert weights[0] < 0 < weights[1]  # closer and better reranked: more answerable
    right = sum(model.score(e) > 0 for e in answers) + sum(model.score(e) <= 0 for e in offtopic)
    assert right / 280 > 0.95


def test_fit_needs_both_sides():
    with pytest.raises(ValueError, match="answered and unanswerable"):
        fit([], [Evidence(0.5, 0.5, 0.5, 0.0)])


def test_a_table_answer_is_judged_on_the_scale_of_tables():
    """Kind-aware: table answers sit farther away than prose answers; the fit learns their own scale."""
    rng = random.Random(2)
    answers = [noisy(rng, 0.30, 0.75) for _ in range(80)] + [noisy(rng, 0.55, 0.55, TABLE) for _ in range(40)]
    negatives = [noisy(rng, 0.62, 0.45) for _ in range(200)] + [noisy(rng, 0.80, 0.30, TABLE) for _ in range(40)]
    model = Answerability(*fit(answers, negatives), threshold=0.0)
    as_table = model.score(Evidence(0.55, 0.55, 0.5, 0.0, TABLE))
    as_prose = model.score(Evidence(0.55, 0.55, 0.5, 0.0, PROSE))
    assert as_table > 0 > as_prose


def test_threshold_follows_the_calibration_rule_on_both_negative_samples():
    rng = random.Random(3)
    views = ScoredViews(
        answered=tuple(noisy(rng, 0.30, 0.75) for _ in range(100)),
        adjacent=tuple(tuple(noisy(rng, 0.50, 0.55) for _ in range(4)) for _ in range(100)),
        offtopic=tuple(tuple(noisy(rng, 0.70, 0.35) for _ in range(4)) for _ in range(200)),
    )
    model = fit_answerability(views, "maxsim")

    def through(windows):
        return sum(any(model.passes(e) for e in w) for w in windows) / len(windows)

    assert through(views.offtopic) <= BLUFF_RATE and through(views.adjacent) <= ADJACENT_RATE
    assert sum(map(model.passes, views.answered)) > 50  # and the answers still mostly pass


def test_rate_threshold_lets_at_most_the_rate_strictly_over():
    scores = [i / 100 for i in range(100)]
    cut = rate_threshold(scores, 0.1)
    assert sum(s > cut for s in scores) <= 10


def test_gate_keeps_passing_hits_in_order_up_to_k_or_refuses_with_the_best_score():
    model = Answerability((-10.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0), 0.0, threshold=0.0)
    hits = [chunk_hit("a", "x", 0.2, 0.6), chunk_hit("b", "y", 0.7, 0.3), chunk_hit("c", "z", 0.1, 0.5)]
    assert [h.chunk_id for h in gate_answerable(hits, "q", model, 4)] == ["a", "c"]
    assert [h.chunk_id for h in gate_answerable(hits, "q", model, 1)] == ["a"]
    refused = gate_answerable([hits[1]], "q", model, 4)
    assert isinstance(refused, Refusal) and refused.kind == ANSWERABILITY and refused.best == pytest.approx(-4.0)
    assert refused.message() == 'NO ANSWER: nothing over answerability score 0 for "q"'


def test_the_score_travels_in_the_calibration_and_an_override_turns_it_off():
    model = Answerability((-1.0, 1.0, 0.5, 0.0, 0.1, 0.2, 0.0), -0.5, 0.25, "maxsim")
    calibration = Calibration(0.45, "m", "1", "E", "chunks_x", "now", 10, 5, 20, 0, 1, 4, 1, "rule",
                              answerability=model.to_dict())
    again = Calibration.from_json(calibration.to_json())
    assert CutInUse(0.45, "calibrated", again).answerability == model
    assert CutInUse(0.45, "override", again).answerability is None
    assert "answerability score over 0.250" in again.line()


def test_a_calibration_from_before_the_score_loads_and_has_none():
    raw = Calibration(0.45, "m", "1", "E", "t", "now", 10, 5, 20, 0, 1, 4, 1, "rule").to_json()
    old = Calibration.from_json(raw.replace(', "answerability": null', ""))
    assert old.answerability is None and CutInUse(0.45, "calibrated", old).answerability is None
