"""Chunk-level reuse: a chunk whose embedded text is unchanged keeps its stored vector.

A vector is a function of the exact string given to the encoder (header included) and
of the embedding the index stamp names (model, dimension, pipeline version, strategy).
So a stored chunk row of the same stamp whose ``text`` equals a new chunk's already holds
that chunk's vector, bit for bit, even when its offsets, ordinal, locators and chunk id
have all moved (a paragraph inserted above it). Only the rest is encoded.

The stored rows are read through ``StoredWork``, which the caller opens from the index
path in the settings, so a Dask worker in another process reads them as the flow would.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Protocol

from citeline.schemas.stamp import IndexStamp

# (texts) -> (vectors, word-piece counts), in order: the encoder, with its time checks.
Encode = Callable[[list[str]], tuple[list, list[int]]]


class StoredWork(Protocol):
    """Read access to an index's stored work (index/reuse.py)."""

    def chunk_vectors(self, doc_id: str) -> list[dict]:
        """The document's chunk rows: ``chunk_id``, ``text``, ``vector``, ``tokens``."""
        ...

    def records_with(self, sha256: str) -> list[dict]:
        """The document records of these bytes, with their canonical text (a rename's or a copy's source)."""
        ...


@dataclass(frozen=True)
class Reuse:
    """Where a document's work may already be stored, as the plan knows it (no byte read yet)."""

    stored: StoredWork
    previous: bool = False  # the document was indexed before: its unchanged chunks keep their vectors
    same_size: bool = False  # a stored document has this file's size: one with its bytes lends its work


def keeps_title(donor_path: str, path: str, title: str) -> bool:
    """Whether a document read from ``donor_path`` keeps ``title`` at ``path``.

    Extractors fall back to the file name (its stem, or the whole name) for a document
    without a title of its own, so such a title may change with a rename: the stored
    canonical form is then not what extraction would give, and the file is extracted.

    >>> keeps_title("a/notes.md", "b/notes.md", "notes"), keeps_title("notes.md", "ideas.md", "notes")
    (True, False)
    >>> keeps_title("notes.md", "ideas.md", "Dropout, explained")
    True
    """
    before, after = PurePosixPath(donor_path), PurePosixPath(path)
    return before.name == after.name or title not in (before.stem, before.name)


@dataclass(frozen=True)
class Kept:
    """A stored chunk's vector and word-piece count, and the chunk id it is stored under."""

    chunk_id: str
    vector: Sequence[float]
    tokens: int


@dataclass(frozen=True)
class Reused:
    """What a document's chunks cost: texts encoded, and the chunks that kept a stored vector."""

    encoded: int = 0
    kept: Mapping[str, str] = field(default_factory=dict)  # new chunk id -> the stored chunk id it kept

    @property
    def reused(self) -> int:
        return len(self.kept)


@dataclass(frozen=True)
class Encoded:
    """A document's chunk vectors, each kept from the store or freshly encoded."""

    vectors: list
    tokens: list[int]
    encoded: int = 0  # texts given to the encoder (a text repeated in the document counts once)
    kept: Mapping[int, str] = field(default_factory=dict)  # chunk position -> the stored chunk id it kept

    @property
    def reused(self) -> int:
        return len(self.kept)


def reuse_key(text: str, stamp: IndexStamp) -> str:
    """The identity of a vector: the embedding (the stamp) and the exact string encoded.

    >>> reuse_key("[T > S]\\nhello", IndexStamp("m", 8)) == reuse_key("[T > S]\\nhello", IndexStamp("m", 16))
    False
    """
    return hashlib.sha256(f"{stamp.to_json()}\0{text}".encode()).hexdigest()


def kept_vectors(rows: Iterable[Mapping], stamp: IndexStamp) -> dict[str, Kept]:
    """Stored chunk rows of ``stamp``'s table by ``reuse_key`` (the first row of a repeated text wins)."""
    kept: dict[str, Kept] = {}
    for row in rows:
        kept.setdefault(reuse_key(row["text"], stamp), Kept(row["chunk_id"], row["vector"], int(row["tokens"])))
    return kept


def encode_reusing(texts: Sequence[str], stamp: IndexStamp, kept: Mapping[str, Kept], encode: Encode) -> Encoded:
    """Vectors for ``texts``: a stored one where the text is in ``kept``, else encoded (each new text once).

    >>> stamp = IndexStamp("m", 2)
    >>> kept = {reuse_key("old", stamp): Kept("c1", [1.0, 0.0], 3)}
    >>> out = encode_reusing(["old", "new", "new"], stamp, kept, lambda ts: ([[0.0, 1.0]] * len(ts), [4] * len(ts)))
    >>> out.vectors, out.tokens, out.encoded, dict(out.kept)
    ([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]], [3, 4, 4], 1, {0: 'c1'})
    """
    keys = [reuse_key(t, stamp) for t in texts]
    new = list(dict.fromkeys(k for k in keys if k not in kept))
    text_of = dict(zip(keys, texts))
    vectors, tokens = encode([text_of[k] for k in new]) if new else ([], [])
    fresh = {k: (v, n) for k, v, n in zip(new, vectors, tokens)}
    out_vectors, out_tokens = [], []
    for key in keys:
        vector, count = (kept[key].vector, kept[key].tokens) if key in kept else fresh[key]
        out_vectors.append(vector)
        out_tokens.append(count)
    return Encoded(out_vectors, out_tokens, len(new), {i: kept[k].chunk_id for i, k in enumerate(keys) if k in kept})
