"""Index a corpus once per chunking strategy, run every retriever over every query, measure.

Each strategy gets its own LanceDB folder (``<root>/<strategy>``, a temporary folder by
default), built with the project's own pipeline (:func:`pipeline.prepare.prepare`, the
store's writes and ``finish_run``), so the harness measures what ``citeline index``
builds. The embedding model is loaded once. Everything the numbers depend on is
ordered by the corpus and the configuration, never by time or chance, so identical
inputs give identical numbers; wall-clock timings are kept apart under ``timings``.

The orchestration is split into steps (:meth:`Harness.index`, :meth:`Harness.query`,
:meth:`Harness.results`) so that the Prefect flow can wrap each in a task, while
:func:`run_evaluation` runs them in a plain loop for the CLI.
"""
from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from citeline.evaluation import gate as gates
from citeline.evaluation.dataset import Corpus, Query
from citeline.evaluation.honest import gated
from citeline.evaluation.match import rule_for
from citeline.evaluation.metrics import DEPTH, destroyed
from citeline.evaluation.report import summarize
from citeline.index.store import Store, chunk_table
from citeline.pipeline.embed import get_embedder
from citeline.pipeline.prepare import prepare
from citeline.pipeline.record import Prior, indexed_record
from citeline.pipeline.walk import list_files
from citeline.query.answerability import Answerability
from citeline.query.ask import AskOptions, retrieve
from citeline.query.rerank import MaxSimReranker, TokenCache
from citeline.query.search import Searcher
from citeline.query.calibrate import calibrate, cut_in_use
from citeline.query.thresholds import Uncalibrated, rerank_cut
from citeline.query.unmentioned import unmentioned
from citeline.schemas.errors import CitelineError, DocumentError
from citeline.schemas.retrieval import ASK_K, DEFAULT_RERANK, RERANK, RETRIEVERS, Hit, RerankConfig
from citeline.schemas.settings import DEFAULT_MODEL, DOCUMENT_WORKERS, STRATEGIES, IndexSettings
from citeline.schemas.stamp import PIPELINE_VERSION, IndexStamp

KS = (1, 4, 8, 20)


class EvalError(CitelineError):
    """The evaluation cannot run as asked (a retriever that is not available, a bad corpus)."""


@dataclass(frozen=True)
class EvalConfig:
    """What to measure.

    ``retrievers`` None means every retriever of :data:`RETRIEVERS` that works on this
    installation (rerank is dropped, with the reason recorded, when it does not);
    retrievers named explicitly must all work.
    """

    strategies: tuple[str, ...] = STRATEGIES
    retrievers: tuple[str, ...] | None = None
    ks: tuple[int, ...] = KS
    depth: int = DEPTH
    model: str = DEFAULT_MODEL
    precision: str = "auto"
    batch_size: int = 16
    budget: int = 512
    overlap: int = 64
    timeout_s: float = 300.0  # per document, as `index --timeout`: a bigger model on a busy CPU needs more
    window: int = ASK_K  # ask's default k: chunks the refusal gate looks at and closest passages shown
    cosine_cuts: tuple[float, ...] = tuple(gates.cosine_grid())
    cut: float | None = None  # ask's --cut; None: the cut ask itself resolves for the model
    answerability: bool = False  # calibrate with the opt-in answerability score (calibrate --answerability)
    check_names: bool = True  # ask's refusal of questions naming what no passage mentions (--no-name-check)
    rerank_variants: tuple[RerankConfig, ...] = ()  # more rerank configurations, run beside the default
    format: str = "md"  # what the documents were rendered as: decides the needle rule (evaluation.match)
    whisper_model: str = ""  # speech: as `index --whisper-model` ("" = the packaged default)

    def __post_init__(self) -> None:
        unknown = [s for s in self.strategies if s not in STRATEGIES]
        if unknown or not self.strategies:
            raise EvalError(f"unknown strategies {unknown}; choose from {', '.join(STRATEGIES)}")
        if self.retrievers is not None:
            bad = [r for r in self.retrievers if r not in RETRIEVERS]
            if bad or not self.retrievers:
                raise EvalError(f"unknown retrievers {bad}; choose from {', '.join(RETRIEVERS)}")
        if not self.ks or min(self.ks) < 1 or max(self.ks) > self.depth:
            raise EvalError(f"every k must be between 1 and the depth {self.depth}, got {list(self.ks)}")

    def settings(self, strategy: str, db: str) -> IndexSettings:
        return IndexSettings(db=db, model=self.model, strategy=strategy, budget=self.budget,
                             overlap=self.overlap, precision=self.precision, batch_size=self.batch_size,
                             timeout_s=self.timeout_s, whisper_model=self.whisper_model)

    def variants(self) -> tuple[RerankConfig, ...]:
        """The extra rerank configurations, the default's twin and repeats left out."""
        return tuple(v for v in dict.fromkeys(self.rerank_variants) if v != DEFAULT_RERANK)

    def to_dict(self) -> dict:
        return {
            "strategies": list(self.strategies), "ks": list(self.ks), "depth": self.depth,
            "model": self.model, "precision": self.precision, "budget": self.budget,
            "overlap": self.overlap, "gate_window": self.window, "cosine_cuts": list(self.cosine_cuts),
            "cut": self.cut, "answerability": self.answerability, "rerank_default": DEFAULT_RERANK.spec,
            "rerank_variants": [v.spec for v in self.variants()],
            "format": self.format, "check_names": self.check_names,
        }


@dataclass
class IndexCost:
    """What one strategy's index cost and what it lost."""

    strategy: str
    chunks: int
    tokens: int  # word-pieces embedded (special tokens included), before truncation
    header_tokens: int
    truncated: int  # chunks over the encoder's window: embedded cut short
    max_tokens: int
    destroyed: list[str]  # needle ids contained in no chunk
    seconds: float = 0.0


@dataclass(frozen=True)
class QueryResult:
    """One query under one retriever: where its answer ranked and what the gate sees.

    ``rank`` is the first chunk (from 1) containing the needle within the depth, None if
    none; ``distance`` that chunk's cosine distance. ``top_*`` describe the gate window.
    """

    id: str
    phrasing: str  # "course" / "ticket", or the out-of-domain kind
    in_domain: bool
    rank: int | None
    distance: float | None
    top_distances: tuple[float, ...]
    top_relevant: tuple[bool, ...]
    top_scores: tuple[float, ...] | None  # rerank scores, when the rows carry them
    kept: tuple[bool, ...] | None = None  # per source ask keeps, holds the needle; () refused; None: no cut
    unmentioned: tuple[str, ...] = ()  # the question's names no passage holds (ask refuses it for them)


@dataclass(frozen=True)
class AskGate:
    """The gate ``ask`` applies to one retriever's list: its cosine cut and rerank-score cut."""

    cut: float
    min_rerank_score: float | None = None
    answerability: Answerability | None = None  # reranked lists: the calibrated score replaces the cut
    table_cut: float | None = None  # the calibrated cut for table chunks
    mentions: Callable[[str], bool] | None = None  # ask's check of the question's names; None: off
    nearest: Callable[[str], Sequence[Hit]] | None = None  # the k nearest by cosine, read beside a reranked list


@dataclass
class Run:
    strategy: str
    retriever: str
    queries: list[QueryResult]
    ood: list[QueryResult]
    seconds: float = 0.0


class Progress(Protocol):
    def total(self, units: int) -> None: ...

    def advance(self, description: str, units: int = 1) -> None: ...


class _Silent:
    def total(self, units: int) -> None:
        pass

    def advance(self, description: str, units: int = 1) -> None:
        pass


class EncodingCache:
    """An embedder that remembers query vectors, and the word-piece vectors of the passages it
    embeds. Every strategy and retriever asks the same questions, and hybrid embeds each one
    twice; the rerank run scores the index's chunks with MaxSim, whose word-piece vectors come
    out of the forward pass that embedded them (when the embedder can give both, as
    ``SentenceTransformerEmbedder`` does). Everything else is delegated."""

    def __init__(self, embedder):
        self._embedder = embedder
        self._queries: dict[str, object] = {}
        self.passage_tokens: dict[str, object] = {}  # text -> word-piece vectors; the harness clears it per index

    def __getattr__(self, name):
        return getattr(self._embedder, name)

    def embed_query(self, text: str):
        if text not in self._queries:
            self._queries[text] = self._embedder.embed_query(text)
        return self._queries[text]

    def embed_counted(self, texts):
        both = getattr(self._embedder, "embed_with_token_vectors", None)
        if both is None:
            return self._embedder.embed_counted(texts)
        vectors, counts, pieces = both(texts)
        self.passage_tokens.update(zip(texts, pieces))
        return vectors, counts

    def embed_documents(self, texts):
        return self.embed_counted(texts)[0]


def _cache_tokens(searcher: Searcher, queries: dict, docs: dict, codec=None) -> None:
    """Give the searcher a token-caching copy of its default MaxSim reranker, if it has one
    (``codec``: how the index stores passages' vectors, schemas/tokens.py ``CODECS``; None: as it does)."""
    default = searcher.default_reranker()
    if type(default) is MaxSimReranker:
        searcher.reranker = TokenCache(default, queries, docs, codec=codec)


def variant_reranker(searcher: Searcher, variant: RerankConfig):
    """The default reranker with the variant's cosine weight, sharing the token caches."""
    default = searcher.default_reranker()
    if isinstance(default, TokenCache):
        return TokenCache(MaxSimReranker(searcher.embedder, variant.cosine_weight), default._queries, default._docs,
                          default._stored, default.codec)
    return MaxSimReranker(searcher.embedder, variant.cosine_weight)


def variant_label(variant: RerankConfig) -> str:
    """The retriever name a rerank configuration's run carries, e.g. "rerank[dense@50]"."""
    return f"{RERANK}[{variant.spec}]"


@dataclass
class Harness:
    """One evaluation in steps: index a strategy, query it, then assemble the results."""

    corpus: Corpus
    config: EvalConfig
    root: Path
    embedder: object
    progress: Progress = field(default_factory=_Silent)
    costs: dict[str, IndexCost] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    retrievers: tuple[str, ...] | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    fast_rerank: bool = True  # cache MaxSim token vectors (see TokenCache)
    token_codec: object = None  # how passages' word-piece vectors are stored (schemas/tokens.py CODECS); None: int8
    reranker: str | None = None  # the rerank retriever's scorer, once known

    def __post_init__(self) -> None:
        self._query_tokens: dict = {}
        self.embedder = EncodingCache(self.embedder)
        self._started = time.perf_counter()
        self._searches = len(self.corpus.queries) + len(self.corpus.out_of_domain)
        self.progress.total(self._units(len(self.config.retrievers or RETRIEVERS)))

    def _units(self, retrievers: int) -> int:
        per = len(self.corpus.documents) + retrievers * self._searches
        return per * len(self.config.strategies)

    def uri(self, strategy: str) -> str:
        return str(self.root / strategy)

    def index(self, strategy: str) -> IndexCost:
        """Build ``<root>/<strategy>`` from the corpus documents and measure its cost."""
        started = time.perf_counter()
        self.embedder.passage_tokens.clear()  # the last strategy's chunks: not asked for again
        cost = index_strategy(self.corpus, strategy, self.uri(strategy), self.embedder, self.config,
                              lambda path: self.progress.advance(f"index {strategy} {path}"))
        cost.seconds = time.perf_counter() - started
        self.costs[strategy] = cost
        return cost

    def query(self, strategy: str) -> list[Run]:
        """Run every retriever over every query of the corpus on one indexed strategy."""
        searcher = Searcher.open(self.uri(strategy), self.embedder)
        if self.fast_rerank:
            _cache_tokens(searcher, self._query_tokens, self.embedder.passage_tokens, self.token_codec)
        if self.retrievers is None:
            self._resolve(searcher)
        depth = self.config.depth
        # ask's own retrieval (BM25 hits get their distances, as the gate needs), ``depth`` long.
        plan = [(r, lambda q, o=AskOptions(k=depth, retriever=r): retrieve(searcher, q, o),
                 searcher.default_reranker() if r == RERANK else None) for r in self.retrievers]
        if RERANK in self.retrievers:
            for v in self.config.variants():
                reranker = variant_reranker(searcher, v)
                plan.append((variant_label(v), lambda q, v=v, m=reranker: searcher.rerank(q, depth, config=v, reranker=m),
                             reranker))
        runs = []
        for label, search, reranker in plan:
            started = time.perf_counter()
            tick = lambda: self.progress.advance(f"query {strategy} {label}")  # noqa: E731
            queries, ood = search_all(self.corpus, search, self.config, ask_gate(searcher, reranker, self.config), tick)
            runs.append(Run(strategy, label, queries, ood, time.perf_counter() - started))
        self.runs += runs
        return runs

    def _resolve(self, searcher: Searcher) -> None:
        """Decide the retrievers on the first index: drop an unavailable default, refuse an explicit one."""
        wanted = self.config.retrievers or RETRIEVERS
        probe = self.corpus.queries[0].text
        chosen = []
        for name in wanted:
            reason = unavailable(searcher, name, probe)
            if reason is None:
                chosen.append(name)
            elif self.config.retrievers is not None:
                err = EvalError(f"the {name!r} retriever is not available: {reason}")
                err.add_note(f"Help: leave it out of --retrievers (available: {', '.join(chosen) or 'none'}).")
                raise err
            else:
                self.skipped[name] = reason
        self.retrievers = tuple(chosen)
        if RERANK in chosen:
            self.reranker = _describe_reranker(searcher)
        self.progress.total(self._units(len(chosen) + (len(self.config.variants()) if RERANK in chosen else 0)))

    def results(self) -> dict:
        """The results document (see :func:`evaluation.report.summarize`)."""
        results = summarize(self.corpus, self.config, self.costs, self.runs, self.retrievers or (), self.skipped)
        results["config"]["reranker"] = self.reranker
        results["timings"]["total_s"] = round(time.perf_counter() - self._started, 1)
        return results


def _describe_reranker(searcher: Searcher) -> str | None:
    """E.g. "maxsim over the hybrid top 25 (hybrid@25)"."""
    name = getattr(searcher.reranker, "name", None)
    c = searcher.rerank_config
    return f"{name} over the {c.candidates} top {c.depth} ({c.spec})" if name else name


def ask_gate(searcher: Searcher, reranker, config: EvalConfig) -> AskGate | None:
    """The gate ``ask`` would apply over this index and reranker; None when it has no cut.

    The cosine cut is resolved as ``ask`` resolves it (:func:`query.calibrate.cut_in_use`:
    ``--cut``, else the index's own calibration, which :func:`index_strategy` stores as
    the index flow does), so a change in how ``ask`` takes its cut is measured unchanged.
    """
    model = searcher.stamp.embed_model
    try:
        in_use = cut_in_use(searcher.store, searcher.stamp, config.cut)
    except Uncalibrated:
        return None
    mentions = searcher.mentions if config.check_names else None
    if reranker is None:
        return AskGate(in_use.cut, table_cut=in_use.table_cut, mentions=mentions)
    min_score, scored = rerank_cut(model, reranker.name), in_use.answerability_for(reranker.name)
    # As ask: beside a reranked list the cosine gate also reads the k nearest (query.ask.gate_window).
    nearest = (lambda q: searcher.dense(q, config.window)) if min_score is None and scored is None else None
    return AskGate(in_use.cut, min_score, scored, in_use.table_cut, mentions, nearest)


def unavailable(searcher: Searcher, retriever: str, probe: str) -> str | None:
    """Why ``retriever`` cannot run on this installation, or None when one search works."""
    try:
        searcher.search(probe, retriever, 1)
    except Exception as exc:  # any failure means "not usable here"; the reason is reported
        return f"{type(exc).__name__}: {exc}"
    return None


def index_strategy(corpus: Corpus, strategy: str, uri: str, embedder, config: EvalConfig,
                   on_document=lambda path: None) -> IndexCost:
    """Index every corpus document with one strategy into a fresh store at ``uri``.

    Raises:
        EvalError: a document failed (an evaluation corpus must index cleanly).
    """
    settings = config.settings(strategy, uri)
    stamp = IndexStamp(embedder.name, embedder.dim, PIPELINE_VERSION, strategy)
    store = Store(uri)
    store.chunks(stamp, create=True)
    header_tokens = 0
    # By stem: a rendered folder holds a.pdf for a.md; the corpus's own folder may hold more
    # documents than it measures (Corpus.only).
    stems = {Path(name).stem for name, _ in corpus.documents}
    files = [f for f in list_files(corpus.docs_dir) if Path(f.path).stem in stems]
    _forget_others(store, stamp, {f.source for f in files})

    def prepared(file):
        try:
            return prepare(file, embedder, stamp, settings)
        except (DocumentError, OSError) as exc:  # bad input; a bug propagates with its traceback
            stage = getattr(exc, "stage", "prepare")
            raise EvalError(f"{file.path} failed at {stage}: {exc}") from exc

    # As many documents at once as the index command prepares (dev rendered as scans: 11.3 ->
    # 7.2 min, OCR being one thread a page); written in the folder's order, so the index is the
    # same either way.
    with ThreadPoolExecutor(DOCUMENT_WORKERS) as pool:
        for file, doc in zip(files, pool.map(prepared, files)):
            count = store.replace_chunks(stamp, doc.doc_id, chunk_table(doc.rows, stamp))
            store.upsert_document(indexed_record(doc, Prior(), stamp, count))
            header_tokens += _header_tokens(doc.rows, embedder)
            on_document(file.path)
    store.finish_run(stamp)
    calibrate_index(store, stamp, embedder, config.answerability)
    rows = store.chunk_rows(["path", "ordinal", "content", "tokens", "truncated"])
    rows.sort(key=lambda r: (r["path"], r["ordinal"]))
    lost = destroyed([n.needle for n in corpus.needles], [r["content"] for r in rows], rule_for(config.format))
    lost_ids = [n.id for n in corpus.needles if n.needle in set(lost)]
    return IndexCost(strategy, len(rows), sum(r["tokens"] for r in rows), header_tokens,
                     sum(bool(r["truncated"]) for r in rows), int(embedder.max_tokens), lost_ids)


def calibrate_index(store: Store, stamp: IndexStamp, embedder, answerability: bool = False) -> None:
    """Calibrate the new index's gate and store it, as the index flow does after a first sync
    (``answerability``: as ``calibrate --answerability`` does)."""
    try:
        found = calibrate(Searcher(store, embedder, stamp), "evaluation", answerability=answerability)
    except Uncalibrated:
        return  # nothing to ask about: ask_gate finds no cut and the report says "not measured"
    store.set_calibration(store.active_table(), found.to_json())


def _forget_others(store: Store, stamp: IndexStamp, sources: set[str]) -> None:
    """A reused ``--db-dir`` may hold documents of another corpus: they must not be searched."""
    others = [r["doc_id"] for r in store.document_rows(["doc_id", "source"]) if r["source"] not in sources]
    store.delete_documents(others, stamp)


def _header_tokens(rows: list[dict], embedder) -> int:
    """Word-pieces the ``[Title > Section]`` header adds: tokens of the embedded text minus of what
    follows its header line (the content, or the content past a heading the header names)."""
    headed = [r for r in rows if r["text"] != r["content"]]
    if not headed:
        return 0
    bodies = [r["text"].split("\n", 1)[1] if "\n" in r["text"] else "" for r in headed]
    return sum(r["tokens"] for r in headed) - sum(embedder.count_tokens(bodies))


def search_all(corpus: Corpus, search, config: EvalConfig, gate: AskGate | None = None,
               tick=lambda: None) -> tuple[list[QueryResult], list[QueryResult]]:
    """Every in-domain and out-of-domain query through one ``search(text) -> hits`` at ``config.depth``."""
    queries = []
    for q in corpus.queries:
        queries.append(judge(q, search(q.text), config, gate=gate))
        tick()
    ood = []
    for o in corpus.out_of_domain:
        ood.append(judge(Query(o.id, "", o.kind, o.query, ""), search(o.query), config, in_domain=False, gate=gate))
        tick()
    return queries, ood


def judge(query: Query, hits: Sequence[Hit], config: EvalConfig, in_domain: bool = True,
          gate: AskGate | None = None) -> QueryResult:
    """Where the answer ranks in ``hits``, what the gate window holds and what ``ask`` would keep.

    A hit is relevant when its chunk's ``content`` contains the whole needle by the rule of
    the documents' format (:func:`evaluation.match.rule_for`: normalised text, or words up to
    recognition noise for speech). ``ask`` retrieves ``config.window`` hits: the first
    ``window`` of the depth-long list are the same hits (every retriever's list is a prefix
    of its longer one).
    """
    contains = rule_for(config.format)

    def holds(hit: Hit) -> bool:
        return in_domain and bool(query.needle) and contains(query.needle, hit.chunk.content)

    relevant = [holds(h) for h in hits[: config.depth]]
    rank = next((i for i, hit in enumerate(relevant, 1) if hit), None)
    window = hits[: config.window]
    scores = tuple(_number(h.rerank_score) for h in window)
    names = unmentioned(query.text, gate.mentions) if gate is not None and gate.mentions is not None else ()
    nearest = [] if gate is None or gate.nearest is None else [(h, holds(h)) for h in gate.nearest(query.text)]
    kept = None if gate is None else gated(hits, relevant, query.text, gate.cut, config.window, gate.min_rerank_score,
                                             gate.answerability, gate.table_cut, names, nearest)
    return QueryResult(
        id=query.id, phrasing=query.phrasing, in_domain=in_domain, rank=rank,
        distance=_number(hits[rank - 1].distance) if rank else None,
        top_distances=tuple(_number(h.distance) for h in window),
        top_relevant=tuple(relevant[: config.window]),
        top_scores=scores if window and all(not math.isnan(s) for s in scores) else None,
        kept=kept, unmentioned=names,
    )


def _number(value) -> float:
    return float("nan") if value is None else float(value)


@contextmanager
def workspace(db_dir: str | Path | None) -> Iterator[Path]:
    """``db_dir`` as given (kept afterwards), or a temporary folder removed afterwards."""
    if db_dir is not None:
        path = Path(db_dir).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="citeline-eval-") as tmp:
        yield Path(tmp)


def load_embedder(config: EvalConfig):
    """The embedding model, loaded once per process and settings."""
    return get_embedder(config.model, config.precision, config.batch_size)


def run_evaluation(corpus: Corpus, config: EvalConfig = EvalConfig(), *, db_dir: str | Path | None = None,
                   embedder=None, progress: Progress | None = None) -> dict:
    """Index every strategy, run every retriever, and return the results document.

    Args:
        corpus: a loaded corpus (:func:`evaluation.dataset.load_corpus`).
        config: strategies, retrievers, cut-offs and index settings.
        db_dir: where the per-strategy indexes go; a temporary folder when None. An
            existing index there is reused only if its stamp matches, else refused.
        embedder: the embedder to use (default: the configured model, loaded once).
        progress: receives the total amount of work and each finished step.

    Returns:
        The results document; everything but its ``timings`` is deterministic.

    Raises:
        EvalError: a document failed to index, or an explicitly requested retriever
            does not work here.
    """
    with workspace(db_dir) as root:
        harness = Harness(corpus, config, root, embedder or load_embedder(config), progress or _Silent())
        for strategy in config.strategies:
            harness.index(strategy)
            harness.query(strategy)
        return harness.results()
