"""The self-calibrating gate's pure parts (query/calibrate.py) on synthetic distances."""
import json
import random
from pathlib import Path

import numpy as np
import pytest

from citeline.index.store import Store
from citeline.query.words import content_words
from citeline.query.calibrate import (
    BLUFF_RATE, CALIBRATED, LEGACY, OVERRIDE, Calibration, calibrate_queries, choose_cut,
    cut_in_use, offtopic_questions, pseudo_question, sample_chunks,
)
from citeline.query.thresholds import GateQuery, Uncalibrated, gate_point
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.tables import chunks_table_name

DEV_OOD = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "dev" / "out_of_domain.jsonl"


def views(in_d, out_d):
    """One-chunk windows: each in-domain question's own chunk at its distance."""
    return ([GateQuery((d,), (True,), True) for d in in_d], [GateQuery((d,), (False,), False) for d in out_d])


def test_separated_sides_cut_just_under_the_off_topic_side():
    rng = np.random.default_rng(0)
    pseudo, bank = views(rng.normal(0.30, 0.05, 300), rng.normal(0.75, 0.04, 500))
    point = calibrate_queries(pseudo, bank)
    assert point.bluffs <= BLUFF_RATE * 500 and point.lost == 0
    # Loosest within the budget: just under the 1% quantile of the bank, far above the pseudo-questions.
    assert 0.6 < point.cut <= np.quantile([q.values[0] for q in bank], 0.011) + 0.005


def test_on_topic_bank_questions_do_not_drag_the_cut_down():
    rng = np.random.default_rng(1)
    clean = calibrate_queries(*views(rng.normal(0.3, 0.05, 300), rng.normal(0.75, 0.04, 500)))
    rng = np.random.default_rng(1)
    in_d, out_d = rng.normal(0.3, 0.05, 300), rng.normal(0.75, 0.04, 500)
    out_d[:3] = 0.2  # three bank questions the corpus happens to answer
    assert calibrate_queries(*views(in_d, out_d)).cut == pytest.approx(clean.cut, abs=0.02)


def test_overlapping_sides_trade_as_the_bluff_budget_allows():
    rng = np.random.default_rng(2)
    pseudo, bank = views(rng.normal(0.45, 0.1, 300), rng.normal(0.6, 0.1, 500))
    point = calibrate_queries(pseudo, bank)
    stricter = gate_point([*pseudo, *bank], point.cut - 0.05)
    looser = gate_point([*pseudo, *bank], point.cut + 0.05)
    assert point.bluffs <= 5 < looser.bluffs and stricter.lost > point.lost


def test_no_cut_within_budget_takes_the_strictest():
    points = [gate_point(views([0.5], [0.1, 0.1])[0] + views([], [0.1, 0.1])[1], c) for c in (0.3, 0.4)]
    assert choose_cut(points).cut == 0.3
    with pytest.raises(ValueError):
        choose_cut([])


def test_pseudo_question_is_a_phrase_of_content_words_and_deterministic():
    content = ("Table 3. Dropout zeroes each hidden unit with probability p during training, "
               "and scales the survivors by 1/(1-p).")
    first = pseudo_question(content, random.Random(5))
    assert first == pseudo_question(content, random.Random(5))
    words = first.split()
    assert 0 < len(words) <= 8 and not {"with", "during", "the", "and", "by"} & set(words)
    assert all(w in content for w in words)
    assert pseudo_question("Too short. Tiny.", random.Random(0)) is None
    assert content_words("| Region 01 | 30.1% | 301 |") == ["Region"]


def test_sample_is_seeded_bounded_and_order_free():
    ids = [f"c{i:03d}" for i in range(500)]
    picked = sample_chunks(ids, 300, seed=7)
    assert len(set(picked)) == 300
    shuffled = list(reversed(ids))
    assert sorted(ids[i] for i in picked) == sorted(shuffled[i] for i in sample_chunks(shuffled, 300, seed=7))
    assert sample_chunks(ids, 300, seed=8) != picked


def test_offtopic_bank_is_large_unique_and_not_an_evaluation_corpus():
    bank = offtopic_questions()
    assert len(bank) >= 300 and len(set(bank)) == len(bank)
    assert all(q.endswith(("?", ".", "!")) for q in bank)
    if DEV_OOD.exists():
        dev = {json.loads(line)["query"] for line in DEV_OOD.read_text().splitlines() if line.strip()}
        assert not dev & set(bank)


def calibration(stamp: IndexStamp, cut: float) -> Calibration:
    return Calibration(cut=cut, model=stamp.embed_model, pipeline_version=stamp.pipeline_version,
                       strategy=stamp.strategy, table=chunks_table_name(stamp), created_at="2026-12-01T00:00:00+00:00",
                       chunks=10, sampled=10, offtopic=505, bluffs=2, lost=1, answerable=9, refused_in_domain=1,
                       rule="test")


@pytest.mark.parametrize("model, stored, override, expected", [
    ("some/model", 0.61, None, (0.61, CALIBRATED)),
    ("some/model", 0.61, 0.3, (0.3, OVERRIDE)),
    ("sentence-transformers/all-MiniLM-L6-v2", None, None, (0.45, LEGACY)),
])
def test_cut_in_use_prefers_override_then_calibration_then_legacy(tmp_path, model, stored, override, expected):
    store, stamp = Store(str(tmp_path / "db")), IndexStamp(model, 4)
    store.chunks(stamp, create=True)
    if stored is not None:
        store.set_calibration(store.active_table(), calibration(stamp, stored).to_json())
    used = cut_in_use(store, stamp, override)
    assert (used.cut, used.how) == expected
    assert json.loads(json.dumps(used.to_dict()))["how"] == expected[1]


def test_uncalibrated_model_is_told_to_calibrate(tmp_path):
    store, stamp = Store(str(tmp_path / "db")), IndexStamp("some/model", 4)
    store.chunks(stamp, create=True)
    with pytest.raises(Uncalibrated) as err:
        cut_in_use(store, stamp)
    assert "citeline calibrate" in "".join(err.value.__notes__)
    # A calibration measured with another model is not this index's.
    store.set_calibration(store.active_table(), calibration(IndexStamp("other/model", 4), 0.5).to_json())
    with pytest.raises(Uncalibrated):
        cut_in_use(store, stamp)
