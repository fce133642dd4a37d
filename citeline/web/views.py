"""What ``citeline api`` serves of a document: its source bytes and the views that open it at a
citation (the other pages are citeline/web/pages.py).

Every string that came from a document (paths, titles, reasons, quotes, cell values)
goes through :func:`esc` on its way into a page; the pages also forbid inline script
(service.PAGE_CSP), so an escaping slip still could not run a document's code.
"""
from __future__ import annotations

import hashlib
import mimetypes
import os
import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import PurePosixPath
from typing import BinaryIO
from urllib.parse import quote

from fastapi.responses import Response, StreamingResponse
from starlette.background import BackgroundTask

from citeline.library import ChunkInfo, DocumentInfo, Index
from citeline.pipeline.objects import open_object
from citeline.pipeline.prepare import changed, open_source, read_source
from citeline.query.locate import LocatorMap, line_locator
from citeline.web.pages import esc, layout
from citeline.schemas.document import CELL_SEPARATOR, Segment, segments_from_json
from citeline.schemas.errors import DocumentError
from citeline.schemas.locator import (
    ElementPath, KeyPath, MimePart, Page, SheetRange, Slide, TimeSpan, bounding_range, locator_from_dict,
)
from citeline.schemas.paths import is_remote, os_path
from citeline.schemas.settings import IndexSettings

MAX_SOURCE_BYTES = IndexSettings().max_bytes  # the indexer reads nothing larger either
STREAM_BYTES = 256 * 1024  # one read of a source being sent
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".text", ".rst", ".csv", ".tsv", ".html", ".htm")
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$", re.IGNORECASE)  # a unit is case-insensitive (RFC 9110 14.1)


class SourceUnavailable(KeyError):
    """The document's source file is gone, replaced by a link, or unreadable now."""


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
        span = byte_range(header, size) if header else None
        if span == UNSATISFIABLE:
            return Response(b"", 416, headers={**headers, "Content-Range": f"bytes */{size}"})
        partial = span is not None
        first, last = span if partial else (0, size - 1)
        if partial:
            headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        headers["Content-Length"] = str(last + 1 - first)
        owner = stack.pop_all()  # the stream closes the file when it ends; the task if it never starts
        return StreamingResponse(_read_span(handle, first, last + 1, owner), 206 if partial else 200,
                                 headers=headers, media_type=ctype, background=BackgroundTask(owner.close))


def _open_source(doc: DocumentInfo, stack: ExitStack) -> tuple[BinaryIO, int]:
    """The source opened as the indexer opens it (beneath its folder, no symlink), and its size.

    An object on S3 is opened for ranged reads: only the bytes sent are fetched (a 1-byte range
    downloaded the whole object).
    """
    if is_remote(doc.source):
        try:
            handle, info = stack.enter_context(open_object(doc.source, MAX_SOURCE_BYTES))
        except (DocumentError, OSError) as exc:
            raise SourceUnavailable(f"the source of document {doc.document_id} cannot be served: {exc}") from None
        return handle, int(info["size"])
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


UNSATISFIABLE = "unsatisfiable"


def byte_range(header: str, size: int) -> tuple[int, int] | str | None:
    """What one ``Range`` header asks of ``size`` bytes, as RFC 9110 (section 14) reads it: the
    inclusive (first, last) byte; ``UNSATISFIABLE`` (416) for a well-formed byte range that
    selects nothing; None (the whole file, 200) for a header to ignore: another unit, bad
    syntax, or several ranges (served whole: players ask for one at a time).

    Before, ``bytes=-0`` answered 206 with ``Content-Range: bytes 40782-40781/40782`` and every
    header it could not read was a 416.

    >>> byte_range("bytes=0-99", 1000), byte_range("bytes=900-", 1000), byte_range("bytes=-10", 1000)
    ((0, 99), (900, 999), (990, 999))
    >>> byte_range("bytes=1000-", 1000), byte_range("bytes=-0", 1000), byte_range("bytes=0-0", 0)
    ('unsatisfiable', 'unsatisfiable', 'unsatisfiable')
    >>> [byte_range(h, 1000) for h in ("bytes=5-1", "items=0-1", "bytes=0-1,4-5", "bytes=x")]
    [None, None, None, None]
    """
    match = _RANGE.match(header.strip())
    if not match or match.groups() == ("", ""):
        return None
    first, last = match.groups()
    if first == "":
        return (max(size - int(last), 0), size - 1) if int(last) > 0 and size > 0 else UNSATISFIABLE
    if last and int(last) < int(first):
        return None  # an invalid range-spec: the header is ignored
    start, end = int(first), min(int(last) if last else size - 1, size - 1)
    return (start, end) if start < size else UNSATISFIABLE


# ---- the source views ---------------------------------------------------------------------------


def source_href(doc: DocumentInfo) -> str:
    """The source's URL, ending in the file's own name: a browser's PDF viewer titles itself
    with the URL's last part, which was the document's hash."""
    return f"/sources/{doc.document_id}/{quote(PurePosixPath(doc.path).name or 'source')}"


def viewer_page(index: Index, doc: DocumentInfo, chunk: ChunkInfo, line: tuple[int, int] | None = None) -> str:
    """The source opened at the chunk: PDF page beside its quote, media span, one table of the
    sheet's header and cited rows, the slide laid out as a slide, or highlighted text.

    Nothing of the source is parsed here (a replaced workbook of millions of shared strings
    pinned the service): text, sheet ranges, slides and rows come from what the index stored;
    PDFs and media are the browser's to render. The page says when the source changed since it
    was indexed, or is gone. ``line``: the canonical range of the sentence or row that answered
    (the citation's ``highlight``), marked inside the chunk in a text document's or a sheet's view
    (``#line``); a PDF opens at the page that line is printed on.
    """
    stored = _stored(index, doc.document_id)
    first = locator_from_dict(chunk.locators[0]) if chunk.locators else None
    source = source_href(doc)
    name = doc.title or PurePosixPath(doc.path).name
    where = _where(first, chunk)
    if isinstance(first, Page):
        # a chunk that crosses pages opens where the answering line is printed
        opens = line_locator(*line, LocatorMap(segments_from_json(stored["segments"]))) if line else chunk.fragment
        body = (f"<div class=\"pdf-view\"><aside class=\"cited panel\" aria-labelledby=\"quote-heading\">"
                f"<h2 id=\"quote-heading\">Cited on {esc(where.lower())}</h2>{_quote(chunk)}</aside>"
                f"<iframe id=\"pdf\" src=\"{esc(source + opens)}\" title=\"{esc(name)}, {esc(where.lower())}\">"
                "</iframe></div>")
    elif isinstance(first, TimeSpan):
        spans = [locator_from_dict(d) for d in chunk.locators if d.get("kind") == "time"]
        start, end = min(s.start for s in spans), max(s.end for s in spans)
        tag = "video" if content_type(doc.path).startswith("video/") else "audio"
        body = (f"<{tag} id=\"player\" controls preload=\"auto\" data-start=\"{start:.2f}\" data-end=\"{end:.2f}\" "
                f"src=\"{esc(source + chunk.fragment)}\" aria-label=\"{esc(name)}, {esc(where)}\"></{tag}>"
                + _quote(chunk))
    elif isinstance(first, SheetRange):
        body = "".join(sheet_table(stored, sheet, chunk, line) for sheet in
                       dict.fromkeys(loc.sheet for loc in map(locator_from_dict, chunk.locators)
                                     if isinstance(loc, SheetRange)))
    elif isinstance(first, Slide):
        body = slide_view(stored, chunk)
    else:
        body = highlighted(stored["canonical"] or "", chunk.start, chunk.end, line)
    heading = (f"<div class=\"viewer-head\"><p><a href=\"/documents/{esc(doc.document_id)}\">{esc(doc.path)}</a></p>"
               f"<h1>{esc(name)}</h1><p class=\"where\" id=\"where\" data-fragment=\"{esc(chunk.fragment)}\">{esc(where)}</p></div>")
    notice = source_notice(doc, stored)
    notice = f"<p id=\"source-changed\" class=\"notice\">{esc(notice)}</p>" if notice else ""
    return layout(f"{name} — citeline", f"{heading}{notice}{body}", main_class="viewer")


def _where(first, chunk: ChunkInfo) -> str:
    """Where the chunk is, in words: "Page 3", "Slide 2", "0:12–0:31", the heading path."""
    locators = [locator_from_dict(d) for d in chunk.locators]
    if isinstance(first, Page):
        pages = sorted({loc.page for loc in locators if isinstance(loc, Page)})
        return f"Page {pages[0]}" if len(pages) == 1 else f"Pages {pages[0]}–{pages[-1]}"
    if isinstance(first, Slide):
        slides = sorted({loc.slide for loc in locators if isinstance(loc, Slide)})
        return f"Slide {slides[0]}" if len(slides) == 1 else f"Slides {slides[0]}–{slides[-1]}"
    if isinstance(first, TimeSpan):
        spans = [loc for loc in locators if isinstance(loc, TimeSpan)]
        return TimeSpan(min(s.start for s in spans), max(s.end for s in spans)).label()
    if isinstance(first, SheetRange):
        ranges = [loc for loc in locators if isinstance(loc, SheetRange) and loc.sheet == first.sheet]
        cells = bounding_range([r for r in ranges if not r.header] or ranges).cells
        return f"Sheet {first.sheet.strip() or first.sheet}, cells {cells}"
    if isinstance(first, (KeyPath, ElementPath, MimePart)):
        return first.label()  # "/items/2", "/factbook/country[2]", "attachment notes.txt"
    return chunk.section or "Text"


_STORED = ("canonical", "segments", "sha256", "size", "mtime_ns", "inode", "device")


def _stored(index: Index, document_id: str) -> dict:
    """What the index holds of the document: its canonical text, locator map, hash and stat."""
    return index.stored(document_id, _STORED)


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
    """The chunk's text as paragraphs: a PDF's or a transcript's line breaks are where its
    column or its caption ended, not where a reader wants them in a narrower box."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", chunk.content) if p.strip()]
    return "<blockquote id=\"quote\">" + "".join(f"<p>{esc(p)}</p>" for p in paragraphs) + "</blockquote>"


def highlighted(canonical: str, start: int, end: int, line: tuple[int, int] | None = None) -> str:
    """The canonical text with ``[start:end]`` marked; the link's ``#cited`` scrolls to it. A
    ``line`` inside that range is marked again within it (``#line`` scrolls there); one outside
    it (a link made for another version of the chunk) is ignored.

    >>> highlighted("ab. cd. ef", 0, 7, (4, 7))
    '<pre id="text" tabindex="0"><mark id="cited">ab. <mark id="line" class="line">cd.</mark></mark> ef</pre>'
    """
    if line is not None and start <= line[0] < line[1] <= end:
        cited = (f"{esc(canonical[start:line[0]])}<mark id=\"line\" class=\"line\">{esc(canonical[line[0]:line[1]])}</mark>"
                 f"{esc(canonical[line[1]:end])}")
    else:
        cited = esc(canonical[start:end])
    return f"<pre id=\"text\" tabindex=\"0\">{esc(canonical[:start])}<mark id=\"cited\">{cited}</mark>{esc(canonical[end:])}</pre>"


def sheet_table(stored: dict, sheet: str, chunk: ChunkInfo, line: tuple[int, int] | None = None) -> str:
    """One table of the cited cells of ``sheet``: title lines as its caption, the header rows
    as its head, the cited data rows under them, cells in the same columns; the data row that
    shares a character with ``line`` (canonical offsets: the answering row) marked ``#line``.

    Rows are the stored segments' lines as the indexer rendered them (cells joined by
    ``CELL_SEPARATOR``), cut to the chunk: exactly the cited cells, nothing of the file re-read.
    A row's sheet row number is shown where the segment's lines map one to one onto its rows.
    """
    text = stored["canonical"] or ""
    titles: list[str] = []
    heads: list[tuple[str, list[str]]] = []
    rows: list[tuple[str, list[str], bool]] = []
    ranges: list[SheetRange] = []
    for seg in sheet_segments(stored["segments"], chunk):
        if seg.locator.sheet != sheet:
            continue
        start, end = max(seg.start, chunk.start), min(seg.end, chunk.end)
        lines = text[start:end].split("\n")
        numbers = seg.locator.row_numbers(len(lines)) if (start, end) == (seg.start, seg.end) else None
        at = start
        for i, text_line in enumerate(lines):
            cells = text_line.split(CELL_SEPARATOR)
            number = str(numbers[i]) if numbers else ""
            if seg.locator.header and len(cells) == 1 and not heads:
                titles.append(text_line)
            elif seg.locator.header:
                heads.append((number, cells))
            elif text_line:
                answers = line is not None and at < line[1] and line[0] < at + len(text_line)
                rows.append((number, cells, answers))
            at += len(text_line) + 1
        if not seg.locator.header:
            ranges.append(seg.locator)
    width = max((len(c) for _, c in heads + [(n, c) for n, c, _ in rows]), default=1)

    def row(number: str, cells: list[str], tag: str, klass: str = "") -> str:
        padded = cells + [""] * (width - len(cells))
        attrs = " scope=\"col\"" if tag == "th" else ""
        tds = "".join(f"<{tag}{attrs}>{esc(c)}</{tag}>" for c in padded)
        return f"<tr{klass}><th class=\"rownum\" scope=\"row\">{esc(number)}</th>{tds}</tr>"

    first_answer = next((i for i, (_, _, answers) in enumerate(rows) if answers), None)

    where = bounding_range(ranges).cells if ranges else ""
    caption = f"Sheet {esc(sheet.strip() or sheet)}" + (f", cells {esc(where)}" if where else "")
    if titles:
        caption += "".join(f"<br><span class=\"muted\">{esc(t)}</span>" for t in titles)
    head = "".join(row(n, c, "th") for n, c in heads)
    body = "".join(row(n, c, "td", " class=\"cited-row line-row\" id=\"line\"" if i == first_answer else
                       " class=\"cited-row line-row\"" if answers else " class=\"cited-row\"")
                   for i, (n, c, answers) in enumerate(rows))
    return (f"<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Sheet {esc(sheet)}\">"
            f"<table class=\"range\" id=\"cited\" data-sheet=\"{esc(sheet)}\" data-range=\"{esc(where)}\">"
            f"<caption>{caption}</caption><thead>{head}</thead><tbody>{body}</tbody></table></div>")


def sheet_segments(segments_json: str, chunk: ChunkInfo) -> list[Segment]:
    """The stored segments of sheet cells that overlap the chunk, in reading order."""
    return [seg for seg in segments_from_json(segments_json)
            if isinstance(seg.locator, SheetRange) and seg.start < chunk.end and seg.end > chunk.start]


def slide_view(stored: dict, chunk: ChunkInfo) -> str:
    """The cited slide laid out as a slide: its title, its text (bullets indented, tables as
    tables), its speaker notes under it; the lines the chunk quotes are marked."""
    text = stored["canonical"] or ""
    out = []
    for seg in segments_from_json(stored["segments"]):
        if not (isinstance(seg.locator, Slide) and seg.start < chunk.end and seg.end > chunk.start):
            continue
        title, body, notes = "", [], []
        first_mark = not out
        for block_start, block in _blocks(text, seg.start, seg.end):
            cited = block_start < chunk.end and block_start + len(block) > chunk.start
            if block.startswith("## ") and not title:
                title = block[3:]
            elif block.startswith("Notes: "):
                notes.append(_marked(block[len("Notes: "):], cited))
            elif all(CELL_SEPARATOR in line for line in block.splitlines()):
                cells = [line.split(CELL_SEPARATOR) for line in block.splitlines()]
                head = "".join(f"<th scope=\"col\">{esc(c)}</th>" for c in cells[0])
                rows = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in cells[1:])
                table = f"<div class=\"scroll\"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>"
                body.append(f"<mark class=\"block\">{table}</mark>" if cited else table)
            else:
                items = "".join(f"<li class=\"sub\">{_marked(line[2:], cited)}</li>" if line.startswith("- ")
                                else f"<li>{_marked(line, cited)}</li>" for line in block.splitlines())
                body.append(f"<ul>{items}</ul>")
        anchor = " id=\"cited\"" if first_mark else ""
        notes_html = (f"<aside class=\"slide-notes panel\"><h3>Speaker notes</h3><p>{'<br>'.join(notes)}</p></aside>"
                      if notes else "")
        out.append(f"<section class=\"slide\"{anchor} aria-label=\"Slide {seg.locator.slide}\" data-slide=\"{seg.locator.slide}\">"
                   f"<h2>{esc(title or f'Slide {seg.locator.slide}')}</h2><div class=\"body\">{''.join(body)}</div></section>"
                   f"{notes_html}")
    return "".join(out) or highlighted(text, chunk.start, chunk.end)


def _blocks(text: str, start: int, end: int) -> list[tuple[int, str]]:
    """The paragraphs (blank-line separated) of ``text[start:end]`` with their offsets.

    >>> _blocks("## T\\n\\nA\\nB\\n\\nNotes: n", 0, 19)
    [(0, '## T'), (6, 'A\\nB'), (11, 'Notes: n')]
    """
    out, at = [], start
    for block in text[start:end].split("\n\n"):
        if block.strip():
            out.append((at, block))
        at += len(block) + 2
    return out


def _marked(line: str, cited: bool) -> str:
    return f"<mark>{esc(line)}</mark>" if cited else esc(line)
