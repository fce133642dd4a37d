"""The HTML pages of ``citeline api`` a person reads: the frame every page shares, the ask page,
the library, a document's page and the page a stale link lands on.

Every string that came from a document (paths, titles, reasons, notes, quotes) goes through
:func:`esc`; pages also run no inline script (service.PAGE_CSP). Library filters are a plain
GET form read here, so the page works with the keyboard alone and without script.
"""
from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import quote, urlencode

from citeline.library import ChunkInfo, DocumentInfo
from citeline.schemas.status import NOT_A_DOCUMENT, DocStatus

LIBRARY_PAGE = 50  # documents per library page
CHUNKS_PAGE = 100  # chunks per document page
INDEX_STAMP = ("embed_model", "embed_dim", "strategy", "pipeline_version")
STATUSES = ("failed", "indexed", "not-a-document")
# What a status reads as on the page: a file that is no document was skipped, not failed.
SHOWN = {"not-a-document": "skipped"}
NO_TYPE = "none"  # the type filter's value for a file without an extension
_NAV = (("/", "Ask"), ("/library", "Library"), ("/docs", "API"))


def esc(text) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def layout(title: str, body: str, current: str = "", main_class: str = "") -> str:
    """A page: the top bar (``current`` marks its link), ``body`` as the main content, the script."""
    here = ' aria-current="page"'
    links = "".join(f"<a href=\"{href}\"{here if href == current else ''}>{name}</a>" for href, name in _NAV)
    klass = f" class=\"{main_class}\"" if main_class else ""
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><link rel=\"stylesheet\" href=\"/static/style.css\"></head>"
        "<body><a class=\"skip\" href=\"#main\">Skip to content</a>"
        "<header class=\"top\"><div class=\"inner\"><a class=\"brand\" href=\"/\">cite<span>line</span></a>"
        f"<nav aria-label=\"Main\">{links}</nav></div></header>"
        f"<main id=\"main\" tabindex=\"-1\"{klass}>{body}</main><script src=\"/static/ask.js\"></script></body></html>\n"
    )


def view_href(chunk_id: str, document_id: str) -> str:
    """Where a chunk opens at its place; the document rides along, so a link kept past a
    re-index can still name the document it was in (:func:`gone_page`)."""
    return f"/view/{quote(chunk_id)}?doc={quote(document_id)}#cited"


# ---- ask ----------------------------------------------------------------------------------------


def ask_page(can_generate: bool) -> str:
    """The question box; ask.js fills in the answer, the sources or the refusal.

    ``can_generate``: a chat endpoint is configured, so the page offers (and ticks) writing an answer.
    """
    generate = ("<label class=\"check\"><input id=\"generate\" type=\"checkbox\" checked> "
                "Write an answer from the sources (language model)</label>" if can_generate else "")
    return layout("Ask — citeline", f"""
<h1>Ask your documents</h1>
<form id="ask" class="ask-form" role="search" action="/" method="get">
  <label class="big" for="question">Your question</label>
  <div class="ask-row">
    <input id="question" name="q" type="search" maxlength="2000" required autocomplete="off" enterkeyhint="search"
      placeholder="For example: when does the committee meet?" autofocus>
    <button id="ask-button" class="primary" type="submit">Ask</button>
  </div>
  <div class="ask-options">{generate}<span class="muted">Every answer cites the exact place it comes from.</span></div>
  <section id="recent" hidden aria-labelledby="recent-heading"><h2 id="recent-heading">Recent questions
    (kept in this browser only)</h2><ul id="recent-list"></ul>
    <button type="button" id="recent-clear" class="link">Clear recent questions</button></section>
</form>
<p id="status" role="status" aria-live="polite"></p>
<section id="answer" hidden aria-labelledby="answer-heading"><h2 id="answer-heading">Answer</h2>
  <div id="answer-text" class="answer"></div><p id="checks" class="muted"></p></section>
<section id="refusal" class="refusal" hidden aria-labelledby="refusal-message"><p id="refusal-message"></p>
  <details id="refusal-why"><summary>Why no answer?</summary><p id="refusal-detail"></p></details></section>
<section id="results" hidden aria-labelledby="sources-heading"><h2 id="sources-heading">Sources</h2>
  <ol id="sources" class="cards"></ol></section>
<section id="closest" hidden aria-labelledby="closest-heading"><h2 id="closest-heading">Not an answer: the closest passages</h2>
  <p id="closest-note" class="muted"></p><ol id="closest-list" class="cards"></ol></section>""", current="/")


# ---- library ------------------------------------------------------------------------------------


def kind_of(path: str) -> str:
    """The type a person filters by: the file's extension, lower case.

    >>> kind_of("a/Report.PDF"), kind_of("Makefile")
    ('pdf', 'none')
    """
    suffix = PurePosixPath(path).suffix.lower().lstrip(".")
    return suffix or NO_TYPE


@dataclass(frozen=True)
class LibraryQuery:
    """What the library's form asks for: a name search, a status, a type and a page (from 1)."""

    q: str = ""
    status: str = ""
    type: str = ""
    page: int = 1

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> "LibraryQuery":
        """Unknown or malformed values fall back to "all" and page 1: a filter form never errors.

        >>> LibraryQuery.parse({"q": " Report ", "status": "bogus", "page": "x"})
        LibraryQuery(q='Report', status='', type='', page=1)
        """
        status = params.get("status", "")
        try:
            page = max(int(params.get("page", "1")), 1)
        except ValueError:
            page = 1
        return cls(params.get("q", "").strip()[:200], status if status in STATUSES else "",
                   params.get("type", "").strip().lower()[:20], page)

    def keeps(self, doc: DocumentInfo) -> bool:
        if self.status and doc.status != self.status:
            return False
        if self.type and kind_of(doc.path) != self.type:
            return False
        needle = self.q.casefold()
        return not needle or needle in doc.path.casefold() or needle in (doc.title or "").casefold()

    def href(self, **changes) -> str:
        values = {"q": self.q, "status": self.status, "type": self.type, "page": self.page, **changes}
        params = {k: v for k, v in values.items() if v not in ("", None) and not (k == "page" and v == 1)}
        return "/library" + (f"?{urlencode(params)}" if params else "")


def stamp_differences(doc: DocumentInfo, index_stamp: Mapping[str, object], versions: Mapping[str, str]) -> list[str]:
    """What a document was made with that the index (or today's extractor) is not, as phrases.

    >>> d = DocumentInfo("i", "a.pdf", "/a.pdf", "/", "", "indexed", None, None, 1, 0, 1, "",
    ...     (("embed_model", "m"), ("embed_dim", 384), ("strategy", "A"), ("pipeline_version", "1"),
    ...      ("extractor", "pdf"), ("extractor_version", "8")))
    >>> stamp_differences(d, {"embed_model": "m", "embed_dim": 384, "strategy": "E", "pipeline_version": "1"}, {"pdf": "9"})
    ['strategy A (index: E)', 'extractor pdf 8 (current: 9)']
    """
    stamps = dict(doc.stamps)
    out = [f"{key.replace('_', ' ')} {stamps[key]} (index: {index_stamp[key]})" for key in INDEX_STAMP
           if stamps.get(key) is not None and key in index_stamp and stamps[key] != index_stamp[key]]
    name, version = stamps.get("extractor"), stamps.get("extractor_version")
    if name and version is not None and name in versions and str(version) != str(versions[name]):
        out.append(f"extractor {name} {version} (current: {versions[name]})")
    return out


def index_stamp_line(index_stamp: Mapping[str, object]) -> str:
    if not index_stamp:
        return ""
    return (f"<p class=\"stamps\">Every document is indexed with <code>{esc(index_stamp.get('embed_model'))}</code> "
            f"({esc(index_stamp.get('embed_dim'))}-d), chunk strategy <code>{esc(index_stamp.get('strategy'))}</code>, "
            f"pipeline <code>{esc(index_stamp.get('pipeline_version'))}</code>, unless a row says otherwise.</p>")


def library_page(docs: Sequence[DocumentInfo], query: LibraryQuery, index_stamp: Mapping[str, object],
                 versions: Mapping[str, str]) -> str:
    """The documents the query keeps (failed first, as ``docs`` come), one page of them, with a
    search box, status and type filters; each row links to the document's page."""
    kept = [d for d in docs if query.keeps(d)]
    pages = max(math.ceil(len(kept) / LIBRARY_PAGE), 1)
    page = min(query.page, pages)
    shown = kept[(page - 1) * LIBRARY_PAGE: page * LIBRARY_PAGE]
    counts = Counter(d.status for d in docs)
    types = sorted({kind_of(d.path) for d in docs})
    rows = "".join(_library_row(d, index_stamp, versions) for d in shown)
    status_options = "".join(
        f"<option value=\"{s}\"{' selected' if query.status == s else ''}>{SHOWN.get(s, s)} ({counts.get(s, 0)})</option>"
        for s in STATUSES)
    type_options = "".join(f"<option value=\"{esc(t)}\"{' selected' if query.type == t else ''}>{esc(t)}</option>"
                           for t in types)
    table = (f"<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Documents\"><table id=\"documents\">"
             "<thead><tr><th scope=\"col\">Document</th><th scope=\"col\">Type</th><th scope=\"col\">Status</th>"
             "<th scope=\"col\">Chunks</th><th scope=\"col\">Details</th></tr></thead>"
             f"<tbody>{rows}</tbody></table></div>" if shown else
             "<p id=\"no-documents\" class=\"panel\">No document matches these filters.</p>")
    pager = ""
    if pages > 1:
        prev = (f"<a rel=\"prev\" href=\"{esc(query.href(page=page - 1))}\">Previous</a>" if page > 1 else "")
        nxt = (f"<a rel=\"next\" href=\"{esc(query.href(page=page + 1))}\">Next</a>" if page < pages else "")
        pager = f"<nav class=\"pager\" aria-label=\"Pages\">{prev}<span>Page {page} of {pages}</span>{nxt}</nav>"
    showing = (f"{len(kept)} of {len(docs)} documents match" if len(kept) != len(docs) else f"{len(docs)} documents")
    return layout("Library — citeline", f"""
<h1>Library</h1>
<p class="summary"><span id="library-count">{esc(showing)}</span><span>{counts.get('indexed', 0)} indexed</span>
<span>{counts.get('failed', 0)} failed</span>
<span>{counts.get('not-a-document', 0)} skipped as not documents</span></p>
{index_stamp_line(index_stamp)}
<form class="filters" method="get" action="/library" role="search" aria-label="Filter documents">
  <label>Name <input type="search" name="q" value="{esc(query.q)}" placeholder="Search by name"></label>
  <label>Status <select name="status"><option value="">all</option>{status_options}</select></label>
  <label>Type <select name="type"><option value="">all</option>{type_options}</select></label>
  <button type="submit" class="primary">Filter</button>
  {'<a href="/library">Clear filters</a>' if query != LibraryQuery() else ''}
</form>
{table}{pager}""", current="/library")


def badge(status: str) -> str:
    """A document's status as a badge: styled by its stored value, worded as people say it."""
    return f"<span class=\"badge {esc(status)}\">{esc(SHOWN.get(status, status))}</span>"


def _library_row(doc: DocumentInfo, index_stamp: Mapping[str, object], versions: Mapping[str, str]) -> str:
    title = (f"<div class=\"note\">{esc(doc.title)}</div>"
             if doc.title and doc.title != PurePosixPath(doc.path).stem else "")
    details = []
    if doc.failed:
        stage = f" at {esc(doc.stage)}" if doc.stage else ""
        details.append(f"<div class=\"reason\">Failed{stage}: {esc(doc.reason or 'no reason recorded')}</div>")
    elif doc.status == DocStatus.NOT_DOCUMENT:
        reason = doc.reason or NOT_A_DOCUMENT
        details.append(f"<div class=\"note\">{esc(reason[:1].upper() + reason[1:])}</div>")
    differs = stamp_differences(doc, index_stamp, versions)
    if differs:
        details.append(f"<div class=\"note\">Made with {esc(', '.join(differs))}</div>")
    notes = [n for n in doc.notes.splitlines() if n.strip()]
    if notes:
        more = f" and {len(notes) - 1} more" if len(notes) > 1 else ""
        details.append(f"<div class=\"note\">{esc(notes[0])}{esc(more)}</div>")
    return (f"<tr class=\"{esc(doc.status)}\" data-id=\"{esc(doc.document_id)}\">"
            f"<td class=\"name\"><a class=\"doc-link\" href=\"/documents/{esc(doc.document_id)}\">{esc(doc.path)}</a>{title}</td>"
            f"<td class=\"short\" data-label=\"Type\">{esc(kind_of(doc.path))}</td>"
            f"<td class=\"short\" data-label=\"Status\">{badge(doc.status)}</td>"
            f"<td class=\"short\" data-label=\"Chunks\">{doc.chunk_count}</td>"
            f"<td class=\"details\">{''.join(details)}</td></tr>")


# ---- one document -------------------------------------------------------------------------------


def document_page(doc: DocumentInfo, chunks: Sequence[ChunkInfo], page: int, index_stamp: Mapping[str, object],
                  versions: Mapping[str, str]) -> str:
    """A document: status, reason, notes, chunk count, what made it, and its chunks with their
    locators, each opening at its place (``CHUNKS_PAGE`` a page)."""
    pages = max(math.ceil(len(chunks) / CHUNKS_PAGE), 1)
    page = min(max(page, 1), pages)
    shown = chunks[(page - 1) * CHUNKS_PAGE: page * CHUNKS_PAGE]
    stamps = dict(doc.stamps)
    facts = [("Status", badge(doc.status)),
             ("Path", esc(doc.path))]
    if doc.title:
        facts.append(("Title", esc(doc.title)))
    if doc.failed or doc.status == DocStatus.NOT_DOCUMENT:
        facts.append(("Reason", f"<span id=\"reason\" class=\"reason\">{esc(doc.reason or 'no reason recorded')}"
                                f"{' (at ' + esc(doc.stage) + ')' if doc.stage else ''}</span>"))
    facts.append(("Chunks", str(doc.chunk_count)))
    if stamps.get("extractor"):
        facts.append(("Read by", f"{esc(stamps['extractor'])} {esc(stamps.get('extractor_version') or '')}"))
    differs = stamp_differences(doc, index_stamp, versions)
    if differs:
        facts.append(("Differs from the index", esc(", ".join(differs))))
    notes = [n for n in doc.notes.splitlines() if n.strip()]
    if notes:
        facts.append(("Notes", "<ul id=\"notes\" class=\"notes\">" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>"))
    facts.append(("Source", f"<a href=\"/sources/{esc(doc.document_id)}\">the original file</a>"))
    dl = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    items = "".join(
        f"<li id=\"chunk-{c.ordinal}\"><div class=\"card-head\"><span class=\"num\">{c.ordinal + 1}</span>"
        f"<h3 class=\"where\">{esc(c.label)}</h3></div>"
        f"<p class=\"muted\"><code>{esc(c.fragment)}</code> · characters {c.start}–{c.end}</p>"
        f"<blockquote class=\"quote\">{esc(c.content[:400])}{'…' if len(c.content) > 400 else ''}</blockquote>"
        f"<a class=\"open\" href=\"{esc(view_href(c.chunk_id, doc.document_id))}\">Open at this place</a></li>"
        for c in shown)
    pager = ""
    if pages > 1:
        base = f"/documents/{doc.document_id}"
        prev = f"<a rel=\"prev\" href=\"{base}?page={page - 1}\">Previous</a>" if page > 1 else ""
        nxt = f"<a rel=\"next\" href=\"{base}?page={page + 1}\">Next</a>" if page < pages else ""
        pager = f"<nav class=\"pager\" aria-label=\"Chunk pages\">{prev}<span>Page {page} of {pages}</span>{nxt}</nav>"
    chunks_html = (f"<ol class=\"chunks\" id=\"chunks\">{items}</ol>{pager}" if shown else
                   "<p class=\"panel\">This document has no chunks: nothing of it can be cited.</p>")
    name = doc.title or doc.path
    return layout(f"{name} — citeline", f"""
<p><a href="/library">← Library</a></p>
<h1>{esc(name)}</h1>
<section class="panel" aria-label="About this document"><dl class="facts" id="facts">{dl}</dl></section>
<h2>Chunks</h2>{chunks_html}""", current="/library")


# ---- a stale link -------------------------------------------------------------------------------


def gone_page(chunk_id: str, doc: DocumentInfo | None) -> str:
    """What an unknown or replaced chunk's link shows: the document changed, and where it is now."""
    if doc is not None:
        name = doc.title or doc.path
        body = (f"<p>The passage this link pointed to is no longer in <strong>{esc(name)}</strong>: the document "
                "changed and was indexed again (or its chunking changed) after the link was made.</p>"
                "<div class=\"actions\">"
                f"<a class=\"button primary\" id=\"current-view\" href=\"/documents/{esc(doc.document_id)}\">"
                "See the document as it is now</a><a class=\"button\" href=\"/\">Ask again</a></div>")
    else:
        body = ("<p>The passage this link pointed to is not in the index any more: its document changed and was "
                "indexed again, or it was removed.</p><div class=\"actions\">"
                "<a class=\"button primary\" href=\"/library\">Find the document in the library</a>"
                "<a class=\"button\" href=\"/\">Ask again</a></div>")
    return layout("Passage not found — citeline", f"""
<div class="gone panel"><h1>This passage has changed</h1>{body}
<p class="muted">Link to chunk <code>{esc(chunk_id)}</code>.</p></div>""")


def not_found_page(message: str) -> str:
    return layout("Not found — citeline", f"""
<div class="gone panel"><h1>Not found</h1><p>{esc(message)}</p>
<div class="actions"><a class="button primary" href="/library">Library</a><a class="button" href="/">Ask</a></div></div>""")
