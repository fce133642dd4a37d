"""The generator prompt, exactly SPEC §5's shape."""
from __future__ import annotations

import pytest

from citeline.query.prompt import build_prompt
from citeline.schemas.retrieval import Citation


def _cite(index: int, document: str, label: str, quote: str) -> Citation:
    return Citation(index, f"id{index}", document, label, "#char=0,1", quote)


def test_prompt_matches_the_spec_layout_exactly():
    citations = [
        _cite(1, "04-classification.md", "Classification > How many test examples do I need?",
              "Use at least 1,000 examples."),
        _cite(2, "report.pdf", "Report, p. 3", "Line one.\nLine two."),
    ]
    expected = (
        "Answer using ONLY the numbered sources below. Cite every claim as [n].\n"
        "If the sources do not contain the answer, say so and stop.\n"
        "\n"
        "SOURCES\n"
        "[1] 04-classification.md - Classification > How many test examples do I need?\n"
        "Use at least 1,000 examples.\n"
        "\n"
        "[2] report.pdf - Report, p. 3\n"
        "Line one.\nLine two.\n"
        "\n"
        "QUESTION\n"
        "How many test examples?\n"
    )
    assert build_prompt("How many test examples?", citations) == expected


def test_surrounding_whitespace_of_quote_and_question_does_not_move_blank_lines():
    c = _cite(1, "a.md", "A", "\n\n  body text  \n\n")
    prompt = build_prompt("  why?\n", [c])
    assert prompt.endswith("SOURCES\n[1] a.md - A\nbody text\n\nQUESTION\nwhy?\n")
    assert c.quote == "\n\n  body text  \n\n"  # the citation's quote is untouched


def test_interior_blank_lines_of_a_quote_are_kept():
    c = _cite(1, "a.md", "A", "para one\n\npara two")
    assert "[1] a.md - A\npara one\n\npara two\n\nQUESTION\n" in build_prompt("q", [c])


def test_sources_are_numbered_by_their_citation_index():
    prompt = build_prompt("q", [_cite(3, "c.md", "C", "x"), _cite(1, "a.md", "A", "y")])
    assert prompt.index("[3] c.md - C\nx\n") < prompt.index("[1] a.md - A\ny\n")


def test_no_sources_means_no_prompt():
    with pytest.raises(ValueError, match="no sources"):
        build_prompt("q", [])


def test_blank_question_is_rejected():
    with pytest.raises(ValueError, match="question is empty"):
        build_prompt(" \n", [_cite(1, "a.md", "A", "x")])
