"""Citations finished against the index they came from: each given the ``uri`` that opens its
source file at the cited place, and a document that two synced folders both hold named by the
path that tells them apart. The library, the HTTP app and the command line all return these."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from citeline.index.filters import one_of
from citeline.index.lookup import shown_names
from citeline.index.store import Store
from citeline.query.cite import with_sources
from citeline.schemas.retrieval import Citation


def sources_of(store: Store, doc_ids) -> dict[str, str]:
    """The absolute source path of each given document, by id (what a citation's ``uri`` opens)."""
    rows = store.document_rows(["doc_id", "source"], one_of("doc_id", sorted(doc_ids)))
    return {r["doc_id"]: r["source"] for r in rows}


def located(store: Store, citations: Sequence[Citation], sources: dict[str, str] | None = None) -> list[Citation]:
    """The citations, each given the ``uri`` of its source file and told apart from its namesakes.

    ``sources`` is a cache of source paths by document id (a snapshot's), filled with the
    documents it lacks.
    """
    sources = {} if sources is None else sources
    missing = {c.document_id for c in citations} - set(sources)
    if missing:
        sources.update(sources_of(store, missing))
    return apart(store, with_sources(citations, sources))


def apart(store: Store, citations: Sequence[Citation]) -> list[Citation]:
    """The citations, a document whose path another synced folder also holds named by the path that
    tells them apart (``proj1/notes.md``, index/lookup.py) rather than by the path both share."""
    paths = sorted({c.path for c in citations if c.path})
    if not paths:
        return list(citations)
    groups: dict[str, dict[str, tuple[str, str]]] = {}
    for row in store.document_rows(["doc_id", "source", "path"], one_of("path", paths)):
        groups.setdefault(row["path"], {})[row["doc_id"]] = (row["source"], row["path"])
    names = {doc_id: name for docs in groups.values() if len(docs) > 1 for doc_id, name in shown_names(docs).items()}
    return [replace(c, document=names[c.document_id]) if c.document_id in names and c.document == c.path else c
            for c in citations]
