"""Citations finished against the index they came from: each given the ``uri`` that opens its
source file at the cited place, its highlighted line its own place in the document's unit, and a
document that two synced folders both hold named by the path that tells them apart. The library,
the HTTP app and the command line all return these."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from citeline.index.filters import one_of
from citeline.index.lookup import shown_names
from citeline.index.store import Store
from citeline.pipeline.locate import cited_locators
from citeline.query.cite import locator_fragment, with_sources
from citeline.schemas.document import Segment, segments_from_json
from citeline.schemas.locator import SheetRange
from citeline.schemas.retrieval import Citation


def sources_of(store: Store, doc_ids) -> dict[str, str]:
    """The absolute source path of each given document, by id (what a citation's ``uri`` opens)."""
    rows = store.document_rows(["doc_id", "source"], one_of("doc_id", sorted(doc_ids)))
    return {r["doc_id"]: r["source"] for r in rows}


def located(store: Store, citations: Sequence[Citation], sources: dict[str, str] | None = None,
            maps: dict[str, "LocatorMap"] | None = None, namesakes: dict[str, dict] | None = None) -> list[Citation]:
    """The citations, each given the ``uri`` of its source file, its highlighted line's own
    locator (:func:`with_line_locators`), and told apart from its namesakes.

    ``sources`` and ``maps`` are caches by document id, ``namesakes`` by path (a snapshot's),
    filled with what they lack.
    """
    sources = {} if sources is None else sources
    missing = {c.document_id for c in citations} - set(sources)
    if missing:
        sources.update(sources_of(store, missing))
    return apart(store, with_line_locators(store, with_sources(citations, sources), maps), namesakes)


def with_line_locators(store: Store, citations: Sequence[Citation],
                       maps: dict[str, LocatorMap] | None = None) -> list[Citation]:
    """Each highlighted line given its place in its document's own unit: the cells of its row on a
    sheet, its page in a PDF, its rows of a CSV, its slide, its moment of a recording.

    The chunk's locators say where the whole chunk lies; the line's come from the document's
    locator map (the documents table's ``segments``, and for sheets its canonical text, whose
    lines are the rows), read once per document into ``maps``. A text document's line is its
    ``#char=`` range already (``highlight_locator`` stays "").
    """
    maps = {} if maps is None else maps
    placed = [c.highlight_start is not None and not c.fragment.startswith("#char=") for c in citations]
    missing = {c.document_id for c, p in zip(citations, placed) if p} - set(maps)
    if missing:
        found = {row["doc_id"]: segments_from_json(row["segments"])
                 for row in store.document_rows(["doc_id", "segments"], one_of("doc_id", sorted(missing)))}
        sheets = sorted(d for d, segs in found.items() if any(isinstance(s.locator, SheetRange) for s in segs))
        texts = {row["doc_id"]: row["canonical"] or ""
                 for row in store.document_rows(["doc_id", "canonical"], one_of("doc_id", sheets))} if sheets else {}
        maps.update({d: LocatorMap(segs, texts.get(d, "")) for d, segs in found.items()})
    return [replace(c, highlight_locator=line_locator(c.highlight_start, c.highlight_end, maps[c.document_id]))
            if p and c.document_id in maps and maps[c.document_id].segments else c for c, p in zip(citations, placed)]


@dataclass(frozen=True)
class LocatorMap:
    """A document's segments, and its canonical text where a sheet's rows must be counted."""

    segments: tuple[Segment, ...]
    text: str = ""


def line_locator(start: int, end: int, found: LocatorMap) -> str:
    r"""The fragment that opens the source at the line ``[start, end)``, as ``locator_fragment``
    opens it at a chunk; on a sheet, the line's own row where a segment renders one line per row.

    >>> rows = LocatorMap((Segment(0, 11, SheetRange("S", "A1:B1", header=True)),
    ...                    Segment(12, 30, SheetRange("S", "A2:B3"))), "Item | Cost\nPump | 9\nPier | 12")
    >>> line_locator(21, 30, rows), line_locator(12, 30, rows), line_locator(0, 11, rows)
    ('S!A3:B3', 'S!A2:B3', 'S!A1:B1')
    """
    locators = cited_locators(start, end, found.segments)
    if locators and isinstance(locators[0], SheetRange) and found.text:
        locators = [_row_of_line(seg, start, end, found.text) for seg in found.segments
                    if isinstance(seg.locator, SheetRange) and seg.start < end and start < seg.end]
    return locator_fragment(locators, start, end)


def _row_of_line(seg: Segment, start: int, end: int, text: str) -> SheetRange:
    """The rows of ``seg`` that ``[start, end)`` covers, where its lines are its rows one to one."""
    rows = seg.locator.row_numbers(text.count("\n", seg.start, seg.end) + 1)
    if rows is None:
        return seg.locator
    first = text.count("\n", seg.start, max(start, seg.start))
    last = text.count("\n", seg.start, max(min(end, seg.end) - 1, seg.start))
    return seg.locator.rows(rows[first], rows[last])


def apart(store: Store, citations: Sequence[Citation], namesakes: dict[str, dict] | None = None) -> list[Citation]:
    """The citations, a document whose path another synced folder also holds named by the path that
    tells them apart (``proj1/notes.md``, index/lookup.py) rather than by the path both share.

    ``namesakes`` caches, by path, the documents with that path (a snapshot's): read for the
    paths it lacks, one scan of the documents table for all of them."""
    paths = sorted({c.path for c in citations if c.path})
    if not paths:
        return list(citations)
    namesakes = {} if namesakes is None else namesakes
    missing = [path for path in paths if path not in namesakes]
    if missing:
        found: dict[str, dict[str, tuple[str, str]]] = {path: {} for path in missing}
        for row in store.document_rows(["doc_id", "source", "path"], one_of("path", missing)):
            found[row["path"]][row["doc_id"]] = (row["source"], row["path"])
        namesakes.update(found)
    groups = [namesakes[path] for path in paths]
    names = {doc_id: name for docs in groups if len(docs) > 1 for doc_id, name in shown_names(docs).items()}
    return [replace(c, document=names[c.document_id]) if c.document_id in names and c.document == c.path else c
            for c in citations]
