"""One document from bytes on disk to chunk rows ready to write: read, extract, chunk, embed.

Every failure is tagged with the stage it happened in, so an operator reads
"extract: encrypted: …" rather than a traceback.
"""
from __future__ import annotations

import hashlib
import os
import stat
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO

from citeline.pipeline import objects
from citeline.pipeline.beneath import Escapes, open_beneath
from citeline.pipeline.blame import contained, library_errors
from citeline.pipeline.chunk import CHUNKER_VERSION, Progress, chunk_document
from citeline.pipeline.embed import Embedder
from citeline.pipeline.isolate import extract_isolated
from citeline.pipeline.locate import cited_locators, locators_json
from citeline.pipeline.packaged import whisper_folder
from citeline.pipeline.reuse import Kept, Reuse, Reused, encode_reusing, keeps_title, kept_vectors
from citeline.pipeline.walk import FileStat, SourceFile
from citeline.schemas.document import Canonical, Chunk, segments_from_json
from citeline.schemas import interrupt
from citeline.schemas.errors import DocumentError, NotADocument, Timeout, TooLarge, Unreadable, Vanished
from citeline.schemas.options import ExtractOptions
from citeline.schemas.paths import is_remote, os_path
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp, Stamp
from citeline.schemas.status import DocStatus, Stage
from citeline.schemas.tokens import token_row

if TYPE_CHECKING:
    import numpy as np

    from citeline.extractors.clean import Deadline

SNIFF_BYTES = 8192
# Chunks embedded between two looks at the time limit: four encoder batches of 16 (a second
# or two on a busy CPU), and sorting by length within a group still pads little.
EMBED_GROUP = 64


def doc_id_for(source: str) -> str:
    """Stable id of a document: its absolute path (content changes keep the id)."""
    return hashlib.sha256(source.encode()).hexdigest()[:32]


def chunk_id_for(doc_id: str, chunk: Chunk, stamp: IndexStamp) -> str:
    return chunk_id_of(doc_id, chunk.start, chunk.end, chunk.text, stamp)


def chunk_id_of(doc_id: str, start: int, end: int, text: str, stamp: IndexStamp) -> str:
    """A chunk's id from its document, range and embedded text (a stored row has all three)."""
    key = f"{doc_id}:{start}:{end}:{stamp.strategy}:{CHUNKER_VERSION}:{text}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


@dataclass
class Prepared:
    """A document ready to write: its canonical form and its chunk rows with vectors."""

    file: SourceFile
    doc_id: str
    sha256: str
    size: int
    canonical: Canonical
    rows: list[dict] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per stage, for bench/
    stat: FileStat | None = None  # of the bytes read (None when re-chunked from the record)
    reused: Reused = Reused()  # chunks encoded, and those that kept a stored vector (pipeline/reuse.py)
    lent_by: str | None = None  # the stored document with the same bytes whose work this one took
    # Rows of the token table (index/tokens.py ``token_row``) of the chunks encoded here, from the
    # pass that embedded them; empty unless the index keeps token vectors and the embedder gives
    # both in one pass (``embed_with_token_vectors``): the run's fill encodes the rest.
    token_rows: list[dict] = field(default_factory=list, repr=False)

    @property
    def truncated(self) -> int:
        return sum(1 for row in self.rows if row["truncated"])


@dataclass(frozen=True)
class Known:
    """What a document's record says it was indexed from: the same bytes read by the same
    extractor version need no work (its other stamps were checked when it was planned)."""

    sha256: str
    extractor: str
    extractor_version: str

    @classmethod
    def of(cls, record: Mapping) -> "Known":
        return cls(record["sha256"], record["extractor"], record["extractor_version"])


@dataclass(frozen=True)
class Unchanged:
    """A file whose stat moved but whose bytes are still the indexed ones: only its stat is new."""

    file: SourceFile
    doc_id: str
    stat: FileStat


@dataclass(frozen=True)
class SetAside:
    """A file that is no document (schemas/errors.py ``NotADocument``): recorded with what it is
    and the stat it was read under, not failed, so the next sync passes it by until it changes."""

    file: SourceFile
    doc_id: str
    what: str  # "Python source", "an image with no text"
    stat: FileStat


def tag(exc: BaseException, stage: Stage) -> BaseException:
    """Remember the stage on the exception (first stage wins)."""
    if not hasattr(exc, "stage"):
        exc.stage = stage.value
    return exc


def read_source(path: str, max_bytes: int, root: str | None = None) -> bytes:
    """The file's bytes, refusing files over ``max_bytes`` before loading them (``read_stat``)."""
    return read_stat(path, max_bytes, root)[0]


def read_stat(path: str, max_bytes: int, root: str | None = None) -> tuple[bytes, FileStat]:
    """The file's bytes and the stat they were read under, refusing files over ``max_bytes``
    before loading them.

    The bytes returned are the bytes hashed and indexed, so a file caught mid-write
    (its size, mtime or inode moved while it was opened and read) is refused rather
    than recorded under a hash of a half-old, half-new mixture. The file is opened
    beneath ``root`` (default: its own folder) with no symlink on the way, so a file
    swapped for a link after the listing cannot bring in a file from elsewhere.

    Raises:
        Vanished: the file disappeared, or changed while it was being read.
        Unreadable: a symlink, permissions or another OS error.
        TooLarge: over the size limit.
    """
    path = os_path(path)  # stored names are escaped (schemas/paths.py), object keys too
    if is_remote(path):
        return read_remote(path, max_bytes)
    root = os.path.dirname(path) if root is None else os_path(root)
    with open_source(path, max_bytes, root) as (handle, before), _os_errors():
        opened = os.fstat(handle.fileno())
        data = handle.read(max_bytes + 1)
        after = os.fstat(handle.fileno())
    if changed(before, opened) or changed(opened, after) or len(data) != after.st_size:
        raise Vanished(f"the file changed while it was being read ({before.st_size:,} bytes before opening, "
                       f"{len(data):,} read, {after.st_size:,} now); it is read again on the next attempt")
    return data, FileStat.of(after)


@contextmanager
def open_source(path: str, max_bytes: int, root: str) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """The file opened for reading beneath ``root`` with no symlink on the way, and the
    ``lstat`` it was checked under; a reader seeks and reads only what it needs.

    ``path`` and ``root`` are the file system's names (``os_path`` of the stored ones).

    Raises:
        Vanished, Unreadable, TooLarge: as ``read_stat``.
    """
    with _os_errors():
        before = os.lstat(path)
        if stat.S_ISLNK(before.st_mode):
            raise Unreadable(_SYMLINK)
        if not stat.S_ISREG(before.st_mode):
            raise Unreadable("not a regular file (a pipe, socket or device): reading it could block forever")
        if before.st_size > max_bytes:
            raise TooLarge(f"{before.st_size:,} bytes is over the {max_bytes:,}-byte limit (--max-bytes); "
                           "the file was not read")
        # Auditors (and the race tests) see every source opened, openat2 included.
        sys.audit("citeline.open", path)
        # Non-blocking, so a pipe swapped in after the stat cannot hang the run; no effect on files.
        handle = open(open_beneath(root, os.path.relpath(path, root)), "rb")
    with handle:
        yield handle, before


@contextmanager
def _os_errors() -> Iterator[None]:
    """OS errors met opening or reading a source, as the document failures they are."""
    try:
        yield
    except Escapes:
        raise Unreadable(_SYMLINK) from None
    except FileNotFoundError:
        raise Vanished("the file disappeared before it could be read") from None
    except PermissionError as exc:
        raise Unreadable(f"permission denied: {exc.strerror}") from None
    except IsADirectoryError:
        raise Unreadable("a directory, not a file") from None


def read_remote(url: str, max_bytes: int) -> tuple[bytes, FileStat]:
    """``read_stat`` for an object (``s3://bucket/key``): its bytes and the stat of that version.

    Raises:
        Vanished, Unreadable, TooLarge: as ``read_stat`` (pipeline/objects.py).
    """
    sys.audit("citeline.open", url)
    data, info = objects.read_object(url, max_bytes)
    return data, FileStat.of_object(info)


_SYMLINK = ("a symbolic link (or a path through one) where the listing found a regular file: "
            "sources are never read through links, which could lead outside the indexed folder")


def changed(first: os.stat_result, second: os.stat_result) -> bool:
    """Whether two looks at a path saw different files or different contents."""
    return _identity(first) != _identity(second)


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _extractors():
    """The extractor registry, imported on first use: importing it loads every extractor's library
    (PyMuPDF, lxml, Pillow ...: ~0.9 s), which a sync whose files are all unchanged never needs."""
    from citeline import extractors

    return extractors


def _deadline(seconds: float) -> Deadline:
    from citeline.extractors.clean import Deadline

    return Deadline(seconds)


def extract_bytes(data: bytes, name: str, options: ExtractOptions) -> Canonical:
    """Pick the extractor by magic bytes then suffix, and run it (isolated if it asks to be).

    Whatever it raises is the file's failure (``contained``): a DocumentError, its library's
    ParserFailed, or any other exception as ``Unexpected``; only a stop passes.
    """
    return run_extractor(sniffed(data, name), data, name, options)


def run_extractor(module, data: bytes, name: str, options: ExtractOptions) -> Canonical:
    """``module.extract(data, name, options)``, in a killable worker if the module asks for one.

    Raises:
        DocumentError: whatever the extractor raised, as the file's failure (``contained``).
        Stopped: the run was told to stop.
    """
    with contained(f"the {getattr(module, 'NAME', module.__name__)} extractor"):
        if getattr(module, "ISOLATE", False):
            return extract_isolated(module.__name__, data, name, options)
        with library_errors(module):  # as the worker does: a library's exception is the file's failure
            return module.extract(data, name, options)


def sniffed(data: bytes, name: str):
    """The extractor module for a file's bytes and name (UnsupportedType, or Unexpected, when none)."""
    with contained("the file type sniffer"):
        return _extractors().for_bytes(data[:SNIFF_BYTES], name)


def prepare(file: SourceFile, embedder: Embedder, stamp: IndexStamp, settings: IndexSettings,
            known: Known | None = None, reuse: Reuse | None = None) -> Prepared | Unchanged | SetAside:
    """Read, extract, chunk and embed one file: extraction and chunking within ``settings.timeout_s``,
    embedding for as long as it makes progress (each group of chunks within the limit).

    The file is read once: its bytes are hashed, and when they are ``known`` (the
    indexed ones, for the same extractor) nothing else is done; otherwise the same
    bytes are extracted. With ``reuse`` (pipeline/reuse.py), stored work is taken where
    it is the same: a stored document with these very bytes (a renamed, moved or copied
    file) lends its canonical text, so nothing is extracted; and a chunk whose embedded
    text is stored under the same stamp (that document's, or this one's previous
    version's) keeps its vector, so only the others are encoded.

    The limit is checked between stages and as the chunker goes (pipeline/chunk.py's
    ``Progress``), and handed to the extractor as what is left of it (an isolated extractor is
    killed past it): it is there to stop a stuck parser. Embedding is honest work whose length
    grows with the document (a 3 MB book is ~8,700 chunks): the limit starts again when embedding
    starts and after every group of ``EMBED_GROUP`` chunks, so a long document finishes while its
    groups keep coming, and one whose encoder stalls past the limit fails before its next group.

    Raises:
        DocumentError: bad input (Timeout past the limit), with ``.stage`` set; any other
            exception is tagged too (an OSError of reading or extracting is bad input as well,
            anything else a bug).
    """
    deadline = _deadline(settings.timeout_s)
    done = extract_chunks(file, stamp, settings, known, deadline, reuse)
    if isinstance(done, (Unchanged, SetAside)):
        return done
    return embed_prepared(*done, embedder, stamp, deadline, settings.token_vectors is True)


def embed_prepared(prepared: Prepared, chunks: list[Chunk], kept: dict[str, Kept], embedder: Embedder,
                   stamp: IndexStamp, deadline: Deadline, pieces: bool = False) -> Prepared:
    """The extracted document given its rows: kept vectors taken, the other chunks encoded (with
    their word-piece vectors when ``pieces``)."""
    started = time.perf_counter()
    deadline.renew()  # extraction's limit spent is not embedding's (see ``prepare``)
    try:
        prepared.rows, prepared.reused = embed_rows(prepared, chunks, embedder, stamp, deadline, kept, pieces)
    except Exception as exc:  # safe: re-raised at once, only tagged with the stage it reached
        raise tag(exc, Stage.EMBED)
    prepared.seconds["embed"] = time.perf_counter() - started
    return prepared


def extract_chunks(file: SourceFile, stamp: IndexStamp, settings: IndexSettings, known: Known | None,
                   deadline: Deadline, reuse: Reuse | None = None
                   ) -> Unchanged | SetAside | tuple[Prepared, list[Chunk], dict[str, Kept]]:
    """``prepare`` up to its embedding: the file read, extracted (or its stored twin's text
    taken) and chunked, with the stored vectors its chunks may keep; rows not yet made.
    A file no extractor reads, or one with nothing to read (a photo with no text), is SetAside.

    Raises:
        as ``prepare``, with ``.stage`` set to read, extract or chunk.
    """
    stage = Stage.READ
    marks = [time.perf_counter()]
    doc_id = doc_id_for(file.source)
    try:
        data, seen = read_stat(file.source, settings.max_bytes, file.root)
        sha256 = hashlib.sha256(data).hexdigest()
        if known is not None and is_known(data, sha256, Path(file.path).name, known):
            return Unchanged(file, doc_id, seen)
        marks.append(time.perf_counter())
        stage = Stage.CHUNK  # reading the index is no document's fault: an error there stops the run
        donor = same_bytes(data, sha256, file, doc_id, reuse) if reuse is not None and reuse.same_size else None
        stage = Stage.EXTRACT
        if donor is not None:
            canonical, lender = stored_canonical(donor), donor["doc_id"]
        else:
            options = ExtractOptions(ocr_lang=settings.ocr_lang, time_limit_s=_left(deadline),
                                     whisper_model=whisper_folder(settings.whisper_model),
                                     max_memory_bytes=settings.max_memory_bytes or None)
            try:
                canonical = extract_bytes(data, Path(file.path).name, options)
            except NotADocument as exc:
                return SetAside(file, doc_id, str(exc), seen)
            lender = doc_id if reuse is not None and reuse.previous else None
        prepared = Prepared(file, doc_id, sha256, len(data), canonical, stat=seen,
                            lent_by=None if donor is None else donor["source"])
        marks.append(time.perf_counter())
        deadline.check("the end of extraction")
        stage = Stage.CHUNK
        with contained("the chunker"):
            chunks = chunk_document(canonical.text, canonical.title, prepared.doc_id, stamp.strategy,
                                    settings.budget, settings.overlap, within(deadline, len(canonical.text)))
        prepared.canonical = why_unquoted(canonical, chunks)
        kept = kept_vectors(reuse.stored.chunk_vectors(lender), stamp) if lender is not None else {}
        marks.append(time.perf_counter())
        deadline.check("the end of chunking")
        prepared.seconds = dict(zip(("read", "extract", "chunk"), (b - a for a, b in zip(marks, marks[1:]))))
        return prepared, chunks, kept
    except Exception as exc:  # safe: re-raised at once, only tagged with the stage it reached
        raise tag(exc, stage)


def within(deadline: Deadline, size: int) -> Progress:
    """The chunker's progress held to the document's limit: a long text is stopped where the
    limit passes (``Timeout`` says how far it got), not found late once it is all cut."""
    def check(at: int) -> None:
        if deadline.at is not None and time.monotonic() > deadline.at:
            deadline.check(f"chunking, {at:,} of {size:,} characters done")
    return check


def same_bytes(data: bytes, sha256: str, file: SourceFile, doc_id: str, reuse: Reuse) -> dict | None:
    """A stored document with these bytes whose canonical form this file would get: indexed,
    read by the extractor that reads this file today, with a title that survives the new name."""
    return lender_among(reuse.stored.records_with(sha256), data, sha256, file, doc_id)


def lender_among(records, data: bytes, sha256: str, file: SourceFile, doc_id: str) -> dict | None:
    """The first of ``records`` (oldest first) that may lend ``file`` its work: another
    document, indexed, of these bytes read by today's extractor for the new name, with a
    title the new name keeps (``data`` needs only its first ``SNIFF_BYTES``)."""
    name = Path(file.path).name
    for record in records:
        if (record["doc_id"] != doc_id and record["status"] == DocStatus.INDEXED
                and is_known(data, sha256, name, Known.of(record))
                and (title := title_at(record, file.path)) is not None):
            # the lender as the new file has it: its title at the new name (the stored one in ``lent_title``)
            return {**record, "title": title, "lent_title": record["title"] or ""}
    return None


def title_at(record: Mapping, path: str) -> str | None:
    """The title the stored document ``record`` has at ``path``: its own where the new name
    keeps it; else, where its extractor titles a document by its file name in a way known
    without extracting (text and Markdown: the first ``# `` line, else the name; media: the
    stem), the one the new name gives; None: only extraction can tell (extract it again).

    >>> record = {"path": "a/notes.txt", "title": "notes", "extractor": "text", "canonical": "Plain words."}
    >>> title_at(record, "b/notes.txt"), title_at(record, "b/ideas.txt"), title_at({**record, "extractor": "pdf"}, "x.pdf")
    ('notes', 'ideas', None)
    """
    title = record["title"] or ""
    if keeps_title(record["path"], path, title):
        return title
    name = PurePosixPath(path).name
    if record["extractor"] == "text":
        from citeline.extractors.text import title_of

        return title_of(record["canonical"], name)
    if record["extractor"] == "media":
        return PurePosixPath(name).stem
    return None


def stored_canonical(record: dict) -> Canonical:
    """The canonical form a document record stores (its text, title, segments, notes)."""
    return Canonical(
        text=record["canonical"], title=record["title"] or "", extractor=record["extractor"],
        extractor_version=record["extractor_version"], segments=segments_from_json(record["segments"]),
        notes=tuple((record.get("notes") or "").splitlines()),
    )


def is_known(data: bytes, sha256: str, name: str, known: Known) -> bool:
    """Whether these bytes are the indexed ones and today's extractor for them is the one that read them."""
    if sha256 != known.sha256:
        return False
    try:
        module = sniffed(data, name)
    except DocumentError:  # no extractor claims it now: index it again, to record why it fails
        return False
    return (module.NAME, module.VERSION) == (known.extractor, known.extractor_version)


def _left(deadline: Deadline) -> float | None:
    """What is left of the limit for the extractor (never 0, which would mean no limit)."""
    left = deadline.left()
    return None if left is None else max(left, 0.01)


def rechunk(record: dict, embedder: Embedder, stamp: IndexStamp, settings: IndexSettings) -> Prepared:
    """A stored document chunked and embedded again from its canonical text: no re-extraction."""
    canonical = stored_canonical(record)
    file = SourceFile(record["source"], record["root"], record["path"])
    prepared = Prepared(file, record["doc_id"], record["sha256"], record["size"], canonical)
    chunks = chunk_document(canonical.text, canonical.title, prepared.doc_id, stamp.strategy,
                            settings.budget, settings.overlap)
    prepared.canonical = why_unquoted(canonical, chunks)
    prepared.rows, prepared.reused = embed_rows(prepared, chunks, embedder, stamp, pieces=settings.token_vectors is True)
    return prepared


UNQUOTED = "nothing to quote: the text holds only heading marks without words"


def why_unquoted(canonical: Canonical, chunks: list[Chunk]) -> Canonical:
    """``canonical``, with a note saying why when its text gets no chunk.

    Every word is quoted by some chunk (headings' too: pipeline/chunk.py), so a text that gets
    none holds only ``#`` marks; an extractor that returns no text says why itself (a
    recording without speech). ``check`` reads a document indexed with zero chunks and no
    note as damage, and ``check --repair`` would index it again to the same end every time.
    """
    if chunks or canonical.notes or not canonical.text.strip():
        return canonical
    return replace(canonical, notes=(UNQUOTED,))


def embed_rows(prepared: Prepared, chunks: list[Chunk], embedder: Embedder, stamp: IndexStamp,
               deadline: Deadline | None = None, kept: dict[str, Kept] | None = None,
               pieces: bool = False) -> tuple[list[dict], Reused]:
    """Chunk rows with vectors, word-piece counts and every stamp column, and what they cost.

    Args:
        kept: stored vectors by ``reuse_key``; a chunk whose embedded text is among them is not encoded.
        pieces: also keep the encoded chunks' word-piece vectors (``prepared.token_rows``) where
            the embedder gives them from the same pass.
    """
    found: dict[str, np.ndarray] | None = {} if pieces and one_pass(embedder) else None
    encoded = encode_reusing([c.text for c in chunks], stamp, kept or {},
                             lambda texts: encode_groups(embedder, texts, deadline, found))
    ids = [chunk_id_for(prepared.doc_id, c, stamp) for c in chunks]
    reused = Reused(encoded.encoded, {ids[i]: old for i, old in encoded.kept.items()})
    if found:
        prepared.token_rows = token_rows_of(ids, [c.text for c in chunks], found)
    return chunk_rows(prepared, chunks, ids, encoded.vectors, encoded.tokens, embedder.max_tokens, stamp), reused


def one_pass(embedder: Embedder) -> bool:
    """Whether the embedder gives word-piece vectors from the pass that embeds (else the run's
    fill encodes them in a second pass: tasks/tokens.py)."""
    return callable(getattr(embedder, "embed_with_token_vectors", None))


def encode_counted(embedder: Embedder, texts: list[str], found: dict | None) -> tuple[list, list[int]]:
    """``embedder.embed_counted``; with ``found``, each text's word-piece vectors from the same pass
    are put there by text."""
    if found is None:
        return embedder.embed_counted(texts)
    vectors, tokens, pieces = embedder.embed_with_token_vectors(texts)
    found.update(zip(texts, pieces))
    return vectors, tokens


def token_rows_of(ids: list[str], texts: list[str], found: Mapping[str, np.ndarray]) -> list[dict]:
    """Token-table rows of the chunks whose text was encoded here (int8, schemas/tokens.py)."""
    return [token_row(cid, found[text]) for cid, text in zip(ids, texts) if text in found]


def encode_groups(embedder: Embedder, texts: list[str], deadline: Deadline | None,
                  found: dict | None = None) -> tuple[list, list[int]]:
    """Encode ``texts`` ``EMBED_GROUP`` at a time; the time limit is one group's (``prepare``):
    checked before each group, started again after each. ``found``: see ``encode_counted``."""
    vectors, tokens = [], []
    for start in range(0, len(texts), EMBED_GROUP):
        interrupt.check()  # a run told to stop does not encode a large document to its end
        if deadline is not None:
            deadline.check(f"embedding, {start} of {len(texts)} chunks done: the last group of "
                           f"{EMBED_GROUP} took longer than the limit")
            deadline.renew()  # the group now started has the whole limit
        group_vectors, group_tokens = encode_counted(embedder, texts[start:start + EMBED_GROUP], found)
        vectors.extend(group_vectors)
        tokens.extend(group_tokens)
    return vectors, tokens


def chunk_rows(prepared: Prepared, chunks: list[Chunk], ids: list[str], vectors: list, tokens: list[int],
               max_tokens: int, stamp: IndexStamp) -> list[dict]:
    """The rows of the chunks table for a document's chunks and their vectors."""
    stamped = Stamp(stamp, prepared.canonical.extractor, prepared.canonical.extractor_version).columns()
    return [
        {
            "chunk_id": chunk_id,
            "doc_id": prepared.doc_id,
            "path": prepared.file.path,
            "title": prepared.canonical.title,
            "section": c.section,
            "ordinal": c.ordinal,
            "start": c.start,
            "end": c.end,
            "content": c.content,
            "text": c.text,
            "locators": locators_json(cited_locators(c.start, c.end, prepared.canonical.segments)),
            "tokens": n,
            "truncated": n > max_tokens,
            "vector": vector,
            **stamped,
        }
        for c, chunk_id, vector, n in zip(chunks, ids, vectors, tokens)
    ]


def prepare_group(files: list[tuple[SourceFile, Known | None, Reuse | None]], embedder: Embedder,
                  stamp: IndexStamp, settings: IndexSettings) -> list[Prepared | Unchanged | SetAside | Exception]:
    """``prepare`` for several small files, their chunks encoded together: with documents of one or
    two chunks, an encoder batch of one document is mostly empty.

    Each file is read, extracted and chunked in turn within its own time limit; then the
    chunks of all of them are encoded in shared groups of ``EMBED_GROUP``. A document's limit
    bounds its own extraction; in the shared encoding it is one group's (as in ``prepare``),
    checked before each group that holds its chunks. A document
    with stored vectors to keep (``Reuse``, pipeline/reuse.py) is encoded on its own, so only
    its changed chunks are.

    Returns:
        per file, in order: Prepared, Unchanged, SetAside, or the exception of bad input (``is_bad_input``,
        ``.stage`` set), so a document that fails fails alone.

    Raises:
        any exception that is not bad input (a bug: the run stops).
    """
    results: list[Prepared | Unchanged | SetAside | Exception] = []
    extracted: list[tuple[int, list[Chunk], Deadline, float]] = []
    for file, known, reuse in files:
        deadline = _deadline(settings.timeout_s)
        try:
            done = extract_chunks(file, stamp, settings, known, deadline, reuse)
            if isinstance(done, tuple) and done[2]:
                done = embed_prepared(*done, embedder, stamp, deadline, settings.token_vectors is True)
        except Exception as exc:  # safe: only bad input is kept as the document's result; the rest re-raised
            if not is_bad_input(exc):
                raise
            done = exc
        if isinstance(done, tuple):
            extracted.append((len(results), done[1], deadline, time.monotonic()))
            done = done[0]
        results.append(done)
    for at, error in encode_together(results, extracted, embedder, stamp, settings.token_vectors is True).items():
        results[at] = error
    return results


def encode_together(results: list, extracted: list[tuple[int, list[Chunk], Deadline, float]], embedder: Embedder,
                    stamp: IndexStamp, pieces: bool = False) -> dict[int, Exception]:
    """Encode the chunks of the ``extracted`` documents in shared groups and give each its rows
    (and its token rows, with ``pieces``: see ``embed_rows``).

    Returns:
        the documents whose time limit ran out while they waited to be encoded, by position.
    """
    started = time.monotonic()  # embedding's limit is one group's, as in ``encode_groups``
    flat = [(k, chunk) for k, (_, chunks, _, _) in enumerate(extracted) for chunk in chunks]
    encoded: list[list] = [[] for _ in extracted]
    failed: dict[int, Exception] = {}
    found: dict[str, np.ndarray] | None = {} if pieces and one_pass(embedder) else None
    for start in range(0, len(flat), EMBED_GROUP):
        for k in dict.fromkeys(k for k, _ in flat[start:start + EMBED_GROUP] if k not in failed):
            try:
                extracted[k][2].check(f"embedding, together with other documents ({start} of {len(flat)} chunks)")
            except Timeout as exc:
                failed[k] = tag(exc, Stage.EMBED)
        group = [(k, chunk) for k, chunk in flat[start:start + EMBED_GROUP] if k not in failed]
        if group:
            for _, _, deadline, _ in extracted:  # the group now started has the whole limit, for each waiting
                deadline.renew()
            vectors, tokens = encode_counted(embedder, [chunk.text for _, chunk in group], found)
            for (k, _), vector, n in zip(group, vectors, tokens):
                encoded[k].append((vector, n))
    seconds = (time.monotonic() - started) / max(len(flat), 1)  # each document's share, by its chunks
    for k, (at, chunks, _, _) in enumerate(extracted):
        if k not in failed:
            prepared = results[at]
            ids = [chunk_id_for(prepared.doc_id, c, stamp) for c in chunks]
            prepared.rows = chunk_rows(prepared, chunks, ids, [v for v, _ in encoded[k]],
                                       [n for _, n in encoded[k]], embedder.max_tokens, stamp)
            prepared.reused = Reused(encoded=len(chunks))
            if found:
                prepared.token_rows = token_rows_of(ids, [c.text for c in chunks], found)
            prepared.seconds["embed"] = seconds * len(chunks)
    return {extracted[k][0]: exc for k, exc in failed.items()}


def is_bad_input(exc: BaseException) -> bool:
    """Whether ``exc`` says the document is bad, not citeline: then it fails alone.

    A DocumentError always does; an OSError only while the file is read or parsed (a
    vanished path, an I/O error, Pillow's unreadable image). Every other exception, and
    an OSError of chunking or embedding, is a bug or a broken installation.
    """
    if isinstance(exc, DocumentError):
        return True
    return isinstance(exc, OSError) and getattr(exc, "stage", None) in (Stage.READ.value, Stage.EXTRACT.value)


def error_kind(exc: DocumentError | OSError) -> str:
    """The reason's kind: a DocumentError's own, else the OS error's type (``os-error (OSError)``)."""
    if isinstance(exc, DocumentError):
        return exc.kind
    if not isinstance(exc, OSError):  # LanceDB's wrapping of one (index/faults.py)
        return "storage"
    return f"os-error ({type(exc).__name__})"
