"""Property tests: random Markdown-ish documents, every strategy, the chunker's invariants.

The generator builds each document from known parts, so it knows where every section's
body lies without asking the chunker: that is the oracle for coverage and section names.
"""
from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from citeline.pipeline.chunk import STRATEGIES, chunk_document
from citeline.schemas.document import carries_content

TITLE = "Tïtle"

# Word characters never start a heading or a fence: no '#', '`' or '~', and no whitespace.
_WORD_CHARS = st.characters(
    blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters="#`~"
)
_SPECIAL_WORDS = [
    "e.g.", "i.e.", "Fig.", "et", "al.", "vs.", "4.6B", "13.06%", "v1.2.3", "J.", "Smith",
    "Dr.", "...", "…", "naïve", "日本語", "émigré", "x²", "(see", "it.)", '"quoted."', "3.",
]
_WORDS = st.one_of(
    st.sampled_from(_SPECIAL_WORDS),
    st.text(alphabet=_WORD_CHARS, min_size=1, max_size=10),
    st.text(alphabet="abc", min_size=30, max_size=200),  # sometimes longer than the budget
)
_SENTENCES = st.builds(
    lambda words, end: " ".join(words) + end,
    st.lists(_WORDS, min_size=1, max_size=12),
    st.sampled_from([".", "!", "?", "", '."', ".)", "..."]),
)
_INLINE_GAPS = st.sampled_from([" ", " ", "\n", "  ", "\u00a0", "\t", "\u2028"])
_BLOCK_GAPS = st.sampled_from(["\n\n", "\n \n", "\n\n\n", "\n\t\n", "\r\n\r\n"])
_CODE_LINES = st.one_of(
    st.sampled_from(["## fake heading", "x = 1", "", "    return y", "# comment", "a.b.c(1.5)"]),
    st.text(alphabet="abcdef ()=.,0123456789", min_size=0, max_size=150),
)


@st.composite
def _prose(draw) -> str:
    sentences = draw(st.lists(_SENTENCES, min_size=1, max_size=8))
    text = sentences[0]
    for sentence in sentences[1:]:
        text += draw(_INLINE_GAPS) + sentence
    return text


@st.composite
def _fenced(draw) -> str:
    fence = draw(st.sampled_from(["```", "~~~", "````"]))
    lines = draw(st.lists(_CODE_LINES, min_size=0, max_size=15))
    return "\n".join([fence + draw(st.sampled_from(["", "python"])), *lines, fence])


_TABLE = st.lists(st.text(alphabet="abc 0123456789.", max_size=40), min_size=1, max_size=12).map(
    lambda rows: "\n".join(f"| {row} | 1.5 |" for row in rows)
)
_MATH = st.lists(st.text(alphabet="abxy_^{}+=\\ ", max_size=60), min_size=1, max_size=8).map(
    lambda rows: "$$\n" + "\n".join(rows) + "\n$$"
)
_BLOCKS = st.one_of(_prose(), _prose(), _fenced(), _TABLE, _MATH)


@dataclass(frozen=True)
class Part:
    """Oracle for one section: ``[start, end)`` in the text, content from ``body`` (the
    heading's words, after its ``## ``), the heading line ending at ``heading_end``."""

    name: str
    start: int
    body: int
    end: int
    heading_end: int


@st.composite
def documents(draw) -> tuple[str, list[Part]]:
    text, parts = "", []
    if draw(st.booleans()):
        text = f"# {TITLE}\n"
    titled = text.startswith("# ")
    text += _body(draw)
    parts.append(Part("", 0, 2 if titled else 0, len(text), len(f"# {TITLE}") if titled else 0))
    for _ in range(draw(st.integers(0, 4))):
        name = draw(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=15))
        start = len(text)
        text += f"## {name}\n"
        heading_end = len(text) - 1
        text += _body(draw)
        parts.append(Part(name.strip(), start, start + 3, len(text), heading_end))
    return text, parts


def _body(draw) -> str:
    blocks = draw(st.lists(_BLOCKS, min_size=0, max_size=6))
    text = ""
    for block in blocks:
        text += block + draw(_BLOCK_GAPS)
    return text if text.endswith("\n") or not text else text + "\n"


def _section_of(parts: list[Part], at: int) -> Part:
    return [p for p in parts if p.start <= at][-1]


def _word_around(text: str, at: int) -> str:
    left, right = at, at
    while left > 0 and not text[left - 1].isspace():
        left -= 1
    while right < len(text) and not text[right].isspace():
        right += 1
    return text[left:right]


# max_examples comes from the profile (testkit.py): 200 in `make test`, fewer in `make check`.
_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# One document is checked under every strategy: generating documents is the slow part.
@_SETTINGS
@given(doc=documents(), data=st.data())
def test_invariants_hold_for_every_strategy(doc, data):
    text, parts = doc
    budget = data.draw(st.integers(8, 300), label="budget")
    overlap = data.draw(st.integers(0, budget - 1), label="overlap")
    for name, strategy in STRATEGIES.items():
        note(f"strategy {name}")
        chunks = chunk_document(text, TITLE, "d", name, budget, overlap)
        _check_slices_and_text(text, chunks, strategy, parts)
        _check_order_and_size(text, chunks, strategy, budget, overlap)
        if strategy.boundaries:
            _check_sections_and_coverage(text, chunks, _opened(text, parts))
        else:
            _check_blind(text, chunks, parts, budget)
        if strategy.boundaries and not strategy.overlap:
            _check_no_mid_word_cut(text, chunks, budget)


def _check_slices_and_text(text, chunks, strategy, parts):
    for i, c in enumerate(chunks):
        assert text[c.start : c.end] == c.content
        assert c.content and c.content == c.content.strip()
        assert c.ordinal == i
        if strategy.header:
            head = f"[{TITLE} > {c.section}]" if c.section else f"[{TITLE}]"
            opened = _opened(text, parts) if strategy.boundaries else parts
            assert c.text.startswith(f"[{TITLE}") and c.text == f"{head}\n{_embedded_body(text, c, opened)}"
        else:
            assert c.text == c.content


def _opened(text, parts):
    """The parts a boundary strategy packs: one holding only its heading, or only a fragment
    (too few words to stand alone), when not the last, joined to the next, named by it (by the
    first when it has no name), the heading words running from the first's (an untitled
    preamble's first word) to the next's; a last part of only a fragment joined to the one before."""
    out, held = [], None
    parts = [p for p in parts if p.end > p.start]  # an empty preamble is no section
    for i, part in enumerate(parts):
        if held is not None:
            words = text[part.body : part.heading_end].strip()
            name = part.name or held.name
            part = Part(name, held.start, held.body, part.end, part.heading_end if words else held.heading_end)
            held = None
        words = text[part.body : part.heading_end].strip()
        heading_only = words and not text[part.heading_end : part.end].strip()
        body = text[part.body : part.end]
        fragment = body.strip() and not carries_content(body)
        if (heading_only or fragment) and i + 1 < len(parts):
            held = part
            continue
        if out and fragment and not heading_only:
            out[-1] = Part(out[-1].name, out[-1].start, out[-1].body, part.end, out[-1].heading_end)
            continue
        out.append(part)
    return out


def _embedded_body(text, chunk, parts):
    """What a header strategy embeds after the header: the content, less the heading line of
    a section's first chunk when something follows it."""
    part = _section_of(parts, chunk.start)
    words = text[part.body : part.heading_end]
    rest = text[part.heading_end : chunk.end].strip()
    opens = words.strip() and chunk.start == part.heading_end - len(words.lstrip())
    return rest if opens and rest else chunk.content


def _check_order_and_size(text, chunks, strategy, budget, overlap):
    """Own text (past the previous chunk's end) fits the budget; overlap adds at most ``overlap``."""
    for prev, cur in zip([None, *chunks], chunks):
        own_from = max(cur.start, prev.end) if prev else cur.start
        assert len(text[own_from : cur.end].strip()) <= budget
        if prev is None:
            continue
        assert prev.start <= cur.start and prev.end < cur.end
        if strategy.overlap:
            assert prev.end - cur.start <= overlap
        else:
            assert prev.end <= cur.start
            assert len(cur.content) <= budget


def _check_sections_and_coverage(text, chunks, parts):
    for part in parts:
        mine = [c for c in chunks if part.body <= c.start and c.end <= part.end]
        assert all(c.section == part.name for c in mine)
        covered = {i for c in mine for i in range(c.start, c.end)}
        missing = [i for i in range(part.body, part.end) if not text[i].isspace() and i not in covered]
        assert not missing, f"uncovered characters in section {part.name!r}: {missing[:5]}"
    assert sum(1 for p in parts for c in chunks if p.body <= c.start and c.end <= p.end) == len(chunks)


def _check_no_mid_word_cut(text, chunks, budget):
    for c in chunks:
        if c.start > 0 and not text[c.start - 1].isspace():
            assert len(_word_around(text, c.start)) > budget
        if c.end < len(text) and not text[c.end].isspace():
            assert len(_word_around(text, c.end - 1)) > budget


def _check_blind(text, chunks, parts, budget):
    covered = {i for c in chunks for i in range(c.start, c.end)}
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
    for c in chunks:
        assert c.section == _section_of(parts, c.start).name
        assert c.end <= (c.end - 1) // budget * budget + budget  # ends inside its window
