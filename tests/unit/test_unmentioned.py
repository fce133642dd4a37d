"""Names a question uses that no passage holds: which words count as names, and hostile questions."""
from __future__ import annotations

import pytest

from citeline.query.unmentioned import MAX_LOOKUPS, named_terms, parts, unmentioned
from growth import ratio


@pytest.mark.parametrize("question, names", [
    # the adjacent questions' shapes: acronyms, inner capitals, proper names, compounds, code
    ("How does the update gate of a GRU decide what to keep?", ["GRU"]),
    ("How does LoRA fine-tune a model?", ["LoRA", "fine-tune"]),
    ("What are the predict and update equations of a Kalman filter?", ["Kalman"]),
    ("Can I retry flaky tests with cargo-nextest?", ["cargo-nextest"]),
    ("Pin it with rust-toolchain.toml on aarch64.", ["rust-toolchain.toml", "aarch64"]),
    ("What does `cargo fix --edition` change?", ["cargo fix --edition"]),
    # a user's own words: everyday, lower case, capitals only where a sentence starts
    ("My model is great on training data but bad on new data. Why?", []),
    ("Why does my laptop fan spin up? It is weird.", []),
    ("I think I broke it: What now?", []),
])
def test_names_are_written_like_names(question, names):
    assert named_terms(question) == names


def test_each_part_of_a_name_is_asked_once_and_short_parts_not_at_all():
    asked = []

    def mentions(word):
        asked.append(word)
        return word.lower() != "nextest"

    assert unmentioned("Is cargo-nextest like Cargo.toml, or CI on x86_64?", mentions) == ("nextest",)
    assert asked == ["cargo", "nextest", "toml"]  # "Cargo" once; "CI" and "x" too short to ask about
    assert parts("I/O") == [] and parts("GPUs") == ["GPUs"]


@pytest.mark.parametrize("unit", ["a-", "Ab ", "`x", ". A", "x" * 63 + " "])
def test_a_long_hostile_question_costs_linear_time(unit):
    """A question is typed by anyone (the CLI, POST /ask): four times as long must not cost
    sixteen times the work. Four times, not two, as below: a doubling read 3.5 against a bound of
    3 under a loaded CI run (2026-12-07); here linear work reads about 4 and quadratic 16."""
    small, large = unit * 2_500, unit * 10_000
    assert ratio(lambda q: unmentioned(q, lambda w: True), small, large) < 8.0


def test_a_question_of_many_names_costs_linear_time_and_a_bounded_number_of_look_ups():
    """Distinct names, each a new part: the name list must not grow quadratically, and a pasted
    page of them must not cost a full-text query per word."""
    def many(n):
        return " ".join(f"Zq{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{chr(97 + i // 676 % 26)}" for i in range(n))

    # Four times the names, not two: a doubling's ratio read 3.3 once under a loaded suite; here
    # linear work reads about 4 and quadratic 16.
    assert ratio(named_terms, many(4_000), many(16_000)) < 8.0
    asked = []
    unmentioned(many(1_000), lambda w: asked.append(w) or True)
    assert len(asked) == MAX_LOOKUPS
