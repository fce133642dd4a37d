"""The chunker, rule by rule, on small hand-written Markdown, plus the dev corpus needles."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from citeline.pipeline.chunk import (
    CHUNKER_VERSION,
    STRATEGIES,
    Strategy,
    chunk_document,
    get_strategy,
    split_sections,
)
from citeline.schemas.document import carries_content


def chunks_of(text, strategy="C", budget=512, overlap=None, title="Doc"):
    if overlap is None:  # the chunker rejects overlap >= budget for every strategy
        overlap = min(64, budget // 2)
    chunks = chunk_document(text, title, "doc-1", strategy, budget, overlap)
    for i, c in enumerate(chunks):
        assert text[c.start : c.end] == c.content
        assert c.ordinal == i
        assert c.doc_id == "doc-1"
    return chunks


def contents(text, **kwargs):
    return [c.content for c in chunks_of(text, **kwargs)]


# --- strategies and arguments ----------------------------------------------------------


def test_version_is_a_string():
    assert isinstance(CHUNKER_VERSION, str) and CHUNKER_VERSION


def test_strategies_combine_three_ingredients():
    assert STRATEGIES == {
        "A": Strategy("A", False, False, False),
        "B": Strategy("B", False, False, True),
        "C": Strategy("C", True, False, False),
        "D": Strategy("D", True, False, True),
        "E": Strategy("E", True, True, False),
        "F": Strategy("F", True, True, True),
    }


def test_get_strategy_is_case_insensitive():
    assert get_strategy("e") is STRATEGIES["E"]
    assert get_strategy(" F ") is STRATEGIES["F"]


def test_unknown_strategy_lists_valid_names():
    with pytest.raises(ValueError, match="A, B, C, D, E, F"):
        get_strategy("G")
    with pytest.raises(ValueError, match="valid strategies"):
        chunk_document("x", "t", "d", strategy="blind")


@pytest.mark.parametrize(
    ("budget", "overlap", "message"),
    [
        (0, 0, "budget must be > 0"),
        (-5, 0, "budget must be > 0"),
        (100, -1, "overlap must satisfy"),
        (100, 100, "overlap must satisfy"),
        (100, 150, "overlap must satisfy"),
        (100.0, 10, "budget must be an int"),
        (True, 0, "budget must be an int"),
        (100, "8", "overlap must be an int"),
    ],
)
def test_bad_sizes_raise(budget, overlap, message):
    with pytest.raises(ValueError, match=message):
        chunk_document("Some text.", "t", "d", "C", budget, overlap)


def test_empty_and_blank_texts_give_no_chunks():
    for strategy in STRATEGIES:
        assert chunk_document("", "t", "d", strategy) == []
        assert chunk_document(" \n\n\t \n", "t", "d", strategy) == []


# --- sections -------------------------------------------------------------------------


def test_heading_words_open_the_chunk_and_name_the_section():
    """A heading's words are quoted with the text they open, not only named."""
    text = "## Intro\nHello world.\n\n## Method\nWe did things.\n"
    chunks = chunks_of(text)
    assert [(c.section, c.content) for c in chunks] == [
        ("Intro", "Intro\nHello world."),
        ("Method", "Method\nWe did things."),
    ]


def test_preamble_is_kept_and_title_words_are_content():
    text = "# The Title\n\nPreamble text here.\n\n## First\nBody of the first.\n"
    chunks = chunks_of(text)
    assert [(c.section, c.content) for c in chunks] == [
        ("", "The Title\n\nPreamble text here."), ("First", "First\nBody of the first.")]


@pytest.mark.parametrize("strategy", "CDEF")
def test_a_text_of_headings_only_gets_chunks(strategy):
    """An HTML page of one <h3>, a deck of titles: indexed with zero chunks before."""
    text = "# Deck\n\n## Dhirubhai Ambani\n\n## Founder Chairman\n"
    chunks = chunks_of(text, strategy=strategy)
    assert [(c.section, c.content) for c in chunks] == [
        ("Founder Chairman", "Deck\n\n## Dhirubhai Ambani\n\n## Founder Chairman")]
    assert [c.content for c in chunks_of("## Only a heading", strategy=strategy)] == ["Only a heading"]


def test_a_heading_over_nothing_but_the_next_heading_opens_its_chunk():
    """A chapter's title over its first subsection, a document's title over its first section:
    quoted with the text they open, not alone (a lone heading outranked the answer)."""
    text = "# Manual\n\n## 2 Structure\n\n## 2.1 Limits\nREAL is not handled.\n\n## 3 End\n"
    chunks = chunks_of(text, strategy="E", title="Manual")
    assert [(c.section, c.content, c.text) for c in chunks] == [
        ("2.1 Limits", "Manual\n\n## 2 Structure\n\n## 2.1 Limits\nREAL is not handled.",
         "[Manual > 2.1 Limits]\nREAL is not handled."),
        ("3 End", "3 End", "[Manual > 3 End]\n3 End"),  # the last heading has nothing to open
    ]


def test_an_empty_heading_opened_by_a_lone_one_is_named_by_it():
    """"## " names nothing: the pair keeps the lone heading's name, whose words would otherwise be
    in neither the header nor the embedded text (found by the property test)."""
    chunks = chunks_of("## Limits\n## \nREAL is not handled.\n", strategy="E", title="Manual")
    assert [(c.section, c.text) for c in chunks] == [("Limits", "[Manual > Limits]\n## \nREAL is not handled.")]


def test_a_heading_alone_before_a_long_paragraph_is_folded_into_it_whatever_it_ends_with():
    body = "The REAL type is not handled by the library at all. " * 9 + "It fills the chunk nearly all the way up."
    text = f"## Limits (draft.)\n\n{body.strip()}\n\nA closing paragraph follows the body."
    got = contents(text, budget=512)
    assert got[0].startswith("Limits (draft.)\n\nThe REAL type") and all(len(c) <= 512 for c in got)


def test_text_without_headings_is_one_unnamed_section():
    chunks = chunks_of("Just a paragraph.\n\nAnd another.")
    assert [c.section for c in chunks] == [""]
    assert chunks[0].content == "Just a paragraph.\n\nAnd another."


def test_only_a_leading_title_line_is_skipped():
    text = "Intro line.\n# Not a title\n"
    assert contents(text) == ["Intro line.\n# Not a title"]


def test_heading_inside_code_fence_does_not_split():
    text = "## Real\nBefore.\n\n```python\n## not a heading\nx = 1\n```\n\nAfter.\n"
    chunks = chunks_of(text)
    assert {c.section for c in chunks} == {"Real"}
    assert "## not a heading" in chunks[0].content


def test_heading_inside_tilde_fence_does_not_split():
    text = "~~~~\n## inside\n~~~\nstill inside\n~~~~\n## Outside\nBody."
    sections = split_sections(text)
    assert [s.name for s in sections] == ["", "Outside"]


def test_inline_triple_backticks_do_not_open_a_fence():
    text = "```inline``` code\n## Heading\nBody."
    assert [s.name for s in split_sections(text)] == ["", "Heading"]


def test_unclosed_fence_runs_to_the_end():
    text = "## A\n```\n## B\ncode"
    assert [s.name for s in split_sections(text)] == ["A"]


def test_deeper_headings_do_not_split():
    text = "## Top\nOne.\n\n### Sub\nTwo."
    assert [s.name for s in split_sections(text)] == ["Top"]


def test_heading_name_is_stripped_and_crlf_tolerated():
    text = "##  Spaced Out  \r\nBody.\r\n"
    chunks = chunks_of(text)
    assert [(c.section, c.content) for c in chunks] == [("Spaced Out", "Spaced Out  \r\nBody.")]


def test_sections_cover_the_text_in_order():
    text = "# T\npre\n## A\na\n## B\nb"
    sections = split_sections(text)
    assert [(s.name, text[s.start : s.end]) for s in sections] == [
        ("", "# T\npre\n"),
        ("A", "## A\na\n"),
        ("B", "## B\nb"),
    ]
    assert [text[s.body_start : s.end] for s in sections] == ["T\npre\n", "A\na\n", "B\nb"]
    assert [s.heading and text[s.heading[0] : s.heading[1]] for s in sections] == ["T", "A", "B"]
    assert split_sections("no title\n## \nb")[1].heading is None


def test_chunks_never_cross_sections():
    text = "## A\n" + "Short one.\n\n" * 3 + "## B\n" + "Another.\n\n" * 3
    chunks = chunks_of(text, budget=1000)
    assert [c.section for c in chunks] == ["A", "B"]


# --- packing --------------------------------------------------------------------------


def test_paragraphs_are_packed_greedily_within_budget():
    paragraphs = [f"Paragraph number {i} is here." for i in range(6)]  # 27 chars each
    text = "\n\n".join(paragraphs)
    got = contents(text, budget=60)
    assert got == ["\n\n".join(paragraphs[i : i + 2]) for i in range(0, 6, 2)]


def test_blank_line_with_spaces_separates_paragraphs():
    text = "First para.\n   \t\nSecond para."
    assert contents(text, budget=12) == ["First para.", "Second para."]


def test_oversized_paragraph_is_split_at_sentences_and_packed():
    text = "Alpha one is here. Beta two is here. Gamma three here. Delta four here."
    got = contents(text, budget=40)
    assert got == ["Alpha one is here. Beta two is here.", "Gamma three here. Delta four here."]


def test_oversized_paragraph_does_not_merge_with_neighbours():
    big = "Sentence one is long. Sentence two is long. Sentence three is here."
    text = f"Tiny but whole.\n\n{big}\n\nTail of it all."
    got = contents(text, budget=45)
    assert got == ["Tiny but whole.", "Sentence one is long. Sentence two is long.", "Sentence three is here.",
                   "Tail of it all."]


@pytest.mark.parametrize(
    "lone",
    ["asn1 print structure", "Which ASN.1 type does libtasn1 not handle", ". . . . . . . . . 23",
     "2.1 Limitations . . . . . . . . . . . 3"],
)
def test_a_lone_heading_or_toc_line_is_folded_into_what_follows(lone):
    """Alone, such a line became a chunk and outranked the paragraph that answers."""
    body = "The REAL type is not handled by the library at all. " * 9 + "It fills the chunk nearly all the way up."
    assert len(body.strip()) == 509  # fits the budget alone, not beside the line
    text = f"{lone}\n\n{body.strip()}\n\nA closing paragraph follows the body."
    got = contents(text, budget=512)
    assert got[0].startswith(lone + "\n\nThe REAL type") and all(len(c) <= 512 for c in got)
    assert lone not in got[1:]


def test_a_lone_line_stays_when_not_even_a_sentence_fits_beside_it():
    long_sentence = "word " * 100
    got = contents(f"Heading\n\n{long_sentence.strip()}.", budget=502)
    assert got == ["Heading", long_sentence.strip() + "."]


@pytest.mark.parametrize("slight", ["AND", "https://www.ril.com/ar2023", "Corporate Overview", "12", "1\n\nChapter 1."])
def test_a_fragment_last_in_its_section_closes_the_chunk_before_it(slight):
    """A word, a URL, a sidebar label, a page number after the body of its section were
    chunks of their own, close to any question because they say almost nothing."""
    body = "The founder set up the first mill in 1966. " * 4 + "He built it into a large firm."
    text = f"## Vision\n\n{body.strip()}\n\n{slight}\n\n## Next\nMore words follow here."
    got = contents(text)
    assert got[0] == text[3 : text.index("\n\n## Next")]  # one chunk: heading, body and the fragment


def test_a_fragment_that_does_not_fit_whole_takes_the_last_sentences_and_leaves_the_heading_its_body():
    sentences = [f"Sentence {w} of the founding story is long enough to count." for w in "abcdefgh"]
    body = " ".join(sentences)
    assert len(f"Vision\n\n{body}") <= 512 < len(f"Vision\n\n{body}\n\nhttps://www.ril.com/ar2023\n\nCorporate Overview")
    text = f"## Vision\n\n{body}\n\nhttps://www.ril.com/ar2023\n\nCorporate Overview"
    chunks = chunks_of(text)
    assert [c.content for c in chunks] == [
        "Vision\n\n" + " ".join(sentences[:-1]),
        sentences[-1] + "\n\nhttps://www.ril.com/ar2023\n\nCorporate Overview",
    ]
    assert all(carries_content(c.content) for c in chunks)


def test_a_section_of_a_fragment_opens_the_next_and_the_last_closes_the_one_before():
    text = ("## Overview\n\nAND\n\n## Chairman\n\nThe chairman thanks the shareholders.\n\n"
            "## Back cover\n\n®")
    chunks = chunks_of(text, strategy="E", title="Report")
    assert [(c.section, c.content, c.text) for c in chunks] == [
        ("Chairman", text[3:], "[Report > Chairman]\nThe chairman thanks the shareholders.\n\n## Back cover\n\n®"),
    ]


def test_a_text_of_nothing_but_a_fragment_is_one_chunk():
    assert contents("https://www.ril.com/ar2023\n") == ["https://www.ril.com/ar2023"]


def test_short_sentences_are_not_folded():
    text = "It is done.\n\n" + "Next part is long. " * 27
    assert contents(text, budget=500)[0] == "It is done."


@pytest.mark.parametrize(
    "needle",
    [
        "Imagen has 4.6B parameters in its text encoder.",
        "There is only a 13.06% chance that the patient has HIV.",
        "Use a modern optimizer, e.g. Adam, in most cases.",
        "As Fig. 3 shows, the curve flattens after warmup.",
        "Healthy patients, i.e. Negatives, test positive rarely.",
        "We pin v1.2.3 of the library for reproducibility.",
    ],
)
def test_needles_with_periods_survive_sentence_splitting(needle):
    filler = " ".join(f"Filler sentence {w} goes here." for w in "abcdefgh")
    text = f"## S\n{filler} {needle} {filler}\n"
    for strategy in "CDEF":
        found = [c for c in chunks_of(text, strategy=strategy, budget=80, overlap=16)]
        assert any(needle in c.content for c in found), strategy


def test_code_block_without_full_stops_is_split_at_line_breaks():
    lines = [f"    x{i} = compute(x{i - 1}, weight_{i})" for i in range(1, 21)]
    text = "## Code\n```python\n" + "\n".join(lines) + "\n```\n"
    chunks = chunks_of(text, budget=200)
    assert len(chunks) > 1
    for c in chunks:
        assert len(c.content) <= 200
        assert text[c.end] == "\n"  # every cut is at a line break
        assert text[c.start - 1] in "\n "


def test_hard_cut_never_falls_inside_a_word():
    words = [f"word{i:03d}" for i in range(60)]  # one line, no sentence end
    text = " ".join(words)
    chunks = chunks_of(text, budget=50)
    assert len(chunks) > 1
    for c in chunks:
        assert len(c.content) <= 50
        assert c.content.split() == [w for w in c.content.split() if w in words]
    assert " ".join(c.content for c in chunks) == text


def test_a_word_longer_than_the_budget_is_the_only_mid_word_cut():
    text = "short " + "x" * 25 + " tail"
    got = contents(text, budget=10)
    assert got == ["short", "x" * 10, "x" * 10, "xxxxx tail"]


def test_math_and_tables_fall_back_to_lines():
    table = "\n".join(f"| row {i} | {i * 1.5} | value |" for i in range(12))
    math = "$$\n" + "\n".join(f"a_{i} = b_{i} + c_{i} \\\\" for i in range(12)) + "\n$$"
    text = f"## T\n{table}\n\n{math}\n"
    chunks = chunks_of(text, budget=100)
    assert chunks[0].content.startswith("T\n| row 0 |")
    for c in chunks:
        assert len(c.content) <= 100
        assert text[c.end] == "\n" and text[c.start - 1] in ("\n", " ")


# --- header ---------------------------------------------------------------------------


def test_header_with_section():
    chunks = chunks_of("## Results\nIt works.", strategy="E", title="My Doc")
    assert chunks[0].content == "Results\nIt works."
    assert chunks[0].text == "[My Doc > Results]\nIt works."  # the header names it once


def test_header_without_section():
    chunks = chunks_of("# My Doc\nIt works.", strategy="F", title="My Doc")
    assert chunks[0].text == "[My Doc]\nIt works."


@pytest.mark.parametrize("strategy", "EF")
def test_a_chunk_of_its_heading_alone_embeds_the_heading(strategy):
    chunks = chunks_of("## Intro\nFirst things first.\n\n## Results\n", strategy=strategy, title="My Doc")
    assert [(c.content, c.text) for c in chunks][-1] == ("Results", "[My Doc > Results]\nResults")


def test_only_the_chunk_that_opens_with_the_heading_drops_it_from_the_embedded_text():
    text = "## Results\n" + "\n\n".join(f"Results line {i} is here." for i in range(8))
    chunks = chunks_of(text, strategy="F", budget=60, overlap=20, title="D")
    assert len(chunks) > 2 and chunks[0].content.startswith("Results\nResults line 0")
    assert chunks[0].text == "[D > Results]\n" + chunks[0].content.removeprefix("Results\n")
    assert all(c.text == f"[D > Results]\n{c.content}" for c in chunks[1:])


@pytest.mark.parametrize("strategy", "ABCD")
def test_no_header_means_text_equals_content(strategy):
    for c in chunks_of("## S\nSome words here.\n\nMore words.", strategy=strategy, budget=12, overlap=4):
        assert c.text == c.content


# --- overlap --------------------------------------------------------------------------


def test_boundary_overlap_is_an_exact_slice_reaching_into_the_previous_chunk():
    paragraphs = [f"Paragraph {i} has a handful of words in it." for i in range(8)]
    text = "## S\n" + "\n\n".join(paragraphs)
    plain = chunks_of(text, strategy="C", budget=100)
    lapped = chunks_of(text, strategy="D", budget=100, overlap=64)
    assert [c.end for c in plain] == [c.end for c in lapped]
    assert lapped[0].start == plain[0].start
    for prev, cur, own in zip(lapped, lapped[1:], plain[1:]):
        assert cur.start < prev.end  # really overlaps
        assert prev.end - cur.start <= 64
        assert cur.start == prev.end - 64 + _leading_space(text[prev.end - 64 :])
        assert cur.content.endswith(own.content)


def _leading_space(s):
    return len(s) - len(s.lstrip())


def test_overlap_does_not_cross_sections():
    text = "## A\nFirst section text.\n\n## B\nSecond section text."
    chunks = chunks_of(text, strategy="F", budget=100, overlap=64)
    assert [(c.section, c.content) for c in chunks] == [
        ("A", "A\nFirst section text."),
        ("B", "B\nSecond section text."),
    ]


def test_overlap_never_reaches_before_the_previous_chunk():
    text = "## S\nTiny.\n\n" + "Longer paragraph with words. " * 3
    chunks = chunks_of(text, strategy="D", budget=50, overlap=40)
    assert chunks[1].start == chunks[0].start  # the 5-char chunk is copied whole


# --- blind ----------------------------------------------------------------------------


def test_blind_windows_are_fixed_and_include_headings():
    text = "## Head\n" + "abcdefghij" * 5
    chunks = chunks_of(text, strategy="A", budget=16)
    assert [(c.start, c.end) for c in chunks] == [(0, 16), (16, 32), (32, 48), (48, 58)]
    assert chunks[0].content == "## Head\nabcdefgh"
    assert {c.section for c in chunks} == {"Head"}


def test_blind_windows_trim_whitespace_and_skip_blank_windows():
    text = "abc" + " " * 20 + "xyz  "
    chunks = chunks_of(text, strategy="A", budget=10)
    assert [(c.start, c.end, c.content) for c in chunks] == [(0, 3, "abc"), (23, 26, "xyz")]


def test_blind_section_is_where_the_chunk_starts():
    text = "pre text\n## One\n" + "x" * 30 + "\n## Two\n" + "y" * 30
    chunks = chunks_of(text, strategy="A", budget=20)
    for c in chunks:
        expected = "" if c.start < text.index("## One") else "One" if c.start < text.index("## Two") else "Two"
        assert c.section == expected


def test_blind_overlap_takes_the_previous_tail():
    text = "0123456789" * 5
    chunks = chunks_of(text, strategy="B", budget=20, overlap=5)
    assert [(c.start, c.end) for c in chunks] == [(0, 20), (15, 40), (35, 50)]


# --- the dev corpus -------------------------------------------------------------------


def _dev_corpus() -> Path | None:
    here = Path(__file__).resolve()
    candidates = [os.environ.get("CITELINE_DEV_CORPUS", "")]
    candidates += [str(p / "shared" / "corpora" / "dev") for p in here.parents]
    for candidate in candidates:
        if candidate and (Path(candidate) / "ground_truth.jsonl").is_file():
            return Path(candidate)
    return None


def _destroyed(corpus: Path, strategy: str) -> list[str]:
    """Ids of needles that no chunk's content holds whole (whitespace runs collapsed)."""
    squash = lambda s: re.sub(r"\s+", " ", s)  # noqa: E731
    cache: dict[str, list[str]] = {}
    lost = []
    for line in (corpus / "ground_truth.jsonl").read_text(encoding="utf-8").splitlines():
        truth = json.loads(line)
        if truth["doc"] not in cache:
            with open(corpus / "docs" / truth["doc"], encoding="utf-8", newline="") as f:
                text = f.read()
            cache[truth["doc"]] = [squash(c.content) for c in chunk_document(text, truth["doc"], truth["doc"], strategy)]
        if not any(squash(truth["needle"]) in c for c in cache[truth["doc"]]):
            lost.append(truth["id"])
    return lost


@pytest.mark.skipif(_dev_corpus() is None, reason="dev corpus (shared/corpora/dev) not found; set CITELINE_DEV_CORPUS")
def test_dev_corpus_boundaries_destroy_no_needle_and_blind_does():
    corpus = _dev_corpus()
    lost = {strategy: _destroyed(corpus, strategy) for strategy in STRATEGIES}
    print("needles destroyed per strategy:", {k: len(v) for k, v in lost.items()})
    for strategy in "CDEF":
        assert lost[strategy] == [], strategy
    assert lost["A"], "blind chunking is expected to cut at least one needle"
