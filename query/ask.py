"""``citeline ask`` as plain functions: retrieve -> rerank -> gate -> cite -> prompt -> generate -> check.

Each step is a function over values, so the CLI only parses and prints and the
tests can call any step alone. The gate is the only step that can say no: when
no chunk passes it, no prompt is built and no model is called.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from citeline.query.answer_check import check_answer
from citeline.query.answerability import Answerability, gate_answerable
from citeline.query.cite import build_citations
from citeline.query.llm import ChatClient
from citeline.query.prompt import build_prompt
from citeline.query.refuse import gate, gate_score, with_content
from citeline.query.calibrate import cut_in_use
from citeline.query.search import Searcher
from citeline.query.thresholds import rerank_cut
from citeline.query.unmentioned import unmentioned
from citeline.schemas.retrieval import (  # Answer: defined with the other records, named here too
    ANSWERABILITY, ASK_K, BM25, COSINE, DEFAULT_RETRIEVER, RERANK, RETRIEVERS, UNMENTIONED, Answer, Filters, Hit,
    Refusal,
)


@dataclass(frozen=True)
class AskOptions:
    """How to answer one question.

    ``rerank`` reranks the top ``depth`` of ``retriever`` (``retriever="rerank"``
    reranks the searcher's ``rerank_config`` candidates; ``depth`` None: the config's). ``cut``
    None takes the index's own calibrated cut (query/calibrate.py); ``min_rerank_score`` None
    takes the calibrated reranker cut,
    if any (none is on by default). ``check_names``: refuse a question that names what no
    passage mentions (query/unmentioned.py), whatever the distances.
    """

    k: int = ASK_K
    retriever: str = DEFAULT_RETRIEVER
    rerank: bool = False
    cut: float | None = None
    min_rerank_score: float | None = None
    depth: int | None = None
    check_names: bool = True

    def __post_init__(self) -> None:
        if self.retriever not in RETRIEVERS:
            raise ValueError(f"unknown retriever {self.retriever!r}; choose one of {list(RETRIEVERS)}")
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")

    @property
    def reranking(self) -> bool:
        return self.rerank or self.retriever == RERANK


def retrieve(searcher: Searcher, query: str, options: AskOptions, filters: Filters | None = None) -> list[Hit]:
    """The top ``k`` hits of the chosen retriever (of the chunks ``filters`` keep), reranked when asked;
    every hit has ``distance``."""
    if options.reranking:
        candidates = None if options.retriever == RERANK else options.retriever
        return searcher.rerank(query, options.k, candidates=candidates, depth=options.depth, filters=filters)
    hits = searcher.search(query, options.retriever, options.k, filters)
    if options.retriever == BM25:
        hits = searcher.fill_distances(query, hits)  # the gate judges BM25 hits by cosine too
    return hits


def gate_window(hits: Sequence[Hit], nearest: Sequence[Hit], k: int = ASK_K) -> list[Hit]:
    """What the cosine gate reads: the retriever's first ``k`` hits, then those of the ``k``
    nearest by cosine (``nearest``, a dense search) that it left out.

    A reranker orders by its own score, so the chunk nearest the question by cosine, the
    distance the gate reads, can fall out of the reranked top ``k`` while a farther one it
    preferred is cut: measured on dev and cargo-reference, the nearest chunks let through
    +2/-0 ticket answers on dev, +1/-0 course on cargo, no bluff more (docs/query.md).
    The reranked hits still come first among the sources.

    >>> a, b, c = (Hit(x, i, 0.0, "rerank", distance=d) for i, (x, d) in enumerate([("a", .5), ("b", .6), ("c", .3)], 1))
    >>> [h.chunk_id for h in gate_window([a, b], [c, a], k=2)]
    ['a', 'b', 'c']
    """
    first = list(hits[:k])
    seen = {hit.chunk_id for hit in first}
    return [*first, *(hit for hit in nearest[:k] if hit.chunk_id not in seen)]


def apply_gate(
    hits: Sequence[Hit], query: str, cut: float, k: int = ASK_K,
    min_rerank_score: float | None = None, answerability: Answerability | None = None,
    table_cut: float | None = None, unmentioned: Sequence[str] = (),
) -> list[Hit] | Refusal:
    """Keep at most ``k`` hits under the cosine cut (and over the rerank cut, when given),
    fragments never (``schemas.document.carries_content``).

    A question that names what no passage mentions (``unmentioned``, from
    :func:`query.unmentioned.unmentioned`) is refused before any cut is read: the passages
    near it are about something else, however near.

    With ``answerability`` (the index's calibrated score, for reranked hits) a hit must
    pass that score instead of the cosine cut: it reads the distance among other evidence
    (query/answerability.py).

    Args:
        hits: retrieved hits in ranking order, each with ``distance`` (and
            ``rerank_score`` when ``min_rerank_score`` is set).
        query: the question, quoted in a refusal.
        cut: cosine-distance cut; a hit passes when ``distance < cut``.
        k: how many hits to keep at most.
        min_rerank_score: a hit must also have ``rerank_score > min_rerank_score``.
        table_cut: the cosine cut for table chunks (the index's calibration), None: ``cut``.
        unmentioned: the question's names that no passage holds; any: a refusal.

    Returns:
        The kept hits in their order, or the ``Refusal`` of the first gate nothing passed.

    Raises:
        ValueError: if a hit carries no distance, or ``min_rerank_score`` is set and
            a hit carries no rerank score.

    >>> hits = [Hit("a", 1, 0.5, "rerank", distance=0.3, rerank_score=0.5),
    ...         Hit("b", 2, 0.7, "rerank", distance=0.2, rerank_score=0.7)]
    >>> [h.chunk_id for h in apply_gate(hits, "q", 0.4, min_rerank_score=0.6)]
    ['b']
    >>> apply_gate(hits, "q", 0.1).message()
    'NO ANSWER: nothing under cosine distance 0.1 for "q"'
    >>> apply_gate(hits, "GRU?", 0.4, unmentioned=("GRU",)).message()
    'NO ANSWER: no passage mentions "GRU" for "GRU?"'
    """
    if unmentioned:
        best = min((h.distance for h in hits if h.distance is not None), default=None)
        return Refusal(query=query, threshold=cut, kind=UNMENTIONED, best=best, terms=tuple(unmentioned))
    hits = with_content(hits)  # a label, a bare URL or a page number alone is no source
    if answerability is not None:
        passed = gate_answerable(hits, query, answerability, max(len(hits), 1))
    else:
        passed = gate(hits, cut, max(len(hits), 1), query=query, table_cut=table_cut)
    if isinstance(passed, Refusal):
        return passed
    if min_rerank_score is not None:
        if any(hit.rerank_score is None for hit in passed):
            raise ValueError("--min-rerank-score needs reranked rows: rerank, or leave the score gate off")
        passed = gate_score(passed, min_rerank_score, k, query=query)
        if isinstance(passed, Refusal):
            return passed
    return passed[:k]


def ask(searcher: Searcher, query: str, options: AskOptions = AskOptions(), filters: Filters | None = None) -> Answer:
    """Retrieve, gate, cite and build the prompt for ``query`` (no generation); the gate judges
    only the chunks ``filters`` keep (none kept: a refusal).

    Raises:
        Uncalibrated: ``options.cut`` is None and the index has no calibration (nor a legacy cut).
        IndexMismatch, RerankerUnavailable: from the searcher.
    """
    in_use = cut_in_use(searcher, searcher.stamp, options.cut)
    reranker = searcher.default_reranker().name if options.reranking else None
    scored = in_use.answerability_for(reranker) if reranker else None
    threshold, kind = (scored.threshold, ANSWERABILITY) if scored is not None else (in_use.cut, COSINE)
    min_score = options.min_rerank_score
    if min_score is None and reranker:
        min_score = rerank_cut(searcher.stamp.embed_model, reranker)
    rows = retrieve(searcher, query, options, filters)
    names = unmentioned(query, lambda word: searcher.mentions(word, filters)) if options.check_names else ()
    # The nearest by cosine join the reranked hits only where the cosine alone gates: a score
    # gate reads rerank scores, which a dense hit has none of.
    cosine_only = options.reranking and scored is None and min_score is None
    window = gate_window(rows, searcher.dense(query, options.k, filters) if cosine_only else (), options.k)
    kept = apply_gate(window, query, in_use.cut, options.k, min_score, scored, in_use.table_cut, names)
    refused = isinstance(kept, Refusal)
    citations = () if refused else tuple(build_citations(kept, query))
    # What the gate did not keep of the first k is shown too, marked: on a refusal all of it; beside
    # an answer the sources may be the wrong passages, and the right one just over the cut stays in reach.
    shown = {c.chunk_id for c in citations}
    closest = tuple(build_citations([h for h in rows[: options.k] if h.chunk_id not in shown], query,
                                    start=len(citations) + 1))
    if refused:
        return Answer(query=query, threshold=threshold, gate=kind, refusal=kept, closest=closest)
    return Answer(query=query, threshold=threshold, gate=kind, citations=citations,
                  prompt=build_prompt(query, citations), closest=closest)


def generate(answer: Answer, client: ChatClient) -> Answer:
    """Send the prompt to the chat endpoint and check the reply against the sources.

    A refused answer is returned unchanged: the model is never called for it.

    Raises:
        LLMError: the endpoint failed or returned no text.
    """
    if answer.refused or answer.prompt is None:
        return answer
    check = check_answer(client.complete(answer.prompt), [c.index for c in answer.citations])
    return replace(answer, answer=check.answer, check=check)
