"""Cut one canonical Markdown text into chunks. Pure: no I/O, no model.

Three independent ingredients make six strategies:

- **boundaries** (C-F): pack whole paragraphs of one ``## `` section into chunks of at most
  ``budget`` characters. A paragraph over the budget falls back to sentences
  (:mod:`pipeline.sentences`), a sentence over it to line breaks, a line over it to a
  cut at the last whitespace; only one word longer than the budget is ever cut mid-word.
  Without boundaries (A, B) the text is cut blindly every ``budget`` characters.
- **header** (E, F): the embedded ``text`` is ``[Title > Section]\\n`` + content, less the
  heading lines a section's first chunk opens with (the header names them).
- **overlap** (B, D, F): a chunk also starts ``overlap`` characters before the previous one
  ends, so its content may be up to ``budget + overlap`` characters long, plus the
  whitespace between the two (usually a blank line).

A heading's words are content: a section's first chunk starts at its heading's words (after
the ``## `` marker, or a leading ``# Title``'s ``# ``), so they are quoted with the text they
open, and a section that holds only its heading opens the next section's first chunk (the
last one is a chunk of its own): before, a founder's name set large, a slide's body in its
title, a page of ``<h3>`` lines were in no quote.
With boundaries, no chunk is a heading or a table-of-contents line alone when a chunk
follows it in its section: such a line is folded into the next chunk (within the budget).
Nor is any chunk a fragment (``schemas.document.carries_content``: fewer than three words, a
URL, a page number, ``AND``) while a neighbour can take it: it joins the next chunk of its
section, else the previous one, and a section that holds nothing more (a running head, a page's
furniture) opens the next section's first chunk, or closes the previous section's last one
when it ends the text ("Corporate Overview", "AND" and a bare URL were chunks of
their own, close to any question because they say almost nothing).

Every chunk satisfies ``text[chunk.start:chunk.end] == chunk.content``: offsets are found
in the text, never accumulated from lengths.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from citeline.pipeline.sentences import sentence_spans
from citeline.schemas.document import Chunk, carries_content

# 2: a lone heading or table-of-contents line is folded into the chunk after it.
# 3: a heading's words open the chunk of its section (they were outside every chunk), and a
# section holding only its heading opens the next one's.
# 4: a piece that says too little to stand alone (a word, a label, a URL, a page number) joins a
# neighbour: the next chunk of its section, else the one before; a section of nothing else opens
# the next section's chunk, or closes the previous one's when it is the last (an empty heading,
# "## ", opened so keeps the name of the heading before it).
CHUNKER_VERSION = "4"

Span = tuple[int, int]
# Told how far chunking got (an offset into the text) after each bounded step; it raises to
# stop the work (prepare's time limit). Every loop over lines, paragraphs, sentences and
# pieces calls it, so a long text is stopped mid-way, not checked only once it is all cut.
Progress = Callable[[int], None]


def _no_limit(at: int) -> None:
    """The progress of a chunking without a time limit."""


@dataclass(frozen=True)
class Strategy:
    """One combination of the three chunking ingredients."""

    name: str
    boundaries: bool
    header: bool
    overlap: bool


STRATEGIES: dict[str, Strategy] = {
    "A": Strategy("A", boundaries=False, header=False, overlap=False),
    "B": Strategy("B", boundaries=False, header=False, overlap=True),
    "C": Strategy("C", boundaries=True, header=False, overlap=False),
    "D": Strategy("D", boundaries=True, header=False, overlap=True),
    "E": Strategy("E", boundaries=True, header=True, overlap=False),
    "F": Strategy("F", boundaries=True, header=True, overlap=True),
}


@dataclass(frozen=True)
class Section:
    """One ``## `` section: ``[start, end)`` in the text, content from ``body_start``.

    ``start`` is where the heading line begins (0 for the preamble); only the heading's
    ``## `` marker (a leading ``# Title``'s ``# ``) lies in ``[start, body_start)``: its
    words are content, ``heading`` (None for an empty heading or a preamble without a
    title line).
    """

    name: str
    start: int
    body_start: int
    end: int
    heading: Span | None = None


def get_strategy(name: str) -> Strategy:
    """Look a strategy up by its letter.

    Args:
        name: "A".."F", any case, surrounding whitespace ignored.

    Returns:
        The strategy.

    Raises:
        ValueError: for any other name; the message lists the valid ones.
    """
    key = name.strip().upper() if isinstance(name, str) else name
    if key not in STRATEGIES:
        raise ValueError(
            f"unknown chunking strategy {name!r}; valid strategies are {', '.join(STRATEGIES)}"
        )
    return STRATEGIES[key]


def chunk_document(
    text: str,
    title: str,
    doc_id: str,
    strategy: str = "E",
    budget: int = 512,
    overlap: int = 64,
    progress: Progress = _no_limit,
) -> list[Chunk]:
    """Cut a canonical text into chunks.

    Args:
        text: the canonical text (Markdown); offsets refer to it.
        title: document title, used in the ``[Title > Section]`` header.
        doc_id: copied into every chunk.
        strategy: "A".."F" (see :data:`STRATEGIES`).
        budget: maximum characters of a chunk's own content (> 0).
        overlap: characters taken from the previous chunk by B/D/F (0 <= overlap < budget);
            ignored by A/C/E.
        progress: called with the offset reached after each bounded step (see ``Progress``).

    Returns:
        The chunks in document order, ``ordinal`` 0, 1, 2, ...

    Raises:
        ValueError: unknown strategy, or budget/overlap out of range.
        whatever ``progress`` raises.
    """
    chosen = get_strategy(strategy)
    _check_sizes(budget, overlap)
    sections = split_sections(text, progress)
    taken = overlap if chosen.overlap else 0
    if chosen.boundaries:
        placed = _boundary_chunks(text, sections, budget, taken, progress)
    else:
        placed = _blind_chunks(text, sections, budget, taken, progress)
    return [
        _make_chunk(text, title, doc_id, ordinal, section, span, chosen.header)
        for ordinal, (section, span) in enumerate(placed)
    ]


def _check_sizes(budget: int, overlap: int) -> None:
    """Reject sizes that would loop forever or make overlap swallow whole chunks."""
    for label, value in (("budget", budget), ("overlap", overlap)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{label} must be an int, got {value!r}")
    if budget <= 0:
        raise ValueError(f"budget must be > 0 characters, got {budget}")
    if not 0 <= overlap < budget:
        raise ValueError(f"overlap must satisfy 0 <= overlap < budget ({budget}), got {overlap}")


def _make_chunk(
    text: str, title: str, doc_id: str, ordinal: int, section: Section, span: Span, header: bool
) -> Chunk:
    """Build one chunk; the header is only ever in ``text``, never in ``content``.

    The header already names the section, so a chunk that opens with its heading embeds
    what follows the heading after it: the quote holds the heading, the embedded text is
    the one it was before headings were quoted (measured on dev: embedding the heading
    twice moved dense retrieval's ranks down, docs/eval-dev.md). A chunk of nothing but its
    heading embeds the heading.
    """
    content = text[span[0] : span[1]]
    embedded = content
    if header:
        embedded = headed(title, section.name, _after_heading(text, section, span) or content)
    return Chunk(doc_id, ordinal, span[0], span[1], section.name, content, embedded)


def _after_heading(text: str, section: Section, span: Span) -> str:
    """The chunk's text after its section's heading line when it opens with it, else ""."""
    if section.heading is None or span[0] != section.heading[0]:
        return ""
    rest = _trim(text, section.heading[1], span[1])
    return text[rest[0] : rest[1]] if rest else ""


def headed(title: str, section: str, content: str) -> str:
    """A chunk's embedded text under a header strategy: ``[Title > Section]`` and its content.

    >>> headed("Notes", "Part", "text"), headed("Notes", "", "text")
    ('[Notes > Part]\\ntext', '[Notes]\\ntext')
    """
    path = f"{title} > {section}" if section else title
    return f"[{path}]\n{content}"


# --- sections -------------------------------------------------------------------------

_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r"[ \t]*(`{3,}|~{3,})\s*")


def split_sections(text: str, progress: Progress = _no_limit) -> list[Section]:
    """Split a text at its ``## `` heading lines, ignoring those inside code fences.

    Args:
        text: the canonical text.

    Returns:
        Sections in order, covering the text. The first is the preamble (name ""), kept
        even when there are headings, unless a heading starts the text; a text without
        headings is one preamble section.
    """
    heads = list(_heading_lines(text, progress))
    sections = []
    first = heads[0][0] if heads else len(text)
    if first > 0 or not heads:
        body_start, title_end = _title_line(text, first, progress)
        sections.append(Section("", 0, body_start, first, _trim(text, body_start, title_end)))
    for i, (start, line_end, name) in enumerate(heads):
        end = heads[i + 1][0] if i + 1 < len(heads) else len(text)
        sections.append(Section(name, start, start + 3, end, _trim(text, start + 3, line_end)))
    return sections


def _heading_lines(text: str, progress: Progress) -> Iterator[tuple[int, int, str]]:
    """Yield ``(line start, line end, name)`` for each ``## `` line outside fences."""
    fence = ""
    for start, stop in _lines(text, 0, len(text), progress):
        line = text[start:stop]
        if fence:
            fence = "" if _closes(line, fence) else fence
        elif opener := _FENCE_OPEN.fullmatch(line):
            # A backtick "fence" with a backtick in its info string is inline code.
            if not (opener.group(1)[0] == "`" and "`" in opener.group(2)):
                fence = opener.group(1)
        elif line.startswith("## "):
            yield start, stop, line[3:].strip()


def _closes(line: str, fence: str) -> bool:
    """A fence closes with the same character, at least as many times, nothing after."""
    match = _FENCE_CLOSE.fullmatch(line)
    return bool(match) and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence)


def _title_line(text: str, end: int, progress: Progress) -> tuple[int, int]:
    """Where the preamble's content starts (after a leading title line's ``# ``, else 0),
    and where that title line ends (the content's start when there is none)."""
    for start, stop in _lines(text, 0, end, progress):
        if text[start:stop].strip():
            return (start + 2, stop) if text.startswith("# ", start) else (0, 0)
    return 0, 0


def _lines(text: str, start: int, end: int, progress: Progress = _no_limit) -> Iterator[Span]:
    """Yield ``(start, stop)`` of each line in ``[start, end)``, the newline excluded.

    Only "\\n" separates lines: ``str.splitlines`` would also break at characters such as
    U+2028 that Markdown does not treat as line breaks.
    """
    pos = start
    while pos < end:
        progress(pos)
        newline = text.find("\n", pos, end)
        stop = end if newline < 0 else newline
        yield pos, stop
        pos = stop + 1


# --- blind ----------------------------------------------------------------------------


def _blind_chunks(
    text: str, sections: list[Section], budget: int, overlap: int, progress: Progress
) -> list[tuple[Section, Span]]:
    """Cut every ``budget`` characters; a chunk's section is the one its start falls in."""
    windows = []
    for at in range(0, len(text), budget):
        progress(at)
        windows.append(_trim(text, at, min(at + budget, len(text))))
    spans = _with_overlap(text, [w for w in windows if w], overlap)
    starts = [s.start for s in sections]
    return [(sections[bisect.bisect_right(starts, s) - 1], (s, e)) for s, e in spans]


# --- boundaries -----------------------------------------------------------------------


def _boundary_chunks(
    text: str, sections: list[Section], budget: int, overlap: int, progress: Progress
) -> list[tuple[Section, Span]]:
    """Pack each section on its own (one of a heading alone joined to the next), so that no chunk
    (nor its overlap) crosses from one section's text into another's."""
    placed = []
    for section in _opened(text, sections):
        spans = _pack_section(text, section.body_start, section.end, budget, progress, section.heading)
        placed += [(section, span) for span in _with_overlap(text, spans, overlap)]
    return placed


def _opened(text: str, sections: list[Section]) -> list[Section]:
    """The sections with each one that holds only its heading, or only a fragment
    (:func:`_says_little`), joined to the next: a chapter's title over its first subsection, a
    document's title over its first section, a run of headings, a running head, are quoted with
    the text they open, not alone (a lone heading outranked the paragraph that answers).
    A heading-only section at the end stays alone; a fragment there closes the section before it.
    """
    out: list[Section] = []
    held: Section | None = None
    for i, section in enumerate(sections):
        if held is not None:
            section = _joined(text, held, section)
            held = None
        alone = section.heading is not None and not text[section.heading[1] : section.end].strip()
        if (alone or _says_little(text, section)) and i + 1 < len(sections):
            held = section
            continue
        if out and not alone and _says_little(text, section):
            last = out[-1]
            section = Section(last.name, last.start, last.body_start, section.end, last.heading)
            out[-1] = section
            continue
        out.append(section)
    return out


def _joined(text: str, held: Section, section: Section) -> Section:
    """``held`` opening ``section``: named by the latter (by ``held`` when the latter is an empty
    heading), its heading words running from the first heading's (or the untitled preamble's
    first word) to the last one's, so the embedded text leaves them all to the header."""
    if held.heading is None:  # an untitled preamble: its words are opened like a heading's
        first = _trim(text, held.body_start, section.end)
        heading = (first[0], section.heading[1]) if section.heading and first else None
    else:
        heading = (held.heading[0], (section.heading or held.heading)[1])
    # An empty heading ("## ") names nothing: the held heading's words would vanish from
    # the embedded text if the header did not carry them.
    return Section(section.name or held.name, held.start, held.body_start, section.end, heading)


def _says_little(text: str, section: Section) -> bool:
    """Whether the section's words, heading included, are a fragment: nothing a question could
    be answered from alone."""
    body = text[section.body_start : section.end]
    return bool(body.strip()) and not carries_content(body)


def _pack_section(
    text: str, start: int, end: int, budget: int, progress: Progress = _no_limit, heading: Span | None = None
) -> list[Span]:
    """Greedily pack whole paragraphs; an oversized paragraph is packed on its own.

    Args:
        text: the canonical text.
        start: where the section's content starts.
        end: where the section ends.
        budget: maximum span of a chunk.
        heading: the section's heading words, folded into what follows like a lone line.

    Returns:
        Trimmed, non-overlapping spans in order, each at most ``budget`` long.
    """
    spans: list[Span] = []
    run: list[Span] = []
    for paragraph in _paragraphs(text, start, end, progress):
        if paragraph[1] - paragraph[0] <= budget:
            run.append(paragraph)
            continue
        spans += _pack(run, budget) + _pack(_pieces(text, paragraph, budget, progress=progress), budget)
        run = []
    return _fold_slight(text, spans + _pack(run, budget), budget, progress, heading)


# A table-of-contents line: dot leaders, then a page number ("Intro . . . . 23"); the same
# pattern marks TOC lines in extractors.headings.
# It is tried only where a run of leaders starts: searched from every dot of a long run it
# was quadratic in the chunk (46 ms for one 512-character chunk of dots). A match
# from inside a run is one from the run's start, so the answer is the same.
_TOC_LINE = re.compile(r"(?<!\.)(?<!\.\s)(?:\.\s?){4,}\s*\S{0,8}\s*$")
_SLIGHT_CHARS = 80  # a lone line this short without a full stop reads as a heading


def _slight(text: str, span: Span) -> bool:
    """A chunk that would be a heading or a table-of-contents line alone: one short line
    that is not a sentence (``asn1 print structure``, ``. . . . . 23``)."""
    content = text[span[0] : span[1]]
    if "\n" in content:
        return False
    return bool(_TOC_LINE.search(content)) or (len(content) <= _SLIGHT_CHARS and content[-1] not in ".!?\"”')")


def _fold_slight(
    text: str, spans: list[Span], budget: int, progress: Progress, heading: Span | None = None
) -> list[Span]:
    """Fold each lone heading, TOC line or fragment into the chunk that follows it (alone,
    they outranked the paragraph that answers), the section's own heading whatever it
    ends with; then each fragment still alone (the section's last piece, or one whose next
    chunk could not take it) into the chunk before it. The neighbour is cut at
    sentences and lines so the fold keeps every chunk within ``budget``; when not even the
    nearest sentence fits beside the line, the line stays alone."""
    out = list(spans)
    i = 0
    while i + 1 < len(out):
        progress(out[i][0])
        if out[i] == heading or _slight(text, out[i]) or _fragment(text, out[i]):
            packed = _pack([out[i], *_soft_pieces(text, out[i + 1], budget, progress)], budget)
            if packed[0] != out[i]:
                out[i : i + 2] = packed
        i += 1
    i = len(out) - 1
    while i > 0:
        progress(out[i][0])
        if _fragment(text, out[i]):
            out[i - 1 : i + 1] = _close(text, out[i - 1], out[i], budget, progress, heading)
        i -= 1
    return out


def _close(
    text: str, before: Span, fragment: Span, budget: int, progress: Progress, heading: Span | None
) -> list[Span]:
    """``fragment`` joined to the chunk ``before`` it: whole when both fit the budget, else with
    as few of that chunk's last sentences as make a passage that says something, so that what
    stays before is still more than a heading (a chunk of ``heading`` and one long paragraph
    would otherwise give its heading back to stand alone). Unchanged when nothing fits."""
    if fragment[1] - before[0] <= budget:
        return [(before[0], fragment[1])]
    pieces = _soft_pieces(text, before, budget, progress)
    for k in range(len(pieces) - 1, 0, -1):
        tail = (pieces[k][0], fragment[1])
        if tail[1] - tail[0] > budget:
            break
        head = (pieces[0][0], pieces[k - 1][1])
        if not _fragment(text, tail):
            if head == heading or _slight(text, head) or _fragment(text, head):
                break
            return [head, tail]
    return [before, fragment]


def _fragment(text: str, span: Span) -> bool:
    """A piece too slight to stand as a chunk (``schemas.document.carries_content``)."""
    return not carries_content(text[span[0] : span[1]])


def _soft_pieces(text: str, span: Span, budget: int, progress: Progress) -> list[Span]:
    """``span`` cut at paragraphs and sentences (pieces over ``budget`` cut further)."""
    pieces: list[Span] = []
    for paragraph in _paragraphs(text, *span, progress):
        for sentence in _by_sentence(text, paragraph, budget, progress) or [paragraph]:
            pieces += _pieces(text, sentence, budget, progress=progress)
    return pieces


def _paragraphs(text: str, start: int, end: int, progress: Progress = _no_limit) -> list[Span]:
    """Maximal runs of non-blank lines (blank = whitespace only), trimmed."""
    found: list[Span] = []
    current: Span | None = None
    for line_start, line_end in _lines(text, start, end, progress):
        if text[line_start:line_end].strip():
            current = (current[0] if current else line_start, line_end)
        elif current:
            found.append(current)
            current = None
    if current:
        found.append(current)
    return [span for span in (_trim(text, *p) for p in found) if span]


def _pack(spans: list[Span], budget: int) -> list[Span]:
    """Merge consecutive spans while first start to last end stays within ``budget``."""
    packed: list[Span] = []
    for start, end in spans:
        if packed and end - packed[-1][0] <= budget:
            packed[-1] = (packed[-1][0], end)
        else:
            packed.append((start, end))
    return packed


def _pieces(text: str, span: Span, budget: int, level: int = 0, progress: Progress = _no_limit) -> list[Span]:
    """Split an oversized span with ever finer splitters until every piece fits.

    Args:
        text: the canonical text.
        span: a trimmed span.
        budget: maximum piece length.
        level: index into the splitters: sentences, then lines, then whitespace cuts.

    Returns:
        Trimmed pieces in order, each at most ``budget`` long, covering every
        non-whitespace character of ``span``.
    """
    if span[1] - span[0] <= budget:
        return [span]
    pieces: list[Span] = []
    for part in _SPLITTERS[level](text, span, budget, progress):
        pieces += _pieces(text, part, budget, level + 1, progress)
    return pieces


def _by_sentence(text: str, span: Span, budget: int, progress: Progress) -> list[Span]:
    """Sentence pieces of ``span`` (offsets shifted back into ``text``), trimmed."""
    base = span[0]
    found = sentence_spans(text[span[0] : span[1]], lambda at: progress(base + at))
    return [s for s in (_trim(text, base + a, base + b) for a, b in found) if s]


def _by_line(text: str, span: Span, budget: int, progress: Progress) -> list[Span]:
    """Line pieces of ``span``: code, math and tables have lines but no full stops."""
    return [s for s in (_trim(text, *line) for line in _lines(text, *span, progress)) if s]


def _by_whitespace(text: str, span: Span, budget: int, progress: Progress) -> list[Span]:
    """Hard-cut ``span`` at the last whitespace within ``budget`` of each piece's start.

    Only a single word longer than ``budget`` is cut mid-word, at exactly ``budget``.
    """
    pieces: list[Span] = []
    start, end = span
    while end - start > budget:
        progress(start)
        cut = _last_space(text, start, start + budget)
        piece = _trim(text, start, cut if cut > start else start + budget)
        pieces.append(piece)  # never None: text[start] is not whitespace
        start = _trim(text, piece[1], end)[0]
    pieces.append((start, end))
    return pieces


def _last_space(text: str, start: int, limit: int) -> int:
    """Offset of the last whitespace in ``(start, limit]``, or ``start`` when there is none."""
    for at in range(limit, start, -1):
        if text[at].isspace():
            return at
    return start


_SPLITTERS: list[Callable[[str, Span, int, Progress], list[Span]]] = [
    _by_sentence,
    _by_line,
    _by_whitespace,
]


# --- shared ---------------------------------------------------------------------------


_NON_SPACE = re.compile(r"\S")


def _trim(text: str, start: int, end: int) -> Span | None:
    """Shrink ``[start, end)`` to exclude surrounding whitespace; None if nothing is left.

    Costs the whitespace it skips, not the span: the whitespace cutter trims the rest of a
    long line once per piece, and copying that rest each time was quadratic.
    """
    first = _NON_SPACE.search(text, start, end)
    if first is None:
        return None
    return first.start(), _end_of_text(text, first.start(), end)


def _end_of_text(text: str, start: int, end: int) -> int:
    """Where ``[start, end)`` ends without its trailing whitespace (``text[start]`` is not
    whitespace); the tail is looked at in doubling windows, so the cost follows its blanks."""
    width = 64
    while True:
        low = max(start, end - width)
        kept = text[low:end].rstrip()
        if kept or low == start:
            return low + len(kept)
        width *= 2


def _with_overlap(text: str, spans: list[Span], overlap: int) -> list[Span]:
    """Start each span but the first ``overlap`` characters before the previous one ends.

    The overlap is taken from the previous chunk as emitted, so it never reaches back past
    that chunk's own start (a chunk shorter than ``overlap`` is copied whole).
    """
    out: list[Span] = []
    for start, end in spans:
        if out and overlap:
            prev_start, prev_end = out[-1]
            start = _trim(text, max(prev_start, prev_end - overlap), end)[0]
        out.append((start, end))
    return out
