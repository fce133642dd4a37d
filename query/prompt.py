"""The prompt sent to the generator, exactly in SPEC §5's shape.

Layout (every line ends with a newline; one blank line closes each source block,
so the last block is followed by a blank line before ``QUESTION``)::

    Answer using ONLY the numbered sources below. Cite every claim as [n].
    If the sources do not contain the answer, say so and stop.

    SOURCES
    [1] <document name> - <locator label>
    <quote>

    [2] <document name> - <locator label>
    <quote>

    QUESTION
    <question>

Quotes and the question are trimmed of surrounding whitespace only, so the blank
lines stay where they are; the citation's own quote is never changed.
"""
from __future__ import annotations

from collections.abc import Sequence

from citeline.schemas.retrieval import Citation

INSTRUCTIONS = (
    "Answer using ONLY the numbered sources below. Cite every claim as [n].\n"
    "If the sources do not contain the answer, say so and stop.\n"
)


def build_prompt(question: str, citations: Sequence[Citation]) -> str:
    """The generator prompt for ``question`` over numbered ``citations``.

    Args:
        question: the user's question.
        citations: the sources, numbered by their ``index``.

    Returns:
        The prompt text, ending with the question and a newline.

    Raises:
        ValueError: if there are no citations (the refusal gate answers those) or
            the question is blank.

    >>> c = Citation(1, "d1", "a.md", "A > Intro", "#char=0,5", "Hello")
    >>> print(build_prompt("Hi?", [c]), end="")
    Answer using ONLY the numbered sources below. Cite every claim as [n].
    If the sources do not contain the answer, say so and stop.
    <BLANKLINE>
    SOURCES
    [1] a.md - A > Intro
    Hello
    <BLANKLINE>
    QUESTION
    Hi?
    """
    if not citations:
        raise ValueError("no sources: a refused query must not reach the prompt")
    if not question.strip():
        raise ValueError("the question is empty")
    blocks = "".join(source_block(c) for c in citations)
    return f"{INSTRUCTIONS}\nSOURCES\n{blocks}QUESTION\n{question.strip()}\n"


def source_block(citation: Citation) -> str:
    """One numbered source: header line, quote, blank line."""
    return (
        f"[{citation.index}] {citation.document} - {citation.label}\n"
        f"{citation.quote.strip()}\n\n"
    )
