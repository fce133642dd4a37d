"""Sentence splitting: exact offsets, and no cut inside decimals, abbreviations or initials."""
from __future__ import annotations

import pytest

from citeline.pipeline.sentences import sentence_spans


def pieces(text: str) -> list[str]:
    spans = sentence_spans(text)
    assert "".join(text[a:b] for a, b in spans) == text
    assert all(a < b for a, b in spans)
    assert all(spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1))
    return [text[a:b] for a, b in spans]


def test_empty_text_has_no_spans():
    assert sentence_spans("") == []


def test_whitespace_only_is_one_span():
    assert sentence_spans(" \n\t") == [(0, 3)]


def test_plain_sentences_split_after_terminator_and_whitespace():
    assert pieces("One. Two! Three? Four") == ["One. ", "Two! ", "Three? ", "Four"]


def test_trailing_terminator_ends_last_span():
    assert pieces("Only one.") == ["Only one."]


def test_newline_counts_as_whitespace_after_terminator():
    assert pieces("First line.\nSecond line.") == ["First line.\n", "Second line."]


@pytest.mark.parametrize(
    "sentence",
    [
        "Imagen uses a 4.6B parameter encoder.",
        "There is only a 13.06% chance.",
        "We released v1.2.3 yesterday.",
        "Costs fell from $1.50 to $0.99 per unit.",
        "It is 3.14159 and change.",
    ],
)
def test_numbers_with_periods_are_never_cut(sentence):
    assert pieces(sentence + " Next sentence.") == [sentence + " ", "Next sentence."]


@pytest.mark.parametrize(
    "sentence",
    [
        "Use a solver, e.g. Adam, for this.",
        "Use a solver (e.g. Adam) for this.",
        "Healthy, i.e. Negative, patients.",
        "As shown in Fig. 3 the loss falls.",
        "See Eq. 2 and Sec. 4 for details.",
        "Smith et al. Showed this first.",
        "Compare SGD vs. Adam here.",
        "It was written by J. Smith in Paris.",
        "He moved to the U.S. Last year.",
        "The gain was approx. three points.",
        "Wait... what happened here.",
        "This is Dr. Who speaking.",
    ],
)
def test_abbreviations_initials_and_ellipses_are_not_boundaries(sentence):
    assert pieces(sentence + " Next sentence.") == [sentence + " ", "Next sentence."]


def test_lowercase_after_period_is_not_a_boundary():
    assert pieces("The value is 3. but then it changes.") == ["The value is 3. but then it changes."]


def test_digit_after_period_is_not_a_boundary():
    assert pieces("See item no. 5 below.") == ["See item no. 5 below."]


def test_numbered_list_marker_is_not_a_sentence():
    text = "1. First item\n2. Second item"
    assert pieces(text) == [text]


def test_number_ending_a_sentence_is_a_boundary():
    assert pieces("The total was 42. The rest is noise.") == ["The total was 42. ", "The rest is noise."]


def test_closing_quotes_and_brackets_stay_with_their_sentence():
    assert pieces('He said "Stop." Then left. (Really.) Ok') == [
        'He said "Stop." ',
        "Then left. ",
        "(Really.) ",
        "Ok",
    ]


def test_markdown_emphasis_closer_stays_with_its_sentence():
    assert pieces("**Note.** The end.") == ["**Note.** ", "The end."]


def test_question_and_exclamation_still_split_before_uppercase():
    assert pieces("Why? Because! Yes") == ["Why? ", "Because! ", "Yes"]


def test_offsets_are_exact_with_unicode_and_crlf():
    text = "Ça coûte 4.6 €. Très cher!\r\nNouvelle ligne… Fin."
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == ["Ça coûte 4.6 €. ", "Très cher!\r\n", "Nouvelle ligne… ", "Fin."]


def test_leading_whitespace_stays_in_first_span():
    assert pieces("  Lead. Then") == ["  Lead. ", "Then"]
