"""``citeline api``: the Python API over HTTP (FastAPI), the ask page and the source viewers.

One ``Index`` per process: the model is loaded once at start, and a background thread
re-opens the index when a writer commits (``Index.refresh``), so a query during a sync
sees the old or the new version of a document, never a mix. Errors are JSON
``{"error": {"status", "type", "message"}}`` with the status saying whose fault it is.

Nothing a request names is used as a path: ``/sources/{document_id}`` looks the id up
in the documents table and reads the recorded source beneath its synced folder with
no symlink on the way (``pipeline.prepare.read_source``), or answers 404.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath
from contextlib import asynccontextmanager
from importlib import resources
from typing import Literal

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from citeline.library import Index
from citeline.query.answer_check import check_answer
from citeline.query.llm import chat_client
from citeline.query.thresholds import Uncalibrated
from citeline.schemas.errors import CitelineError, IndexMismatch, IndexUnavailable, LLMError, NoIndex
from citeline.schemas.retrieval import ASK_K, DEFAULT_RETRIEVER, RETRIEVERS, Filters
from citeline.web import pages, views

MAX_BODY = 16 * 1024  # bytes of a request body: a question and a few options
MAX_QUESTION = 2000  # characters
MAX_ASK_K = 20
MAX_SEARCH_K = 100
MAX_FILTERS = 20  # values of one filter kind in a request
ID = re.compile(r"^[0-9a-f]{32}$")  # document and chunk ids (pipeline/prepare.py)
OPEN_PATHS = ("/health",)  # the only path a token does not guard
TOKEN_COOKIE = "citeline_token"
STATIC = {"ask.js": "text/javascript", "style.css": "text/css"}
# Pages run only the scripts this server ships: an escaping bug still could not run a
# document's <script> or inline handler.
PAGE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self'; "
            "frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'")

# Swagger UI's script and style as fastapi-offline ships them: /docs works with no network.
DOCS_ASSETS = "/static/docs"
SWAGGER_PACKAGE = ("fastapi_offline", "static")
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)

Retriever = Literal[RETRIEVERS]  # type: ignore[valid-type]


class AskRequest(BaseModel):
    """The body of ``POST /ask``; ``generate`` streams the answer as server-sent events."""

    model_config = ConfigDict(extra="forbid")
    # ``query``, as in the answer this returns, ``citeline ask --json`` and ``Index.ask``;
    # ``question`` is the older name of the same field, still accepted.
    query: str = Field(min_length=1, max_length=MAX_QUESTION, validation_alias=AliasChoices("query", "question"))
    k: int = Field(ASK_K, ge=1, le=MAX_ASK_K)
    retriever: Retriever = DEFAULT_RETRIEVER
    rerank: bool = False
    cut: float | None = Field(None, ge=0, le=2)
    # Refuse a question that names what no passage mentions (``ask --no-name-check`` turns it off).
    check_names: bool = True
    generate: bool = False
    # Query-time filters, as ``citeline ask --path/--type/--since`` (docs/query.md, "Filters").
    path: list[str] = Field(default_factory=list, max_length=MAX_FILTERS)
    type: list[str] = Field(default_factory=list, max_length=MAX_FILTERS)
    since: str | None = Field(None, max_length=64)

    def filters(self) -> Filters:
        """Raises ValueError (400) for an empty path, a bad type or an unparsable date."""
        return Filters.parse(self.path, self.type, self.since)


def create_app(index: Index, token: str | None = None, poll_s: float = 1.0, warm: bool | None = None,
               allowed_hosts: Sequence[str] = ()) -> FastAPI:
    """The service over ``index``.

    Args:
        index: the index to serve (its model is loaded here if the index exists).
        token: when set, every request but ``/health`` needs ``Authorization: Bearer <token>``
            (or the cookie the page sets after ``/?token=<token>``).
        allowed_hosts: the names (``Host:`` without its port) requests may be addressed to besides
            the loopback ones; without a token only those are answered, with one and none given, any.
        poll_s: how often to look for a writer's commit; 0 never looks.
        warm: encode the word-pieces of chunks the index stores no vectors for, in the
            background, so a warm ask reranks from memory (default: on unless
            ``CITELINE_WARM_RERANK=0``; :func:`warm_reranker`).
    """
    stop = threading.Event()
    if warm is None:
        warm = os.environ.get(WARM_ENV, "1") != "0"

    failure: dict[str, str] = {}  # why the last re-open failed (/health says it)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        watcher = threading.Thread(target=_watch, args=(index, poll_s, stop, failure), daemon=True,
                                   name="citeline-refresh")
        if poll_s > 0:
            watcher.start()
        if warm:
            threading.Thread(target=warm_reranker, args=(index, stop), daemon=True, name="citeline-warm").start()
        yield
        stop.set()

    app = FastAPI(title="citeline", summary="Ask an index; every answer cites the exact place.",
                  lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.index = index
    _index_gone(app, index)  # before _guard: the token is checked first (middleware runs last-added first)
    _guard(app, token)
    _hosts(app, token, allowed_hosts)  # last added, so first to run: before the token and the body
    _errors(app)
    _json_routes(app, index, failure)
    _page_routes(app, index)
    _docs_routes(app)
    try:
        index.snapshot()  # the model loads now, not on the first question
    except IndexMismatch:
        pass  # no index yet (503) or another model's (409): each request says so
    return app


WARM_ENV = "CITELINE_WARM_RERANK"


def warm_reranker(index: Index, stop: threading.Event) -> int:
    """Encode the word-pieces of every chunk the index stores none for into the snapshot's
    MaxSim cache (query/rerank.py), a few at a time, while the service answers.

    Without stored vectors (``citeline index --token-vectors``, ~80 KiB a chunk on disk) each
    ask encoded its up to 100 candidates: 3.9-4.3 s a page ask on 2,100 chunks. Returns how many chunks were encoded; a failure only leaves asks slower.
    """
    from citeline.query.rerank import MaxSimReranker
    from citeline.runtime.log import get_logger

    try:
        snap = index.snapshot()
    except IndexMismatch:  # no index yet, or another model's: nothing to warm
        return 0
    try:
        from citeline.index.tokens import TokenVectors

        searcher = snap.searcher
        reranker = searcher.default_reranker()
        if not isinstance(reranker, MaxSimReranker):
            return 0
        started = time.perf_counter()
        # the reader has no token table when none is stored: every chunk is then "missing"
        tokens = searcher.reader.tokens or TokenVectors(searcher.store, searcher.stamp)
        if tokens.exists() and tokens.count() >= searcher.store.count_chunks(table=snap.table):
            # Every chunk's vectors are stored, as a finished run leaves them (row counts: no scan).
            # Listing the missing ones read every id of both tables, beside the first questions
            # after a start (seconds at 100k chunks); a chunk a killed run left without vectors
            # is still scored, its word pieces encoded when it is a candidate.
            return 0
        texts = [text for _, text in tokens.missing()]
        done = reranker.warm(texts, stop=stop)
        get_logger(service="api").info("api.reranker_warm", chunks=done, missing=len(texts),
                                       seconds=round(time.perf_counter() - started, 1))
        return done
    except Exception as exc:  # noqa: BLE001 - warming is an optimisation: asks encode on the fly
        get_logger(service="api").warning("api.reranker_warm_failed", reason=str(exc))
        return 0


def _watch(index: Index, poll_s: float, stop: threading.Event, failure: dict[str, str]) -> None:
    """Re-open the index as writers commit, following a re-index's switch, and hold the reader
    lease that keeps ``gc`` from dropping the table served (index/readers.py)."""
    from citeline.index.readers import ReaderLease
    from citeline.runtime.log import get_logger

    lease = ReaderLease(index.uri)
    try:
        while not stop.wait(poll_s):
            try:
                if index.refresh():
                    failure.clear()
                    get_logger(service="api").info("api.reopened", uri=index.uri, model=index.model)
                    if os.environ.get(WARM_ENV, "1") != "0":
                        threading.Thread(target=warm_reranker, args=(index, stop), daemon=True).start()
            except Exception as exc:  # noqa: BLE001 - no snapshot is served: each query says why
                failure["reason"] = str(exc)
                get_logger(service="api").warning("api.reopen_failed", reason=str(exc))
            served = index.served()
            try:
                lease.hold(served.table if served is not None else None)
            except OSError as exc:  # an unwritable index folder: gc may then drop what is served
                get_logger(service="api").warning("api.reader_lease_failed", reason=str(exc))
    finally:
        lease.release()


# ---- middleware: size bound and token ------------------------------------------------


def _guard(app: FastAPI, token: str | None) -> None:
    @app.middleware("http")
    async def guard(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return _error(413, "TooLarge", f"request bodies are limited to {MAX_BODY} bytes")
        if request.headers.get("transfer-encoding", "").lower() == "chunked":
            return _error(411, "LengthRequired", "send a Content-Length")
        if token and request.url.path not in OPEN_PATHS and not _authorised(request, token):
            if request.url.path == "/" and _same(request.query_params.get("token", ""), token):
                response = await call_next(request)
                response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
                return response
            return _error(401, "Unauthorized", "send Authorization: Bearer <token>",
                          headers={"WWW-Authenticate": "Bearer"})
        # Server-Timing: the service's own time until the response starts, so a client (and
        # bench/http_latency.py) can tell it from what the connection and the client add.
        started = time.perf_counter()
        response = await call_next(request)
        response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
        return response


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _hosts(app: FastAPI, token: str | None, allowed: Sequence[str]) -> None:
    """Answer only requests addressed to this service's own names: 400 for any other ``Host``.

    Without a token, a page on ``http://attacker.example:PORT`` whose name the attacker points
    at 127.0.0.1 (DNS rebinding) is same-origin with the service and read every document;
    the browser still sends the attacker's name as ``Host``.
    """
    names = tuple(h.lower() for h in allowed)
    if token and not names:
        return  # every request but /health carries the token: any name the operator serves it under

    @app.middleware("http")
    async def hosts(request: Request, call_next):
        if not host_allowed(request.headers.get("host", ""), LOOPBACK_NAMES + names):
            return _error(400, "BadHost", "this service answers only requests addressed to its own name "
                                          "(127.0.0.1, localhost, [::1], or one given with --allowed-host)")
        return await call_next(request)


def host_allowed(header: str, names: Sequence[str]) -> bool:
    """Whether a ``Host`` header names one of ``names``, with any port or none.

    >>> [host_allowed(h, LOOPBACK_NAMES) for h in ("127.0.0.1:8000", "localhost", "[::1]:80", "LOCALHOST:1")]
    [True, True, True, True]
    >>> [host_allowed(h, LOOPBACK_NAMES)
    ...  for h in ("attacker.test:8000", "", "127.0.0.1.evil", "localhost:x", "a@localhost")]
    [False, False, False, False, False]
    """
    host, port = header.lower(), ""
    if not host.endswith("]") and ":" in host:
        host, _, port = host.rpartition(":")
        if not port.isdigit():
            return False
    return host in names


# Paths that never read the index: served whatever became of it.
NO_INDEX_PATHS = ("/", "/favicon.ico", "/docs", "/openapi.json")


def _index_gone(app: FastAPI, index: Index) -> None:
    """A local index folder deleted (or unmounted) while served: 503 "IndexGone" on every path
    that reads it, and /health not ready.

    The open LanceDB handles kept answering some searches from what they had cached while
    the documents, chunks, views and sources of those very answers failed; an answer whose
    citations cannot be opened is not served. Seen once, the index is "gone" when its folder
    no longer holds it; one that never existed stays "no index yet" (NoIndex).
    """
    meta = _local_meta(index.uri)
    seen = {"index": False}

    @app.middleware("http")
    async def gone(request: Request, call_next):
        path = request.url.path
        if meta is None or path in NO_INDEX_PATHS or path.startswith("/static/"):
            return await call_next(request)
        if meta.is_dir():
            seen["index"] = True
            return await call_next(request)
        if not seen["index"]:
            return await call_next(request)
        message = (f"the index at {index.uri} is gone (deleted or unmounted while it was served): nothing it held "
                   "can be answered, opened or cited; restore it, or run `citeline index` and restart `citeline api`")
        if path == "/health":
            return JSONResponse({"ok": True, "ready": False, "model": index.model, "error": message})
        return _error(503, "IndexGone", message)


def _local_meta(uri: str):
    """The folder of a local index's meta table (its presence says the index is there), or None for object storage."""
    from pathlib import Path

    from citeline.index.store import META

    if "://" in uri and not uri.startswith("file://"):
        return None
    return Path(uri.removeprefix("file://")).expanduser() / f"{META}.lance"


def _authorised(request: Request, token: str) -> bool:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and _same(value.strip(), token):
        return True
    return _same(request.cookies.get(TOKEN_COOKIE, ""), token)


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


# ---- errors ------------------------------------------------------------------------------


def status_for(exc: BaseException) -> int:
    """The HTTP status of an error: 400 bad input, 404 unknown, 409 model mismatch, 503 no index yet."""
    if isinstance(exc, (NoIndex, IndexUnavailable)):
        return 503
    if isinstance(exc, IndexMismatch):
        return 409
    if isinstance(exc, KeyError):
        return 404
    if isinstance(exc, LLMError):
        return 502
    if isinstance(exc, (ValueError, Uncalibrated)):
        return 400
    return 500


def _error(status: int, kind: str, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "type": kind, "message": message}}, status, headers=headers)


def _message(exc: BaseException) -> str:
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    return str(text) + "".join(f"\n{n}" for n in getattr(exc, "__notes__", []))


def _errors(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        return _error(400, "BadRequest", problems)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException):
        return _error(exc.status_code, "HTTPError", str(exc.detail), headers=exc.headers)

    for kind in (CitelineError, KeyError, ValueError):
        @app.exception_handler(kind)
        async def known(request: Request, exc: Exception):
            return _error(status_for(exc), error_type(exc), _message(exc))


def error_type(exc: BaseException) -> str:
    """The ``type`` of a JSON error: "NotFound" for a plain KeyError (the bare Python name told a
    client nothing), else the exception's own class name.

    >>> error_type(KeyError("no chunk")), error_type(ValueError("bad")), error_type(NoIndex("none"))
    ('NotFound', 'ValueError', 'NoIndex')
    """
    return "NotFound" if type(exc) is KeyError else type(exc).__name__


def _checked_id(value: str, what: str = "document") -> str:
    if not ID.match(value):
        raise ValueError(f"not a {what} id: expected 32 hexadecimal characters")
    return value


# ---- JSON endpoints ------------------------------------------------------------------------


def _json_routes(app: FastAPI, index: Index, failure: dict[str, str]) -> None:
    @app.get("/health", tags=["service"])
    async def health() -> dict:
        """Alive, and whether an index is open (no token needed): the snapshot served now, looked
        at without waiting (on the event loop, never behind queries or a re-open)."""
        served = index.served()
        if served is None:
            why = {"error": failure["reason"]} if failure else {}
            return {"ok": True, "ready": False, "model": index.model, **why}
        stamp = served.searcher.stamp
        return {"ok": True, "ready": True, "model": stamp.embed_model, "dim": stamp.embed_dim,
                "strategy": stamp.strategy}

    @app.post("/ask", tags=["query"])
    def ask(body: AskRequest):
        """Sources and prompt for a question, or a refusal (the ``citeline ask --json`` object).

        With ``generate: true`` the response is ``text/event-stream``: ``sources`` (that
        object), ``delta`` events with the answer's text, then ``done`` with the checked
        answer and its ``answer_checks`` (or ``error``).
        """
        options = body.model_dump(exclude={"query", "generate", "path", "type", "since"})
        answer = index.ask(body.query, filters=body.filters(), **options)
        if body.generate and not answer.refused:
            try:
                client = chat_client()
            except LLMError as exc:  # no endpoint configured: said before any stream starts
                return _error(400, "LLMError", _message(exc))
            return StreamingResponse(_generation(answer, client), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-store"})
        return answer.to_dict()

    @app.get("/search", tags=["query"])
    def search(q: str = Query(min_length=1, max_length=MAX_QUESTION),
               k: int = Query(8, ge=1, le=MAX_SEARCH_K), retriever: Retriever = DEFAULT_RETRIEVER,
               path: list[str] = Query([], max_length=MAX_FILTERS),
               kind: list[str] = Query([], alias="type", max_length=MAX_FILTERS),
               since: str | None = Query(None, max_length=64)) -> dict:
        """The k best chunks by one retriever, with their locators (no refusal gate).

        ``path`` (prefix or glob), ``type`` (extension or extractor; both repeatable) and
        ``since`` (ISO 8601) keep only matching documents' chunks, before ranking.
        """
        filters = Filters.parse(path, kind, since)
        return {"query": q, "results": [c.to_dict() for c in index.search(q, k, retriever, filters)]}

    @app.get("/documents", tags=["documents"])
    def documents(path: str | None = Query(None, max_length=4096)) -> dict:
        """Every document: status, reason, chunk count, stamps; failed ones first. With ``path``,
        the documents whose source path ends with it (whole components): what a name stands for."""
        return {"documents": [d.to_dict() for d in index.documents(path)]}

    # A document is named by its id or by any ending of its path that names one document
    # (index/lookup.py); an ending that names several is a 404 listing them. /sources/ takes
    # ids only: nothing the request names is opened as a file.
    @app.get("/documents/{document_id}", tags=["documents"])
    def document(document_id: str, request: Request, page: int = Query(1, ge=1, le=100_000)):
        """The document's record as JSON; a browser (``Accept: text/html``) gets its page: status,
        reason, notes and its chunks, each opening at its place."""
        if wants_html(request):
            return _document_page(index, document_id, page)
        return index.document(document_id).to_dict()

    @app.get("/documents/{document_id}/chunks", tags=["documents"])
    def chunks(document_id: str) -> dict:
        return {"chunks": [c.to_dict() for c in index.chunks(document_id)]}

    @app.get("/sources/{document_id}", tags=["documents"])
    def source(document_id: str, request: Request) -> Response:
        """The original file's bytes, with its content type and HTTP range support."""
        return views.source_response(index.document(_checked_id(document_id)), request.headers.get("range"))

    @app.get("/sources/{document_id}/{name}", include_in_schema=False)
    def named_source(document_id: str, name: str, request: Request) -> Response:
        """The same bytes under the file's own name (what a PDF viewer shows as its title);
        ``name`` must be the document's file name and is never used as a path."""
        doc = index.document(_checked_id(document_id))
        if name != PurePosixPath(doc.path).name:
            raise KeyError(f"document {document_id} is not named {name!r}")
        return views.source_response(doc, request.headers.get("range"))


def _event(name: str, data) -> str:
    # json.dumps never emits a raw newline, so one data: line carries the whole value.
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def _generation(answer, client) -> Iterator[str]:
    """Server-sent events: the sources, the answer as it arrives, then the checked answer."""
    yield _event("sources", answer.to_dict())
    parts: list[str] = []
    try:
        for text in client.stream(answer.prompt):
            parts.append(text)
            yield _event("delta", {"text": text})
    except LLMError as exc:
        yield _event("error", {"status": 502, "type": "LLMError", "message": str(exc)})
        return
    check = check_answer("".join(parts), [c.index for c in answer.citations])
    yield _event("done", {"answer": check.answer, "answer_checks": check.to_dict()})


# ---- pages ------------------------------------------------------------------------------------


def _page_routes(app: FastAPI, index: Index) -> None:
    @app.get("/", include_in_schema=False)
    def ask_page() -> HTMLResponse:
        return _page(pages.ask_page(can_generate()))

    @app.get("/library", include_in_schema=False)
    def library(request: Request) -> HTMLResponse:
        query = pages.LibraryQuery.parse(request.query_params)
        return _page(pages.library_page(index.documents(), query, _index_stamp(index), extractor_versions()))

    @app.get("/view/{chunk_id}", include_in_schema=False)
    def view(chunk_id: str, doc: str = "", line: str = "") -> HTMLResponse:
        """The source at the chunk; a chunk the index no longer holds (the link outlived a
        re-index) is a 404 page that says so and links to its document as it is now.
        ``line`` ("start,end", canonical offsets): the sentence that answered, marked within."""
        try:
            chunk = index.chunk(_checked_id(chunk_id, "chunk"))
        except (KeyError, ValueError):
            return _page(pages.gone_page(chunk_id, _former_document(index, chunk_id, doc)), 404)
        document = index.document(chunk.document_id)
        return _page(views.viewer_page(index, document, chunk, _line(line)))

    def _line(value: str) -> tuple[int, int] | None:
        start, _, end = value.partition(",")
        return (int(start), int(end)) if start.isdigit() and end.isdigit() else None

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in STATIC:
            raise KeyError(f"no static file {name!r}")
        body = resources.files("citeline.web").joinpath("static", name).read_bytes()
        return Response(body, media_type=STATIC[name], headers={"Cache-Control": "no-cache"})


def wants_html(request: Request) -> bool:
    """A browser navigating (its Accept names text/html), not an API client (``*/*``, JSON)."""
    return "text/html" in request.headers.get("accept", "")


def can_generate() -> bool:
    """Whether a chat endpoint is configured, so the ask page offers to write an answer."""
    try:
        chat_client()
    except LLMError:
        return False
    return True


def extractor_versions() -> dict[str, str]:
    from citeline.pipeline.extractor_versions import extractor_versions as versions

    return versions()


def _index_stamp(index: Index) -> dict:
    try:
        return index.stamp.columns()
    except NoIndex:
        return {}


def _document_page(index: Index, document_id: str, page: int) -> HTMLResponse:
    try:
        doc = index.document(document_id)
    except (KeyError, ValueError):
        return _page(pages.not_found_page("No document with this id is in the index: it was removed, "
                                          "or the link is mistyped."), 404)
    chunks = index.chunks(doc.document_id) if doc.chunk_count else ()
    return _page(pages.document_page(doc, chunks, page, _index_stamp(index), extractor_versions()))


HISTORY_VERSIONS = 20  # versions of the chunks table a stale link is looked for in


def _former_document(index: Index, chunk_id: str, doc_id: str):
    """The document a chunk no longer in the index belonged to: the link's own ``doc`` when the
    index still has that document, else the chunk found in one of the last ``HISTORY_VERSIONS``
    versions of the chunks table (LanceDB keeps them until ``citeline gc``); None when neither."""
    for candidate in (doc_id, _historic_doc_id(index, chunk_id)):
        if candidate and ID.match(candidate):
            try:
                return index.document(candidate)
            except KeyError:
                continue
    return None


def _historic_doc_id(index: Index, chunk_id: str) -> str | None:
    if not ID.match(chunk_id):  # the id goes into a filter: only the shape chunk ids have
        return None
    try:
        return index.document_of_retired_chunk(chunk_id, HISTORY_VERSIONS)
    except Exception:  # noqa: BLE001 - history is a courtesy: a page that cannot look still answers 404
        return None
    return None


def _page(html: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(html, status, headers={"Content-Security-Policy": PAGE_CSP, "X-Content-Type-Options": "nosniff",
                                       "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"})


# ---- OpenAPI docs ---------------------------------------------------------------------------


def _docs_routes(app: FastAPI) -> None:
    app.mount(DOCS_ASSETS, StaticFiles(packages=[SWAGGER_PACKAGE]), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=app.openapi_url, title=f"{app.title} — API", swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css", swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png")
        html = page.body.decode()
        return HTMLResponse(html, headers={"Content-Security-Policy": docs_csp(html), "X-Content-Type-Options": "nosniff",
                                           "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"})


def docs_csp(html: str) -> str:
    """The ask page's policy, plus Swagger's one inline start-up script by its hash (nothing
    else inline runs) and the data: icons its style sheet draws with."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'"
                      for s in _INLINE_SCRIPT.findall(html))
    return (PAGE_CSP.replace("script-src 'self'", f"script-src 'self' {hashes}")
            .replace("img-src 'self'", "img-src 'self' data:"))
