"""Names a question uses that no indexed passage holds: evidence a distance does not have.

An *adjacent* question (same field, answer absent) usually names the thing the documents do
not cover: "How does the update gate of a GRU decide…" to a book without GRUs, "…with
cargo-nextest" to a Cargo reference that never mentions nextest. Its words sit as close to
the corpus as an answerable question's do (cosine 0.19 on cargo-reference, docs/query.md),
so no cut separates them; but the name itself is simply not in the index. A user's own
wording of an answerable question rarely *names* something the documents never mention: its
unfamiliar words are everyday ones ("my laptop", "weird"), which are not names.

So only words written like names are checked: a capital inside the word (GRU, LoRA,
InfiniBand), a capital where no sentence starts (Kalman), letters with digits (aarch64), a
compound joined by ``-_./`` (cargo-nextest, rust-toolchain.toml), or code in backticks. A
name is unmentioned when one of its parts of three letters or more is in no passage at all,
asked through the index's own full-text analyser (lower case, stemmed: "GPUs" meets "GPU").
The check costs one full-text look-up per part (at most :data:`MAX_LOOKUPS`); a question
without names costs none.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from citeline.query.words import STOPWORDS

# The most parts one question has looked up: a question is a sentence or two, and a pasted page
# of names must not cost a full-text query per word (the rest are not checked).
MAX_LOOKUPS = 16
MIN_PART = 3  # shorter parts ("CI", "OS", "x86" -> "x") are too often abbreviations a corpus spells out
# What LanceDB's English full-text analyser drops (NLTK's list, contractions' stems included) beyond
# citeline's own stopwords: such a word is in no index whatever the documents say, so a name made
# of it ("NOW", "Didn't") must not be looked up (index/store.py TEXT_INDEX: remove_stop_words).
ANALYSER_STOPWORDS = frozenset(
    """
    myself ourselves yourself yourselves himself herself themselves s t don now d ll m o re ve y ain
    aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn
    """.split()
)
_SKIPPED = STOPWORDS | ANALYSER_STOPWORDS

_TOKEN = re.compile(r"`[^`\n]+`|[\w][\w.+#/'\-]*[\w+#]|\w")
_PART = re.compile(r"[^\W\d_]+")
_JOINERS = re.compile(r"[A-Za-z0-9][-_./][A-Za-z0-9]")


def named_terms(question: str) -> list[str]:
    """The words of ``question`` written like names, in order, each once.

    >>> named_terms("How does the update gate of a GRU work?")
    ['GRU']
    >>> named_terms("How do I retry flaky tests with cargo-nextest? Tell me.")
    ['cargo-nextest']
    >>> named_terms("What does `cargo fix --edition` rewrite on aarch64 for the Kalman filter?")
    ['cargo fix --edition', 'aarch64', 'Kalman']
    >>> named_terms("My model is weird on new data, what's going on?")
    []
    """
    found: dict[str, None] = {}  # ordered, and a hostile question of many names costs linear time
    for match in _TOKEN.finditer(question):
        raw = match.group(0)
        term = raw.strip("`").strip(".'")
        # A bounded look back: a long hostile question costs linear time, not quadratic.
        before = question[max(0, match.start() - 64): match.start()].rstrip()
        starts_sentence = not before or before[-1] in ".!?:;"
        if term and term not in found and _is_name(raw, term, starts_sentence):
            found[term] = None
    return list(found)


def _is_name(raw: str, term: str, starts_sentence: bool) -> bool:
    if raw.startswith("`"):
        return True
    if not any(c.isalpha() for c in term):
        return False
    inner_capital = any(c.isupper() for c in term[1:])
    capitalised = term[0].isupper() and not starts_sentence and term.lower() not in _SKIPPED
    with_digits = any(c.isdigit() for c in term)
    return inner_capital or capitalised or with_digits or bool(_JOINERS.search(term))


def parts(term: str) -> list[str]:
    """The parts of a name the index is asked about: runs of letters, three or more, no stopword
    (citeline's or the full-text analyser's).

    >>> parts("rust-toolchain.toml")
    ['rust', 'toolchain', 'toml']
    >>> parts("x86_64-unknown-linux-musl")
    ['unknown', 'linux', 'musl']
    >>> parts("cargo fix --edition")
    ['cargo', 'fix', 'edition']
    """
    return [p for p in _PART.findall(term) if len(p) >= MIN_PART and p.lower() not in _SKIPPED]


def unmentioned(question: str, mentions: Callable[[str], bool]) -> tuple[str, ...]:
    """The parts of ``question``'s names that ``mentions`` (does any passage hold this word?) denies.

    Each distinct part is asked once, in the question's order, the first :data:`MAX_LOOKUPS` only.

    >>> corpus = {"cargo", "test", "tests", "flaky"}
    >>> unmentioned("How do I retry flaky tests with cargo-nextest?", lambda w: w.lower() in corpus)
    ('nextest',)
    >>> unmentioned("How do cargo tests run?", lambda w: False)
    ()
    """
    asked = _unique(p for term in named_terms(question) for p in parts(term))[:MAX_LOOKUPS]
    return tuple(word for word in asked if not mentions(word))


def _unique(words: Iterable[str]) -> list[str]:
    seen: dict[str, str] = {}
    for word in words:
        seen.setdefault(word.lower(), word)
    return list(seen.values())

