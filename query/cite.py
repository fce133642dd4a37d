"""Citations built by the server from retrieved hits.

The model only writes ``[n]``; document, label and URL fragment come from the
chunk that source ``n`` was built from, and the quote is the chunk's ``content``
(the exact canonical slice), never its embedded ``text``. The hit supplies the
``distance`` and ``rerank_score`` shown beside it.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import PurePosixPath
from urllib.parse import quote

from citeline.schemas.locator import (
    CharRange, Locator, Page, Passage, RowRange, SheetRange, Slide, TimeSpan, bounding_range, locator_from_dict,
)
from citeline.schemas.paths import is_remote
from citeline.schemas.retrieval import ChunkRow, Citation, Hit
from citeline.query.highlight import best_line
from citeline.query.table_cell import SEPARATOR, answer_cell

FRAGMENT_SAFE = "!:,'=."  # what a fragment keeps unencoded: page=3, t=1.5,2, 'Sheet'!A1:D9


def build_citations(hits: Sequence[Hit], query: str = "", start: int = 1) -> list[Citation]:
    """Number the hits from ``start``, in the order given, as citations.

    Args:
        hits: retrieved hits, each with its chunk, in the order the sources appear
            in the prompt.
        query: the question; a table chunk whose quote has one cell it names by row label
            and column header gets that cell in its label (``query.table_cell``).
        start: the first number (the closest passages shown beside sources go on from them).

    Returns:
        One ``Citation`` per hit, ``index`` start, start + 1, ...

    Raises:
        ValueError: if a hit carries no chunk (a bare fused id).
    """
    return [citation_from_hit(i, hit, query) for i, hit in enumerate(hits, start)]


def citation_from_hit(index: int, hit: Hit, query: str = "") -> Citation:
    """One citation from one hit; see ``locator_label``, ``locator_fragment`` and
    ``cell_label`` (a table chunk's one-cell answer to ``query``)."""
    chunk = hit.chunk
    if chunk is None:
        raise ValueError(f"hit {hit.chunk_id!r} carries no chunk to cite")
    locators = parse_locators(chunk.locators)
    title = chunk.title or document_name(chunk)
    line = best_line(query, chunk.content) if query and chunk.content and chunk.start is not None else None
    return Citation(
        index=index,
        document_id=chunk.doc_id,
        document=document_name(chunk),
        label=cell_label(title, chunk.section, locators, chunk.content, query),
        fragment=locator_fragment(locators, chunk.start, chunk.end),
        quote=chunk.content,
        distance=hit.distance,
        rerank_score=hit.rerank_score,
        chunk_id=chunk.chunk_id,
        start=chunk.start,
        end=chunk.end,
        path=chunk.path,
        highlight_start=None if line is None else chunk.start + line[0],
        highlight_end=None if line is None else chunk.start + line[1],
    )


def with_sources(citations: Sequence[Citation], sources: Mapping[str, str]) -> list[Citation]:
    """The citations, each given the ``uri`` that opens its source file at the cited place.

    Args:
        citations: citations built from hits.
        sources: absolute source path by document id (the documents table's ``source``);
            a citation whose document is missing keeps ``uri`` "".
    """
    return [replace(c, uri=source_uri(sources[c.document_id], c.fragment)) if c.document_id in sources else c
            for c in citations]


def source_uri(source: str, fragment: str) -> str:
    """A ``file://`` URI of ``source`` with the citation's fragment, percent-encoded; an
    object's URL (``s3://bucket/key``) keeps its own scheme.

    A sheet range (``'Q1 sales'!A1:D9``) becomes the fragment as it is; the others
    already start with ``#``.

    >>> source_uri("s3://bucket/docs/Q1 notes.md", "#c=4,9")
    's3://bucket/docs/Q1%20notes.md#c=4,9'

    >>> source_uri("/data/talk.mp3", "#t=12.00,19.50")
    'file:///data/talk.mp3#t=12.00,19.50'
    >>> source_uri("/data/Q1 book.xlsx", "'Q1 sales'!A1:D9")
    "file:///data/Q1%20book.xlsx#'Q1%20sales'!A1:D9"
    """
    if is_remote(source):
        scheme, _, key = source.partition("://")
        return f"{scheme}://{quote(key, safe='/')}#" + quote(fragment.removeprefix("#"), safe=FRAGMENT_SAFE)
    path = quote(PurePosixPath(source).as_posix(), safe="/")
    return f"file://{path}#" + quote(fragment.removeprefix("#"), safe=FRAGMENT_SAFE)


def document_name(chunk: ChunkRow) -> str:
    """The document as a reader knows it: its path under the indexed folder.

    Falls back to the title, then the document id, so a chunk is never nameless.
    """
    return chunk.path or chunk.title or chunk.doc_id


def parse_locators(raw: str) -> list[Locator]:
    """The ``locators`` column (a JSON list of locator dicts; "" when null) as locators.

    >>> parse_locators('[{"kind": "page", "page": 3}]')
    [Page(page=3, page_label='', ocr_confidence=None, kind='page')]
    >>> parse_locators("")
    []
    """
    return [locator_from_dict(item) for item in json.loads(raw)] if raw else []


def locator_label(title: str, section: str, locators: Sequence[Locator]) -> str:
    """A human label for where the chunk sits, chosen by the kind of its first locator.

    Text: ``Title > Section`` (just the title without a section); page: ``Title, p. 3``
    or ``Title, pp. 3–4`` over several pages; sheet: ``Title, Sheet!A1:D9``; time:
    ``Title, 0:12–0:31`` from the first start to the last end.

    >>> locator_label("Guide", "Setup", [])
    'Guide > Setup'
    >>> locator_label("Report", "", [Page(3), Page(4)])
    'Report, pp. 3–4'
    """
    same = [loc for loc in locators if loc.kind == locators[0].kind] if locators else []
    if not same or isinstance(same[0], CharRange):
        return f"{title} > {section}" if section else title
    if isinstance(same[0], Page):
        return f"{title}, {_pages_label(same)}"
    if isinstance(same[0], SheetRange):
        return f"{title}, {', '.join(dict.fromkeys(loc.fragment() for loc in _data_rows(same)))}"
    if isinstance(same[0], Passage):
        return _passage_label(title, same[0])
    if isinstance(same[0], (Slide, RowRange)):
        return f"{title}, {_merged(same).label()}"
    if isinstance(same[0], TimeSpan):
        return f"{title}, {_time_span(same).label()}"
    return f"{title}, {same[0].label()}"  # a key path, an XML element, an e-mail part


def cell_label(title: str, section: str, locators: Sequence[Locator], quote: str, query: str) -> str:
    """``locator_label``, naming the cell that answers ``query`` when the quote is a table
    with one cell the question names by its row label and column header:
    ``half-year, '3.4 Reconciliation'!C25 — Trading operating profit · 30 06 2023``. The
    address replaces the range where it is certain; otherwise the range label (it names the
    sheet or table) is kept before the names. The fragment still opens every cell quoted.
    """
    label = locator_label(title, section, locators)
    if not query:  # search and `citeline chunks` name no cell
        return label
    cell = answer_cell(_below_heading(quote, section), locators, query)
    if cell is None:
        return label
    if cell.address:
        return f"{title}, {cell.address}{SEPARATOR}{cell.label()}"
    return f"{label}{SEPARATOR}{cell.label()}"


def _below_heading(quote: str, section: str) -> str:
    """The quote without the section heading it opens with (a sheet's title: the chunker quotes
    a heading with the chunk it opens), whose line no locator maps to a row.

    >>> _below_heading("Segments\\n\\n| H1 2023\\nSales | 9", "Segments")
    '| H1 2023\\nSales | 9'
    """
    first, _, rest = quote.partition("\n")
    return rest.lstrip("\n") if section and first.strip() == section else quote


def locator_fragment(locators: Sequence[Locator], start: int, end: int) -> str:
    """The URL fragment that opens the source at the chunk.

    From the first locator: ``#page=N`` (PDF Open Parameters) or ``'Sheet'!A1:D9`` (the
    data rows quoted on the first locator's sheet, past a repeated header row).
    Time spans are merged from the first start to the last end (``#t=s,e``, W3C Media
    Fragments), because a player can play a range but a PDF viewer opens one page.
    Text, or no locators at all, gives the chunk's own range ``#char=start,end``.

    >>> locator_fragment([], 10, 42)
    '#char=10,42'
    >>> locator_fragment([TimeSpan(12, 20), TimeSpan(20, 31)], 0, 5)
    '#t=12.00,31.00'
    """
    if not locators or isinstance(locators[0], (CharRange, Passage)):
        # The stored CharRange may be a segment's range; the chunk's own is exact.
        return CharRange(start, end).fragment()
    if isinstance(locators[0], (Slide, RowRange)):
        return _merged([loc for loc in locators if loc.kind == locators[0].kind]).fragment()
    if isinstance(locators[0], TimeSpan):
        return _time_span([loc for loc in locators if isinstance(loc, TimeSpan)]).fragment()
    if isinstance(locators[0], SheetRange):
        return bounding_range(_data_rows([loc for loc in locators if isinstance(loc, SheetRange)])).fragment()
    return locators[0].fragment()


def _data_rows(ranges: Sequence[SheetRange]) -> list[SheetRange]:
    """The ranges of the rows a chunk quotes; its repeated header rows only when it quotes
    nothing else (a client following the fragment lands on the rows)."""
    return [r for r in ranges if not r.header] or list(ranges)


def verify_quote(item: Citation | ChunkRow, canonical_text: str) -> bool:
    """Whether the quote is exactly ``canonical_text[start:end]``.

    Args:
        item: a ``Citation`` or a ``ChunkRow`` (its ``content`` is the quote).
        canonical_text: the document's canonical text.

    Returns:
        True when the quoted slice matches character for character.

    Raises:
        ValueError: if a citation carries no offsets.
    """
    if isinstance(item, Citation):
        if item.start is None or item.end is None:
            raise ValueError(f"citation [{item.index}] has no start/end offsets to check")
        start, end, quote = item.start, item.end, item.quote
    else:
        start, end, quote = item.start, item.end, item.content
    return 0 <= start <= end <= len(canonical_text) and canonical_text[start:end] == quote


def _pages_label(pages: Sequence[Page]) -> str:
    if len({p.page for p in pages}) == 1:
        return pages[0].label()
    first = min(pages, key=lambda p: p.page)
    last = max(pages, key=lambda p: p.page)
    numbers = f"{first.page}–{last.page}"
    printed = first.page_label and last.page_label
    if printed and (first.page_label, last.page_label) != (str(first.page), str(last.page)):
        # Same rule as Page.label: the printed label first, the physical page after it.
        return f"pp. {first.page_label}–{last.page_label} (pages {numbers})"
    return f"pp. {numbers}"


def _passage_label(title: str, passage: Passage) -> str:
    """``Title > heading path (#id)``; a path that opens with the title (an HTML page's h1)
    does not repeat it."""
    path = passage.path
    if path == title or path.startswith(f"{title} > "):
        path = path[len(title):].removeprefix(" > ")
    where = Passage(path, passage.element_id).label() if path or passage.element_id else ""
    return f"{title} > {where}" if where else title


def _merged(locators: Sequence[Slide | RowRange]) -> Slide | RowRange:
    """The first slide; or the records a chunk quotes, first to last, past the header
    repeated above them (``#row=a-b``, RFC 7111)."""
    if isinstance(locators[0], Slide):
        return locators[0]
    rows = [loc for loc in locators if not loc.header] or list(locators)
    return RowRange(min(r.first for r in rows), max(r.last for r in rows))


def _time_span(spans: Sequence[TimeSpan]) -> TimeSpan:
    return TimeSpan(min(s.start for s in spans), max(s.end for s in spans))
