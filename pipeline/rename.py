"""Renames, moves and copies as a metadata write: a new path for rows already stored.

A new file whose bytes are those of an indexed document (a rename, a move or a copy) gets
that document's canonical text and chunks (``pipeline.prepare.same_bytes``' rules: read by
the extractor that reads the new name today, with a title the new name keeps). Chunking
the same text with the same settings gives the same chunks, so the new document's rows are
the stored ones with the new ``doc_id``, ``path`` and chunk ids: nothing is extracted,
chunked or encoded, and the vectors are the stored Arrow buffers, never read into Python.
All the renamed files of a run are written together (``tasks/rename.py``), instead of one
task run, two index look-ups and a re-chunk per file.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from citeline.pipeline.chunk import headed
from citeline.pipeline.prepare import Prepared, chunk_id_of, doc_id_for, lender_among, read_stat, stored_canonical
from citeline.pipeline.walk import FileStat, SourceFile
from citeline.schemas.errors import DocumentError
from citeline.schemas.stamp import IndexStamp


@dataclass(frozen=True)
class Read:
    """A new file read once for its identity: the bytes' hash and the stat they were read under."""

    file: SourceFile
    doc_id: str
    sha256: str
    head: bytes  # enough to choose its extractor (``extractors.for_bytes``)
    size: int
    stat: FileStat


def read_identity(file: SourceFile, max_bytes: int, head_bytes: int = 8192) -> Read | None:
    """The file read and hashed; None when it cannot be (it is then left to the ordinary
    path, which reads it again and records why it fails)."""
    try:
        data, seen = read_stat(file.source, max_bytes, file.root)
    except (DocumentError, OSError):
        return None
    return Read(file, doc_id_for(file.source), hashlib.sha256(data).hexdigest(), data[:head_bytes], len(data), seen)


def choose_lenders(reads: Sequence[Read], records: Sequence[dict], complete: set[str]) -> dict[str, dict]:
    """The stored document each read file takes its rows from, by the new doc id.

    Args:
        records: document records of the reads' hashes (``index.reuse.LENDER_COLUMNS``).
        complete: the doc ids whose record is current and whose rows are all in the
            active chunks table: only those can lend rows as they are.
    """
    by_sha: dict[str, list[dict]] = {}
    for record in sorted(records, key=lambda r: (r["created_at"], r["doc_id"])):  # the oldest lends
        by_sha.setdefault(record["sha256"], []).append(record)
    chosen = {}
    for read in reads:
        candidates = [r for r in by_sha.get(read.sha256, ()) if r["doc_id"] in complete]
        lender = lender_among(candidates, read.head, read.sha256, read.file, read.doc_id)
        if lender is not None:
            chosen[read.doc_id] = lender
    return chosen


def prepared_from(read: Read, lender: dict) -> Prepared:
    """The renamed document as the ordinary write sees one (its record is built from it)."""
    return Prepared(read.file, read.doc_id, read.sha256, read.size, stored_canonical(lender), stat=read.stat,
                    lent_by=lender["source"])


def moved_rows(stored: pa.Table, moves: Sequence[tuple[str, str, str]], stamp: IndexStamp
               ) -> tuple[pa.Table, dict[str, str]]:
    """The stored rows of each lender under its new document: new ``doc_id``, ``path`` and chunk ids.

    A document titled by its file name (text, media) gets its new name's title, in the rows'
    ``title`` and in each chunk header (``[Title > Section]``) of a header strategy, and keeps its
    vectors: they were made with the old name in that one header line, the rest of the embedded
    text unchanged, and re-encoding a book for a rename was minutes of work.

    Args:
        stored: chunk rows of the lenders (every column of the chunks table).
        moves: (lender doc id, new doc id, new path, stored title, title at the new path); one
            lender may lend to several new documents (copies of one file appearing together).

    Returns:
        the new rows (vectors and every other column as stored), and new chunk id -> the
        stored chunk id it came from (for the token vectors).
    """
    at: dict[str, list[int]] = {}
    for i, doc in enumerate(stored.column("doc_id").to_pylist()):
        at.setdefault(doc, []).append(i)
    take, new_docs, new_paths, titles = [], [], [], []
    for lender, doc_id, path, before, after in moves:
        rows_of = at.get(lender, [])
        take += rows_of
        new_docs += [doc_id] * len(rows_of)
        new_paths += [path] * len(rows_of)
        titles += [(before, after)] * len(rows_of)
    rows = stored.take(pa.array(take, pa.int64()))
    starts, ends, texts, sections, contents = (rows.column(name).to_pylist()
                                               for name in ("start", "end", "text", "section", "content"))
    texts = [retitled(text, section, content, before, after)
             for text, section, content, (before, after) in zip(texts, sections, contents, titles)]
    ids = [chunk_id_of(doc, s, e, t, stamp) for doc, s, e, t in zip(new_docs, starts, ends, texts)]
    kept = dict(zip(ids, rows.column("chunk_id").to_pylist()))
    for name, values in (("chunk_id", ids), ("doc_id", new_docs), ("path", new_paths), ("text", texts),
                         ("title", [after for _, after in titles])):
        index = rows.schema.get_field_index(name)
        rows = rows.set_column(index, rows.schema.field(index), pa.array(values, pa.string()))
    return rows, kept


def retitled(text: str, section: str, content: str, before: str, after: str) -> str:
    """A chunk's embedded text with the document's title ``after`` in its header where it had
    ``before`` (a strategy without headers embeds the content alone: unchanged).

    >>> retitled("[notes > Part]\\nwords", "Part", "words", "notes", "ideas"), retitled("words", "", "words", "a", "b")
    ('[ideas > Part]\\nwords', 'words')
    """
    header = headed(before, section, "")
    # The body after the header is the content, or its end past a heading the header names.
    if before == after or not text.startswith(header) or not content.endswith(text[len(header):]):
        return text
    return headed(after, section, text[len(header):])
