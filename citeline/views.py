"""What ``citeline api`` shows a person: the ask page, the documents page, the source viewers.

Every string that came from a document (paths, titles, reasons, quotes, cell values)
goes through :func:`esc` on its way into a page; the pages also forbid inline script
(service.PAGE_CSP), so an escaping slip still could not run a document's code.
"""
from __future__ import annotations

import hashlib
import html
import io
import mimetypes
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import PurePosixPath
from typing import BinaryIO

from fastapi.responses import Response, StreamingResponse
from starlette.background import BackgroundTask

from citeline.api import ChunkInfo, DocumentInfo, Index
from citeline.index.filters import equals
from citeline.index.store import Store
from citeline.pipeline.prepare import changed, open_source, read_source
from citeline.schemas.document import Segment, segments_from_json
from citeline.schemas.errors import DocumentError
from citeline.schemas.locator import Page, SheetRange, TimeSpan, locator_from_dict
from citeline.schemas.paths import is_remote, os_path
from citeline.schemas.settings import IndexSettings

MAX_SOURCE_BYTES = IndexSettings().max_bytes  # the indexer reads nothing larger either
STREAM_BYTES = 256 * 1024  # one read of a source being sent
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".text", ".rst", ".csv", ".tsv", ".html", ".htm")
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class SourceUnavailable(KeyError):
    """The document's source file is gone, replaced by a link, or unreadable now."""


def esc(text) -> str:
    return html.escape("" if text is None else str(text), quote=True)


# ---- /sources ----------------------------------------------------------------------------


def source_bytes(doc: DocumentInfo) -> bytes:
    """The recorded source's bytes, read beneath its synced folder with no symlink on the way.

    Raises:
        SourceUnavailable: the file is gone, a link now, too large or unreadable.
    """
    root = doc.root if doc.root and doc.root != doc.source else None
    try:
        return read_source(doc.source, MAX_SOURCE_BYTES, root)
    except (DocumentError, OSError) as exc:
        raise SourceUnavailable(f"the source of document {doc.document_id} cannot be served: {exc}") from None


def content_type(path: str) -> str:
    """What the browser is told the bytes are: text as plain text (never HTML), PDFs, media,
    workbooks; anything else as an opaque download."""
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in TEXT_SUFFIXES or not suffix:
        return "text/plain; charset=utf-8"
    if suffix == ".pdf":
        return "application/pdf"
    if suffix in (".xlsx", ".xlsm"):
        return XLSX
    guessed = mimetypes.guess_type(f"x{suffix}")[0] or ""
    if suffix in (".ogg", ".oga", ".opus"):
        guessed = "audio/ogg"
    return guessed if guessed.startswith(("audio/", "video/")) else "application/octet-stream"


def source_response(doc: DocumentInfo, header: str | None) -> Response:
    """The recorded source whole (200) or the one range asked for (206; 416 when unsatisfiable),
    streamed from the open file: only the bytes sent are read, so a player seeking in a long
    recording costs what it fetches. Only single ranges are served: players ask for one at a time.

    Raises:
        SourceUnavailable: the file is gone, a link now, too large or unreadable.
    """
    ctype = content_type(doc.path)
    headers = {"Accept-Ranges": "bytes", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
    if ctype != "application/pdf":
        headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    if ctype == "application/octet-stream":
        headers["Content-Disposition"] = "attachment"
    with ExitStack() as stack:
        handle, size = _open_source(doc, stack)
        span = byte_range(header, size) if header else (0, size - 1)
        if span is None:
            return Response(b"", 416, headers={**headers, "Content-Range": f"bytes */{size}"})
        first, last = span
        if header:
            headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        headers["Content-Length"] = str(last + 1 - first)
        owner = stack.pop_all()  # the stream closes the file when it ends; the task if it never starts
        return StreamingResponse(_read_span(handle, first, last + 1, owner), 206 if header else 200,
                                 headers=headers, media_type=ctype, background=BackgroundTask(owner.close))


def _open_source(doc: DocumentInfo, stack: ExitStack) -> tuple[BinaryIO, int]:
    """The source opened as the indexer opens it (beneath its folder, no symlink), and its size.

    An object on S3 is read whole, as the indexer reads it (ranged GETs are not wired yet).
    """
    if is_remote(doc.source):
        data = source_bytes(doc)
        return io.BytesIO(data), len(data)
    path = os_path(doc.source)
    root = os_path(doc.root) if doc.root and doc.root != doc.source else os.path.dirname(path)
    try:
        handle, before = stack.enter_context(open_source(path, MAX_SOURCE_BYTES, root))
        opened = os.fstat(handle.fileno())
    except (DocumentError, OSError) as exc:
        raise SourceUnavailable(f"the source of document {doc.document_id} cannot be served: {exc}") from None
    if changed(before, opened):  # swapped between the look and the open
        raise SourceUnavailable(f"the source of document {doc.document_id} changed while it was opened")
    return handle, opened.st_size


def _read_span(handle: BinaryIO, start: int, end: int, owner: ExitStack) -> Iterator[bytes]:
    with owner:
        handle.seek(start)
        left = end - start
        while left > 0:
            block = handle.read(min(STREAM_BYTES, left))
            if not block:  # the file shrank while it was sent: the short body ends the connection
                return
            left -= len(block)
            yield block


def byte_range(header: str, size: int) -> tuple[int, int] | None:
    """The inclusive (first, last) byte of one ``Range: bytes=…`` over ``size`` bytes, or None.

    >>> byte_range("bytes=0-99", 1000), byte_range("bytes=900-", 1000), byte_range("bytes=-10", 1000)
    ((0, 99), (900, 999), (990, 999))
    >>> byte_range("bytes=1000-", 1000), byte_range("bytes=5-1", 1000), byte_range("items=0-1", 9)
    (None, None, None)
    """
    match = _RANGE.match(header.strip())
    if not match or size == 0 or match.groups() == ("", ""):
        return None
    first, last = match.groups()
    if first == "":
        return max(size - int(last), 0), size - 1
    start, end = int(first), min(int(last) if last else size - 1, size - 1)
    return (start, end) if start <= end else None


# ---- pages ------------------------------------------------------------------------------------


def _layout(title: str, body: str) -> str:
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><link rel=\"stylesheet\" href=\"/static/style.css\"></head>"
        "<body><nav><a href=\"/\">Ask</a> <a href=\"/library\">Documents</a> <a href=\"/docs\">API</a></nav>"
        f"{body}<script src=\"/static/ask.js\"></script></body></html>\n"
    )


def ask_page() -> str:
    """The question box; ask.js fills in the answer, the sources or the refusal."""
    return _layout("citeline — ask", """
<main>
<h1>Ask the index</h1>
<form id="ask"><input id="question" name="question" type="search" maxlength="2000" required
  placeholder="Ask a question about the indexed documents" autofocus>
  <label><input id="generate" type="checkbox"> generate an answer</label>
  <button type="submit">Ask</button></form>
<p id="status" role="status"></p>
<section id="answer" hidden><h2>Answer</h2><div id="answer-text"></div><p id="checks"></p></section>
<section id="refusal" hidden><h2>No answer</h2><p id="refusal-message"></p></section>
<section id="closest" hidden><h2>Closest passages — not an answer</h2><p id="closest-note"></p>
  <ol id="closest-list"></ol></section>
<section id="results" hidden><h2>Sources</h2><ol id="sources"></ol></section>
</main>""")


def documents_page(docs: Sequence[DocumentInfo]) -> str:
    """Every document with status, reason, chunk count and stamps, failed ones first."""
    rows = "".join(
        f"<tr class=\"{esc(d.status)}\"><td>{esc(d.status)}</td><td>{esc(d.path)}</td>"
        f"<td>{esc(d.stage or '')}</td><td>{esc(d.reason or '')}</td><td>{d.chunk_count}</td>"
        f"<td>{esc(_stamps(d))}</td><td>{esc(d.notes)}</td></tr>"
        for d in docs
    )
    failed = sum(d.failed for d in docs)
    return _layout("citeline — documents", f"""
<main><h1>Documents</h1><p>{len(docs)} documents, {failed} failed.</p>
<table id="documents"><thead><tr><th>status</th><th>path</th><th>stage</th><th>reason</th><th>chunks</th>
<th>stamps</th><th>notes</th></tr></thead><tbody>{rows}</tbody></table></main>""")


def _stamps(doc: DocumentInfo) -> str:
    stamps = dict(doc.stamps)
    keys = ("extractor", "extractor_version", "embed_model", "strategy", "pipeline_version")
    return ", ".join(f"{k}={stamps[k]}" for k in keys if stamps.get(k) is not None)


def viewer_page(index: Index, doc: DocumentInfo, chunk: ChunkInfo) -> str:
    """The source opened at the chunk: PDF page, media span, sheet range, or highlighted text.

    Nothing of the source is parsed here (a replaced workbook of millions of shared strings
    pinned the service): text, sheet ranges and rows come from what the index stored; PDFs
    and media are the browser's to render. The page says when the source changed since it
    was indexed, or is gone.
    """
    stored = _stored(index, doc.document_id)
    first = locator_from_dict(chunk.locators[0]) if chunk.locators else None
    source = f"/sources/{doc.document_id}"
    if isinstance(first, Page):
        body = (f"<iframe id=\"pdf\" src=\"{esc(source + chunk.fragment)}\" title=\"{esc(doc.path)}\"></iframe>"
                + _quote(chunk))
    elif isinstance(first, TimeSpan):
        spans = [locator_from_dict(d) for d in chunk.locators if d.get("kind") == "time"]
        start, end = min(s.start for s in spans), max(s.end for s in spans)
        tag = "video" if content_type(doc.path).startswith("video/") else "audio"
        body = (f"<{tag} id=\"player\" controls preload=\"auto\" data-start=\"{start:.2f}\" data-end=\"{end:.2f}\" "
                f"src=\"{esc(source + chunk.fragment)}\"></{tag}>" + _quote(chunk))
    elif isinstance(first, SheetRange):
        # A block's locators are its header row and its rows: a table of each cited range.
        ranges = dict.fromkeys(loc for loc in map(locator_from_dict, chunk.locators) if isinstance(loc, SheetRange))
        body = "".join(sheet_table(stored, where, chunk) for where in ranges)
    else:
        body = highlighted(stored["canonical"] or "", chunk.start, chunk.end)
    heading = f"<h1>{esc(doc.path)}</h1><p class=\"label\">{esc(chunk.label)} <code>{esc(chunk.fragment)}</code></p>"
    notice = source_notice(doc, stored)
    notice = f"<p id=\"source-changed\" class=\"notice\">{esc(notice)}</p>" if notice else ""
    return _layout(f"{doc.path} — citeline", f"<main class=\"viewer\">{heading}{notice}{body}</main>")


_STORED = ("canonical", "segments", "sha256", "size", "mtime_ns", "inode", "device")


def _stored(index: Index, document_id: str) -> dict:
    """What the index holds of the document: its canonical text, locator map, hash and stat."""
    rows = Store.existing(index.uri).document_rows(list(_STORED), equals("doc_id", document_id))
    if not rows:
        raise KeyError(f"no document {document_id!r} in the index at {index.uri}")
    return rows[0]


def source_notice(doc: DocumentInfo, stored: dict) -> str | None:
    """What the reader must know about the source now: changed since it was indexed (its
    sha256 differs), gone or unreadable; None when it is the file that was indexed.

    A local file whose size, mtime, inode and device are the recorded ones is the one
    indexed (as a sync decides, unread); another is hashed, never parsed.
    """
    try:
        now = _current_sha256(doc, stored)
    except SourceUnavailable as exc:
        return f"{exc}; this page shows the text as it was indexed"
    if now is None or now == stored["sha256"]:
        return None
    return (f"the source has changed since it was indexed (sha256 {stored['sha256'][:12]}… then, {now[:12]}… now); "
            "this page shows the text as it was indexed: sync the folder to index the new version")


def _current_sha256(doc: DocumentInfo, stored: dict) -> str | None:
    """The source's sha256 now; None when its stat is the recorded one (unchanged, not read)."""
    if is_remote(doc.source):
        return hashlib.sha256(source_bytes(doc)).hexdigest()
    with ExitStack() as stack:
        handle, size = _open_source(doc, stack)
        st = os.fstat(handle.fileno())
        if (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev) == tuple(stored[k] for k in _STORED[3:]):
            return None
        digest = hashlib.sha256()
        while block := handle.read(STREAM_BYTES):
            digest.update(block)
        return digest.hexdigest()


def _quote(chunk: ChunkInfo) -> str:
    return f"<blockquote id=\"quote\">{esc(chunk.content)}</blockquote>"


def highlighted(canonical: str, start: int, end: int) -> str:
    """The canonical text with ``[start:end]`` marked; the link's ``#cited`` scrolls to it."""
    return (f"<pre id=\"text\">{esc(canonical[:start])}<mark id=\"cited\">{esc(canonical[start:end])}</mark>"
            f"{esc(canonical[end:])}</pre>")


def sheet_table(stored: dict, where: SheetRange, chunk: ChunkInfo) -> str:
    """The cited range as the indexer read it: one row per stored segment of that range
    within the chunk (its cells as they were rendered into the canonical text)."""
    text = stored["canonical"] or ""
    rows = "".join(f"<tr><th>{esc(seg.locator.fragment())}</th><td>{esc(text[seg.start:seg.end])}</td></tr>"
                   for seg in sheet_segments(stored["segments"], chunk)
                   if _within(seg.locator, where))
    return (f"<table class=\"range\" data-range=\"{esc(where.fragment())}\"><caption>{esc(where.fragment())}</caption>"
            f"<tbody>{rows}</tbody></table>")


def sheet_segments(segments_json: str, chunk: ChunkInfo) -> list[Segment]:
    """The stored segments of sheet cells that overlap the chunk, in reading order."""
    return [seg for seg in segments_from_json(segments_json)
            if isinstance(seg.locator, SheetRange) and seg.start < chunk.end and seg.end > chunk.start]


def _within(inner: SheetRange, outer: SheetRange) -> bool:
    """Whether the range ``inner`` lies inside ``outer`` (same sheet).

    >>> _within(SheetRange("S", "A2:C2"), SheetRange("S", "A1:C9")), _within(SheetRange("S", "A2"), SheetRange("T", "A1:C9"))
    (True, False)
    """
    from openpyxl.utils.cell import range_boundaries

    if inner.sheet != outer.sheet:
        return False
    a, b = range_boundaries(_as_range(inner.cells)), range_boundaries(_as_range(outer.cells))
    return b[0] <= a[0] and b[1] <= a[1] and a[2] <= b[2] and a[3] <= b[3]


def _as_range(cells: str) -> str:
    return cells if ":" in cells else f"{cells}:{cells}"
