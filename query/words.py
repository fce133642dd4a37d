"""The words of a question or a passage that carry meaning, for questions drawn from text and
for the lexical evidence of the answerability score."""
from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_][\w'\-.]*[^\W_]|[^\W_]", re.UNICODE)
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had has
    have having he her here hers him his how i if in into is it its itself just me more most my no nor
    not of off on once only or other our ours out over own same she should so some such than that the
    their theirs them then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours
    """.split()
)


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry meaning: stopwords, numbers alone and markup dropped.

    >>> content_words("The forget gate of an LSTM | decides 42 things.")
    ['forget', 'gate', 'LSTM', 'decides', 'things']
    """
    words = (w.strip(".'-") for w in _WORD.findall(text))
    return [w for w in words if w and w.lower() not in STOPWORDS and not _numeric(w)]


def _numeric(word: str) -> bool:
    return not any(c.isalpha() for c in word)


def stems(text: str, length: int = 5) -> frozenset[str]:
    """Lower-cased prefixes of ``text``'s content words: "regularise" meets "regularisation".

    A crude stemmer on purpose: it needs no language data, and the answerability score
    only asks how much of a question a passage shares, not what the words mean.

    >>> sorted(stems("Dropout regularises; the regularisation of networks"))
    ['dropo', 'netwo', 'regul']
    """
    return frozenset(w.lower()[:length] for w in content_words(text))
