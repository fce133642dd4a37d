"""citeline as a library: ``from citeline import Index``.

One ``Index`` is one index location with one embedding model, loaded once. Queries
read a snapshot (a ``Searcher`` over one version of the active chunks table) that is
swapped whole when the index changes (:meth:`Index.refresh`), so a query running
beside a sync sees the old or the new version of a document, never a mix. Searches
may run from many threads: a snapshot is only read, and the model is loaded (and
warmed) under a lock before the first query.

>>> from citeline import Index  # doctest: +SKIP
>>> index = Index.create(".citeline")  # doctest: +SKIP
>>> index.sync("examples/docs").line()  # doctest: +SKIP
>>> index.ask("Why does dropout only apply during training?").to_dict()  # doctest: +SKIP
"""
from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Literal, overload

from citeline.index.check import Violation, check_index, source_warnings
from citeline.index.filters import equals
from citeline.index.lookup import by_ending, ends_with, find, removal_target, shown_names
from citeline.index.store import Store, index_exists, model_for, no_index_message
from citeline.pipeline.embed import Embedder, get_embedder
from citeline.query.ask import Answer, AskOptions
from citeline.query.ask import ask as run_ask
from citeline.query.ask import generate as run_generate
from citeline.query.llm import chat_client
from citeline.query.cite import build_citations, locator_fragment, locator_label, parse_locators
from citeline.query.locate import located
from citeline.query.search import Searcher
from citeline.schemas.errors import IndexUnavailable, NoIndex
from citeline.schemas.retrieval import BM25, DEFAULT_RETRIEVER, RETRIEVERS, Citation, Filters
from citeline.schemas.settings import DEFAULT_GRACE_DAYS
from citeline.schemas.stamp import STAMP_COLUMNS, IndexStamp, Stamp, is_current
from citeline.schemas.status import DocStatus, RunResult, RunSummary

DOCUMENT_COLUMNS = ("doc_id", "path", "source", "root", "title", "status", "stage", "reason", "chunk_count",
                    "truncated", "attempts", "notes", *STAMP_COLUMNS)
CHUNK_FIELDS = ("chunk_id", "doc_id", "path", "title", "section", "ordinal", "start", "end", "content", "locators",
                "tokens")


@dataclass(frozen=True)
class DocumentInfo:
    """One document of the index as ``citeline status --json`` describes it."""

    document_id: str
    path: str
    source: str
    root: str
    title: str
    status: str
    stage: str | None
    reason: str | None
    chunk_count: int
    truncated: int
    attempts: int
    notes: str
    stamps: tuple[tuple[str, object], ...]
    name: str = ""  # the shortest ending of source no other document shares (index/lookup.py)

    @classmethod
    def from_row(cls, row: dict, name: str = "") -> "DocumentInfo":
        return cls(
            document_id=row["doc_id"], path=row["path"], source=row["source"], root=row["root"], title=row.get("title") or "",
            status=row["status"], stage=row.get("stage"), reason=row.get("reason"),
            chunk_count=row["chunk_count"], truncated=row["truncated"], attempts=row["attempts"],
            notes=row.get("notes") or "", stamps=tuple((k, row.get(k)) for k in STAMP_COLUMNS),
            name=name or row["path"],
        )

    @property
    def failed(self) -> bool:
        return self.status == DocStatus.FAILED

    def to_dict(self) -> dict:
        return {**asdict(self), "stamps": dict(self.stamps)}


@dataclass(frozen=True)
class ChunkInfo:
    """One stored chunk: its canonical range, the quote, and where it sits in the source."""

    chunk_id: str
    document_id: str
    path: str
    ordinal: int
    start: int
    end: int
    section: str
    content: str
    label: str
    fragment: str
    locators: tuple[dict, ...]
    tokens: int = 0  # word pieces of the embedded text, as the model counted them

    @classmethod
    def from_row(cls, row: dict) -> "ChunkInfo":
        locators = parse_locators(row.get("locators") or "")
        return cls(
            chunk_id=row["chunk_id"], document_id=row["doc_id"], path=row["path"], ordinal=row["ordinal"],
            start=row["start"], end=row["end"], section=row.get("section") or "", content=row["content"],
            label=locator_label(row.get("title") or row["path"], row.get("section") or "", locators),
            fragment=locator_fragment(locators, row["start"], row["end"]),
            locators=tuple(asdict(loc) for loc in locators), tokens=int(row.get("tokens") or 0),
        )

    def to_dict(self) -> dict:
        return {**asdict(self), "locators": list(self.locators)}


@dataclass(frozen=True)
class CheckReport:
    """``citeline check``: violations (the index is inconsistent) and warnings (sources gone)."""

    violations: tuple[Violation, ...]
    warnings: tuple[Violation, ...]

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict:
        return {"ok": self.ok, "violations": [asdict(v) for v in self.violations],
                "warnings": [asdict(w) for w in self.warnings]}


@dataclass(frozen=True)
class Snapshot:
    """What queries read: one version of the active table, and the versions it was opened at
    (the meta table's too: ``citeline calibrate`` commits a new gate there; and the documents
    table's: which rows a record owns is decided there, and a sync that forgets a document keeps
    its rows in the chunks table for the grace period, hidden by the reader's filter)."""

    searcher: Searcher
    table: str
    version: int
    meta_version: int = 0
    documents_version: int = 0
    sources: dict[str, str] = field(default_factory=dict, compare=False)  # doc_id -> source, filled lazily
    # doc_id -> its locator map, for the documents whose highlighted lines were placed (query/locate.py)
    maps: dict = field(default_factory=dict, compare=False)
    namesakes: dict = field(default_factory=dict, compare=False)  # path -> the documents with that path, filled lazily


class Index:
    """One citeline index and the model it is searched with.

    Use :meth:`open` for an index that exists and :meth:`create` for a new location.

    Args:
        uri: any LanceDB URI (a local folder by default).
        model: the embedding model; None takes the model stamped on the index (else the default).
        warm: load the model and the reranker when the index is opened, before the first query
            (a service); False loads only what a query needs when it runs (a one-shot command).
    """

    def __init__(self, uri: str, model: str | None = None, warm: bool = True):
        from citeline.runtime import env

        env.apply()  # Prefect and Hugging Face read these when a method first imports them
        self.uri = str(uri)
        self._model = model  # None: the index's own, read when first needed
        self.warm = warm
        self._embedder: Embedder | None = None
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()
        # Once a snapshot was served, a re-index's switch is followed (its model loaded): the
        # model asked for at start is checked once, and a service never outlives its index.
        self._follows = False

    @classmethod
    def open(cls, uri: str, model: str | None = None) -> "Index":
        """The index at ``uri``, model loaded and stamp checked.

        Raises:
            NoIndex: nothing has been indexed at ``uri`` (nothing is created there).
            IndexMismatch: ``model`` is not the model the index was built with.
            ModelNotFound: ``model`` names no known model.
        """
        if not index_exists(str(uri)):
            raise NoIndex(no_index_message(str(uri)))
        index = cls(uri, model)
        index.snapshot()
        return index

    @classmethod
    def create(cls, uri: str, model: str | None = None) -> "Index":
        """An index at ``uri`` to :meth:`sync` into (an existing one is opened as it is).

        Raises:
            IndexMismatch: an index exists there built with another model.
        """
        index = cls(uri, model)
        if index_exists(index.uri):
            index.snapshot()
        return index

    @property
    def model(self) -> str:
        """The embedding model: the one asked for, else the index's own, else the default."""
        if self._model is None:
            self._model = model_for(self.uri, None)
        return self._model

    @model.setter
    def model(self, name: str) -> None:
        self._model = name

    # ---- reading ---------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder(self.model)
        return self._embedder

    def snapshot(self) -> Snapshot:
        """The snapshot queries read now (opened on first use).

        Raises:
            NoIndex: nothing has been indexed yet.
        """
        current = self._snapshot
        if current is not None:
            return current
        with self._lock:
            if self._snapshot is None:
                self._snapshot = self._open_snapshot()
            return self._snapshot

    def served(self) -> Snapshot | None:
        """The snapshot queries read now, without opening one (None: none is open): what
        ``/health`` reports, at once, while a re-open holds the lock."""
        return self._snapshot

    def _open_snapshot(self) -> Snapshot:
        store = Store.existing(self.uri)
        # read before the reader's owned-rows filter is: a commit in between costs one more re-open, never a stale filter
        versions = store.meta_version(), store.documents_version()
        stamp = store.require_stamp()
        if self._follows and stamp.embed_model != self.model:
            # `citeline reindex` switched models: the old one would only raise a mismatch,
            # and the retired table holds what the index no longer does.
            try:
                embedder = get_embedder(stamp.embed_model)
            except Exception as exc:  # noqa: BLE001 - any failure to load it: said as one 503
                raise IndexUnavailable(
                    f"the index at {self.uri} switched to the model {stamp.embed_model}, which this process cannot "
                    f"load ({exc}); nothing is served until it is restarted with that model installed") from None
            self.model, self._embedder = stamp.embed_model, embedder
        searcher = Searcher(store, self.embedder, stamp)
        if self.warm:
            searcher.warm()  # the weights and the indexes loaded once, before any thread queries
        table = store.active_table()
        self._follows = True
        return Snapshot(searcher, table, searcher.reader.table.version, *versions)

    def refresh(self) -> bool:
        """Re-open the index when a writer committed since the snapshot was taken.

        Only what the index holds now is served: a switch to another table drops the old
        snapshot before the new one opens (queries wait for it), and a re-open that fails
        leaves none, so each query tries again and says why it cannot be answered.

        Returns:
            True when a new snapshot replaced the old one.
        """
        if not index_exists(self.uri):
            return False
        store = Store(self.uri)
        table = store.active_table()
        current = self._snapshot
        if (current is not None and current.table == table and store.db.open_table(table).version == current.version
                and store.meta_version() == current.meta_version
                and store.documents_version() == current.documents_version):
            return False
        if current is not None and current.table != table:
            self._snapshot = None  # the retired table is not read while its successor opens
        with self._lock:
            try:
                self._snapshot = self._open_snapshot()
            except BaseException:
                self._snapshot = None  # an old version may hold documents since removed
                raise
        return True

    @property
    def stamp(self) -> IndexStamp:
        return self.snapshot().searcher.stamp

    def search(self, query: str, k: int = 8, retriever: str = DEFAULT_RETRIEVER, filters: Filters | None = None
               ) -> tuple[Citation, ...]:
        """The ``k`` best chunks for ``query`` by ``retriever``, as located citations (no gate).

        ``filters`` keep only matching chunks, before ranking: ``k`` come back when ``k`` match.

        Raises:
            ValueError: an unknown retriever or ``k`` < 1.
        """
        if retriever not in RETRIEVERS:
            raise ValueError(f"unknown retriever {retriever!r}; choose one of {list(RETRIEVERS)}")
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        snap = self.snapshot()
        hits = snap.searcher.search(query, retriever, k, filters)
        if retriever == BM25:
            hits = snap.searcher.fill_distances(query, hits)
        return tuple(self._located(snap, build_citations(hits, query)))

    def ask(self, query: str, generate: bool = False, client=None, filters: Filters | None = None,
            reranker: str | None = None, cosine_weight: float | None = None, **options) -> Answer:
        """Sources and prompt for ``query``, or a refusal: the object ``citeline ask --json`` prints.

        Args:
            query: the question.
            generate: also send the prompt to the chat endpoint and check the answer's ``[n]``.
            client: the ``ChatClient`` to use (default: from the environment).
            filters: only chunks these keep are retrieved and judged (none kept: a refusal).
            reranker: when reranking, ``maxsim`` (the default), ``cross-encoder`` or a CrossEncoder
                folder (query/rerank.py).
            cosine_weight: the weight of the z-scored cosine in the rerank order (default: the
                model's configured one).
            **options: ``AskOptions`` fields: k, retriever, rerank, cut, min_rerank_score, depth, check_names.

        Raises:
            Uncalibrated: no cut given and none calibrated for the index's model.
            LLMError: ``generate`` and the endpoint failed (one not configured fails before retrieval).
            ValueError: a reranker that is not configured (before any model is loaded).
        """
        if not query.strip():
            raise ValueError("the question is empty")
        ask_options = AskOptions(**options)
        client = (client or chat_client()) if generate else None
        chosen = None
        if ask_options.reranking and (reranker not in (None, "maxsim") or cosine_weight is not None):
            from citeline.query.rerank import get_reranker

            chosen = get_reranker(reranker or "maxsim", self.embedder, cosine_weight)
        snap = self.snapshot()
        searcher = snap.searcher
        if chosen is not None:  # this question's reranker; the snapshot's searcher serves others as it is
            searcher = copy.copy(snap.searcher)
            searcher.reranker = chosen
        answer = run_ask(searcher, query, ask_options, filters)
        answer = replace(answer, citations=tuple(self._located(snap, answer.citations)),
                         closest=tuple(self._located(snap, answer.closest)))
        if client is not None and not answer.refused:
            answer = run_generate(answer, client)
        return answer

    def _located(self, snap: Snapshot, citations: Sequence[Citation]) -> list[Citation]:
        return located(snap.searcher.store, citations, snap.sources, snap.maps, snap.namesakes)

    def documents(self, ending: str | None = None) -> tuple[DocumentInfo, ...]:
        """Every document (with ``ending``, those whose source path ends with it: the candidates
        a name stands for), failed ones first, then by the name it is shown by."""
        store = Store.existing(self.uri)
        rows = store.document_rows(list(DOCUMENT_COLUMNS))
        names = shown_names({r["doc_id"]: (r["source"], r["path"]) for r in rows})
        docs = [DocumentInfo.from_row(r, names[r["doc_id"]]) for r in rows
                if ending is None or ends_with(r["source"], ending) or r["doc_id"] == ending]
        return tuple(sorted(docs, key=lambda d: (not d.failed, d.name, d.source)))

    def document(self, path: str) -> DocumentInfo:
        """One document by its id, its absolute source path or any ending of that path that
        names one document (``notes.md``, ``proj1/notes.md``).

        Raises:
            Ambiguous: (a KeyError) several documents end with ``path``; it lists them.
            KeyError: no such document.
        """
        store = Store.existing(self.uri)
        everyone = store.document_rows(["doc_id", "source", "path"])
        docs = {r["doc_id"]: (r["source"], r["path"]) for r in everyone}
        try:
            doc_id = find(str(path), docs)
        except KeyError as exc:
            if type(exc) is KeyError:  # not found (an Ambiguous one lists the candidates)
                raise KeyError(f"no document {str(path)!r} in the index at {self.uri}") from None
            raise
        rows = store.document_rows(list(DOCUMENT_COLUMNS), equals("doc_id", doc_id))
        return DocumentInfo.from_row(rows[0], shown_names(docs)[doc_id])

    def chunks(self, path: str) -> tuple[ChunkInfo, ...]:
        """The chunks of one document (see :meth:`document`), in reading order.

        Read from the open snapshot when there is one (what queries see); else from the
        index itself, without loading the model (``citeline chunks``).
        """
        doc = self.document(path)
        store = self._snapshot.searcher.store if self._snapshot is not None else Store.existing(self.uri)
        rows = store.chunk_rows(list(CHUNK_FIELDS), equals("doc_id", doc.document_id), owned=True)
        return tuple(ChunkInfo.from_row(r) for r in sorted(rows, key=lambda r: r["ordinal"]))

    def chunk(self, chunk_id: str) -> ChunkInfo:
        """One chunk by its id, from the snapshot queries read.

        Raises:
            KeyError: no such chunk in the active table.
        """
        rows = self.snapshot().searcher.store.chunk_rows(list(CHUNK_FIELDS), equals("chunk_id", chunk_id), owned=True)
        if not rows:
            raise KeyError(f"no chunk {chunk_id!r} in the index at {self.uri}")
        return ChunkInfo.from_row(rows[0])

    def canonical(self, document_id: str) -> str:
        """The document's canonical text (what every ``start``/``end`` counts in)."""
        return self.stored(document_id, ("canonical",))["canonical"] or ""

    def stored(self, document_id: str, columns: Sequence[str]) -> dict:
        """Columns of the document's record as the index holds it (canonical text, locator map,
        hash and stat of the file it was read from).

        Raises:
            KeyError: no such document.
        """
        rows = Store.existing(self.uri).document_rows(list(columns), equals("doc_id", document_id))
        if not rows:
            raise KeyError(f"no document {document_id!r} in the index at {self.uri}")
        return rows[0]

    def document_of_retired_chunk(self, chunk_id: str, versions: int) -> str | None:
        """The document a chunk id belonged to in one of the last ``versions`` versions of the
        active chunks table (a link to a chunk a sync has since replaced); None when not found."""
        store = Store.existing(self.uri)
        table = store.db.open_table(store.active_table())  # its own handle: checkout moves it
        for version in sorted((v["version"] for v in table.list_versions()), reverse=True)[1:versions + 1]:
            table.checkout(version)
            rows = table.search().where(f"chunk_id = '{chunk_id}'").select(["doc_id"]).limit(1).to_list()
            if rows:
                return rows[0]["doc_id"]
        return None

    def check(self) -> CheckReport:
        """The index's fsck (``citeline check``), read-only."""
        store = Store.existing(self.uri)
        return CheckReport(tuple(check_index(store)), tuple(source_warnings(store)))

    def status_report(self, extractor_versions: dict[str, str]) -> dict:
        """What ``citeline status`` shows, read from the index: every document (with the name it
        is shown by, and whether its rows are of today's extractor and the active stamp), the
        row count, the rows kept for forgotten documents, the active stamp and the gate
        (``gate_line``: the gate as the text output words it).

        Raises:
            NoIndex: nothing is indexed here.
        """
        store = Store.existing(self.uri)
        columns = ["path", "status", "stage", "reason", "chunk_count", "truncated", "attempts", "notes",
                   *STAMP_COLUMNS]
        rows = store.document_rows(["doc_id", "source", *columns])
        names = shown_names({r["doc_id"]: (r["source"], r["path"]) for r in rows})
        docs = sorted(({**r, "name": names[r["doc_id"]]} for r in rows), key=lambda d: (d["name"], d["source"]))
        active = store.stamp()
        gate = _gate_status(store, active)
        kept_documents, kept_rows = store.kept_rows()
        return {"documents": [_status_doc(d, active, extractor_versions) for d in docs],
                "rows": store.count_chunks(owned=True),
                "forgotten": {"documents": kept_documents, "rows": kept_rows},
                "active": asdict(active) if active else None, "gate": gate.to_dict() if gate else None,
                "gate_line": gate.line() if gate else
                "gate: not calibrated: run `citeline calibrate` (or pass ask --cut)"}

    # ---- writing ---------------------------------------------------------------------
    # Each writing method returns what its run produced, or with ``return_result=True`` the
    # ``RunResult`` (final state, message, value) a command reports and picks its exit code from,
    # as a Prefect flow returns its state with ``return_state=True``.

    @overload
    def sync(self, path: str, *, return_result: Literal[True], **kwargs) -> RunResult: ...
    @overload
    def sync(self, path: str, *, return_result: Literal[False] = False, **kwargs) -> RunSummary: ...

    def sync(self, path: str, max_failed: int | None = None, wait_s: float = 0.0, verify: bool = False,
             allow_mass_delete: bool = False, include: Sequence[str] = (), exclude: Sequence[str] = (),
             dask: str | None = None, always_run: bool = False, return_result: bool = False, **options):
        """Index (or re-sync) ``path`` (the ``citeline index`` flow); queries then see the result.

        Args:
            path: a folder or one file.
            max_failed: fail the run when more documents than this fail.
            wait_s: seconds to wait for another writer.
            verify: hash every file, even those whose size and modification time are unchanged.
            allow_mass_delete: forget vanished files' documents even when ``path`` came up empty
                or more than half of its documents would go.
            include: index only the files matching one of these gitignore-style patterns
                (relative to ``path``, as ``citeline index --include``).
            exclude: skip the files and folders matching these patterns (after the defaults
                and the folder's .citelineignore, as ``--exclude``); indexed files now
                excluded are forgotten.
            dask: prepare documents on the Dask cluster at this address ("local": a LocalCluster).
            always_run: start a flow run even when nothing changed (by default a sync that would
                write nothing is answered from the folder and the index, without Prefect).
            **options: ``IndexSettings`` fields (strategy, budget, overlap, max_bytes, timeout_s, …).

        Returns:
            The run summary; failed documents are listed in ``failures``, and documents kept
            though their files were not listed (a folder that could not be listed, a mass
            deletion not allowed) in ``held``, one line each.

        Raises:
            ValueError: a pattern is not a gitignore-style pattern (before anything is read).
            CitelineError: the run could not finish (another model's index, a busy writer,
                more than ``max_failed`` failures); a bug's exception as it was raised.
        """
        from citeline.pipeline.walk import Selection, check_patterns
        from citeline.schemas.settings import IndexSettings

        if isinstance(include, str) or isinstance(exclude, str):
            raise TypeError("include and exclude take a list of patterns, not one string")
        selection = Selection(tuple(include), tuple(exclude))
        check_patterns(selection)
        settings = IndexSettings(db=self.uri, model=self.model, **options)
        from citeline.runtime import temporary_server

        # Started before the plan's and the flow's imports, on the other core: a sync that writes
        # waits for it no more than it must; one that finds nothing to write stops it at once.
        temporary_server.start_early()
        result = None if (always_run or verify or dask) else _unchanged(str(path), settings, selection)
        if result is not None:
            temporary_server.discard_unused()
        else:
            from citeline.flows.ingest import index_folder
            from citeline.flows.runners import command_run, task_runner_for
            from citeline.runtime.handles import warm_embedder

            flow = index_folder.with_options(task_runner=task_runner_for(dask)) if dask else index_folder
            with command_run(meanwhile=None if dask else partial(warm_embedder, settings)):
                result = RunResult.of(flow(str(path), settings, max_failed=max_failed, wait_s=wait_s, verify=verify,
                                           allow_mass_delete=allow_mass_delete, selection=selection,
                                           return_state=True))
            self._follow()
        return result if return_result else _value(result)

    def retry(self, path: str | None = None, wait_s: float = 0.0, return_result: bool = False):
        """Index again only the documents that failed (under ``path`` if given): ``citeline retry``."""
        from citeline.flows.retry import retry_failed

        settings = self._settings()
        return self._run(lambda: retry_failed(settings, path, wait_s=wait_s, return_state=True), return_result)

    def reindex(self, model: str, strategy: str | None = None, wait_s: float = 0.0, return_result: bool = False):
        """Rebuild for another model (``citeline reindex``), then query with it.

        Returns:
            The ``ReindexSummary``; ``switched`` says whether queries moved to the new model.

        Raises:
            ModelNotFound: ``model`` names no known model (before anything runs).
        """
        from citeline.flows.reindex import reindex as reindex_flow
        from citeline.schemas.settings import IndexSettings

        get_embedder(model)  # an unknown name or a missing extra: said at once, not as a failed run
        stamp = Store.existing(self.uri).require_stamp()
        settings = IndexSettings(db=self.uri, model=model, strategy=(strategy or stamp.strategy).upper())
        result = self._run(lambda: reindex_flow(settings, wait_s=wait_s, return_state=True), True)
        summary = result.value
        if getattr(summary, "switched", False):
            with self._lock:
                self.model, self._embedder, self._snapshot = model, None, None
        return result if return_result else _value(result)

    def repair(self, wait_s: float = 0.0, return_result: bool = False):
        """``citeline check --repair``: fix what can be fixed safely, then check again.

        Returns:
            The ``RepairReport``: what was found, what was repaired, what remains.
        """
        from citeline.flows.repair import repair_index

        settings = self._settings()
        return self._run(lambda: repair_index(settings, wait_s=wait_s, return_state=True), return_result)

    def calibrate(self, wait_s: float = 0.0, answerability: bool = False, return_result: bool = False):
        """Measure the index's refusal cut from the index itself (``citeline calibrate``).

        Returns:
            The calibration (its ``cut``, and the figures it was drawn from).
        """
        from citeline.flows.calibrate import calibrate_index

        settings = self._settings()
        return self._run(lambda: calibrate_index(settings, wait_s=wait_s, answerability=answerability,
                                                 return_state=True), return_result)

    def delete(self, path: str, wait_s: float = 0.0):
        """Forget the documents under ``path`` (``citeline rm``); returns the ``Removal``.

        A relative ``path`` under which nothing is indexed is taken as an ending of a stored
        file or folder (``proj1/notes.md``) when it names one.

        Raises:
            Ambiguous: (a KeyError) the ending names several files or folders; it lists them.
        """
        from citeline.flows.remove import remove_path

        store = Store.existing(self.uri)
        removal = remove_path(str(path), self.uri, wait_s)
        if not removal.paths and by_ending(str(path)):
            try:
                target = removal_target(str(path), [r["source"] for r in store.document_rows(["source"])])
            except KeyError as exc:
                if type(exc) is not KeyError:
                    raise
            else:
                removal = remove_path(target, self.uri, wait_s)
        self._follow()
        return removal

    def collect_garbage(self, drop: bool = False, grace_days: float = DEFAULT_GRACE_DAYS, wait_s: float = 0.0):
        """``citeline gc``: the chunks tables that are not the active one, and the kept chunks of
        documents forgotten at least ``grace_days`` ago; with ``drop`` they are deleted.

        The table a running or interrupted re-index builds is kept ("keep"), and so is one a
        running reader still serves ("in-use", index/readers.py); under the writer lock.

        Returns:
            (tables, forgotten): a dict per table (name, model, dim, strategy, rows, action:
            keep, in-use, drop or would-drop) and one per forgotten document (path, rows,
            forgotten_at).
        """
        from citeline.index.lock import writer_lock
        from citeline.index.readers import read_tables

        tables = []
        store = Store.existing(self.uri)
        with writer_lock(self.uri, wait_s):
            building = store.staging_table()
            read = read_tables(self.uri)  # a live service's table stays until it follows the switch
            for name, stamp, active in store.chunk_tables():
                if active:
                    continue
                action = ("keep" if name == building else "in-use" if name in read
                          else "drop" if drop else "would-drop")
                tables.append({"table": name, "model": stamp.embed_model, "dim": stamp.embed_dim,
                               "strategy": stamp.strategy, "rows": store.count_chunks(table=name), "action": action})
                if action == "drop":
                    store.drop_table(name)
            forgotten = store.purge_forgotten(grace_days, dry_run=not drop)
        return tables, forgotten

    def _settings(self):
        """The settings of the index as built: its model and strategy.

        Raises:
            NoIndex: nothing is indexed here.
        """
        from citeline.schemas.settings import IndexSettings

        stamp = Store.existing(self.uri).require_stamp()
        return IndexSettings(db=self.uri, model=self.model, strategy=stamp.strategy)

    def _run(self, flow_call, return_result: bool):
        from citeline.flows.runners import command_run

        with command_run():
            result = RunResult.of(flow_call())
        self._follow()
        return result if return_result else _value(result)

    def _follow(self) -> None:
        """After a write, queries see it: an open snapshot is re-opened (none is opened for it)."""
        if self._snapshot is not None:
            self.refresh()


def _gate_status(store: Store, active):
    """The cut ``ask`` would use and how it was obtained; None when there is none yet."""
    from citeline.query.calibrate import cut_in_use
    from citeline.query.thresholds import Uncalibrated

    if active is None:
        return None
    try:
        return cut_in_use(store, active)
    except Uncalibrated:
        return None


def _status_doc(d: dict, active, versions: dict[str, str]) -> dict:
    stamps = {k: d[k] for k in STAMP_COLUMNS}
    keep = ("path", "name", "status", "stage", "reason", "chunk_count", "truncated", "attempts", "notes")
    # Current: rows of today's version of the extractor that made them, and of the active stamp.
    name = stamps["extractor"]
    current = name in versions and is_current(stamps, Stamp(active, name, versions[name]))
    return {**{k: d[k] for k in keep}, "stamps": stamps, "current": current}


def _unchanged(path: str, settings, selection) -> RunResult | None:
    """A sync that would write nothing, answered from the folder and the index before Prefect is
    imported (flows/sync_plan.py: ~1.4 s and a flow run's 94 rows of the Prefect database saved on
    every unchanged scheduled sync); None when there is work."""
    from citeline.flows.sync_plan import unchanged
    from citeline.runtime.log import Events, get_logger

    summary = unchanged(path, settings, selection)
    if summary is None:
        return None
    get_logger().info(Events.RUN_UNCHANGED, root=path, skipped=summary.skipped, still_failing=summary.still_failing)
    return RunResult("Completed", value=summary)


def _value(result: RunResult):
    """A run's value; its exception, a citeline error or a bug, raised as it came.

    A run whose documents failed ends Failed "DocumentsFailed" (red in the Prefect UI) but
    finished: its summary lists the failures, as ``citeline index`` exits 3 for it; so does
    one that held deletions back ("DeletionsHeld", exit 4), its summary listing them.
    """
    value = result.value
    if isinstance(value, BaseException):
        raise value
    if result.failed:
        from citeline.schemas.status import DELETIONS_HELD, DOCUMENTS_FAILED
        from citeline.schemas.errors import CitelineError

        if result.state not in (DOCUMENTS_FAILED, DELETIONS_HELD):
            raise CitelineError(result.message or (value.line() if hasattr(value, "line") else "the run failed"))
    return value
