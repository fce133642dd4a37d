"""Check a generated answer against the sources it was given.

Every ``[n]`` must name a source the server numbered (the citations' own indexes, not
a count): unknown numbers are removed from the answer and reported. An escaped
``\\[n]`` is not a citation: the prompt writes bracketed numbers found in document
text that way (query.prompt), so a model echoing a document's "[2]" cites nothing. Sentences without any citation are flagged, except those
that say the sources do not contain the answer (the prompt asks for exactly that).
Citation forms understood: ``[1]``, ``[1, 2]``, ``[1,2]`` and ``[1][2]``.
"""
from __future__ import annotations

import re
from collections.abc import Collection

from citeline.schemas.retrieval import AnswerCheck

# A citation group as the model writes it: [1] or [1, 2] (query.prompt escapes it in documents).
CITATION_GROUP = r"\[\s*\d+(?:\s*,\s*\d+)*\s*\]"
_GROUP = re.compile(r"(?P<pre>[ \t]*)(?<!\\)(?P<group>" + CITATION_GROUP + ")")  # not after a backslash
_CITED = re.compile(r"(?<!\\)" + CITATION_GROUP)
# A sentence ends at . ! or ? followed by whitespace or the end of the line; citations
# written after the full stop ("Claim. [1]") still belong to the sentence before.
_END = re.compile(r"[.!?]+(?:[ \t]*" + CITATION_GROUP + r")*(?=\s|$)")
_WORD = re.compile(r"\w")
_SAYS_NO = re.compile(
    r"\b(?:(?:do|does|did)\s*(?:not|n['’]t)\s+(?:contain|include|mention|cover|provide|say"
    r"|address|answer|specify|state|describe|discuss|give|explain)"
    r"|(?:cannot|can['’]t|can\s+not|unable\s+to)\s+(?:answer|find|determine|tell)"
    r"|not\s+(?:contained|mentioned|covered|provided|found|addressed|specified|stated)\s+in"
    r"|no\s+(?:information|mention|answer))\b",
    re.IGNORECASE,
)
_SOURCES = re.compile(
    r"\b(?:sources?|context|documents?|passages?|excerpts?|provided|information)\b",
    re.IGNORECASE,
)


def check_answer(answer: str, sources: Collection[int]) -> AnswerCheck:
    """Remove citation numbers that name no source and flag uncited sentences.

    Args:
        answer: the generator's text.
        sources: the numbers of the sources the server put in the prompt
            (``[c.index for c in citations]``); no other number is valid.

    Returns:
        An ``AnswerCheck`` with the cleaned answer, the valid indexes cited, the
        unknown numbers removed and the sentences left without a citation.

    >>> c = check_answer("Paris is big [1]. It has 2 rivers [7].", (1, 2))
    >>> c.answer, c.cited, c.unknown, c.uncited
    ('Paris is big [1]. It has 2 rivers.', (1,), (7,), ('It has 2 rivers.',))
    """
    cited: set[int] = set()
    unknown: list[int] = []

    def clean(match: re.Match) -> str:
        numbers = [int(n) for n in re.findall(r"\d+", match["group"])]
        valid = [n for n in numbers if n in sources]
        unknown.extend(n for n in numbers if n not in valid and n not in unknown)
        cited.update(valid)
        if not valid:
            return ""  # drop the whole group and the space before it
        if len(valid) == len(numbers):
            return match[0]
        return f"{match['pre']}[{', '.join(map(str, valid))}]"

    cleaned = _GROUP.sub(clean, answer)
    uncited = tuple(s for s in split_sentences(cleaned) if _needs_citation(s))
    return AnswerCheck(cleaned, tuple(sorted(cited)), tuple(unknown), uncited)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences, line by line, keeping trailing citations attached.

    >>> split_sentences("A is 1. [1] B is 2 [2]!\\nC 3.5 x")
    ['A is 1. [1]', 'B is 2 [2]!', 'C 3.5 x']
    """
    sentences: list[str] = []
    for line in text.splitlines():
        pos = 0
        for match in _END.finditer(line):
            sentences.append(line[pos : match.end()].strip())
            pos = match.end()
        sentences.append(line[pos:].strip())
    return [s for s in sentences if s]


def says_not_in_sources(sentence: str) -> bool:
    """Whether the sentence says the sources do not contain the answer.

    Needs both a negation ("do not contain", "cannot answer", "no information") and
    a word for the sources, so "The model does not include bias." is still a claim.

    >>> says_not_in_sources("The sources do not contain the answer.")
    True
    >>> says_not_in_sources("The model does not include bias terms.")
    False
    """
    return bool(_SAYS_NO.search(sentence) and _SOURCES.search(sentence))


def _needs_citation(sentence: str) -> bool:
    if _CITED.search(sentence):
        return False
    bare = sentence.strip()
    # Punctuation, Markdown headings and list lead-ins ("The steps are:") are not claims.
    if not _WORD.search(bare) or bare.startswith("#") or bare.endswith(":"):
        return False
    return not says_not_in_sources(bare)
