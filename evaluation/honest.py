"""*Answered honestly*: what a person asking ``citeline ask`` gets, per query and counted.

An in-domain question is **answered** when the sources ``ask`` returns after its gate
(same retrieval, same cut, same ``k``) include a chunk holding the needle. It is
**refused** when nothing passes the gate, and its answer is **lost** when the needle was
in the top ``k`` before the gate but cut by it. An out-of-domain question **bluffs**
when anything passes. It is **within reach** when the person can see the needle: among the
sources, or among the closest passages ``ask`` shows beside them or instead of them (the rest
of its top ``k``). The gate itself is :func:`query.ask.apply_gate`, so whatever cut ``ask``
resolves is what is measured here.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from citeline.query.answerability import Answerability
from citeline.query.ask import apply_gate, gate_window
from citeline.schemas.retrieval import Hit, Refusal


def gated(hits: Sequence[Hit], relevant: Sequence[bool], query: str, cut: float, k: int,
          min_rerank_score: float | None = None, answerability: Answerability | None = None,
          table_cut: float | None = None, unmentioned: Sequence[str] = (),
          nearest: Sequence[tuple[Hit, bool]] = ()) -> tuple[bool, ...]:
    """Which of the sources ``ask`` keeps hold the needle: one flag per kept source, () when refused.

    Args:
        hits: the retriever's list, best first (only the first ``k`` are looked at, as ``ask`` retrieves ``k``).
        relevant: per hit, whether its chunk holds the needle (all False out of domain).
        query: the question.
        cut: the cosine cut ``ask`` uses.
        k: how many sources ``ask`` retrieves and keeps at most.
        min_rerank_score: the rerank-score cut ``ask`` adds, if any.
        answerability: the calibrated score ``ask`` gates reranked lists with, if any.
        table_cut: the cosine cut ``ask`` applies to table chunks, if any.
        unmentioned: the question's names no passage holds (``ask`` refuses it for them).
        nearest: the ``k`` nearest chunks by cosine with their relevance, which ``ask``'s cosine
            gate reads beside a reranked list (:func:`query.ask.gate_window`); () for other lists.
    """
    flags = {hit.chunk_id: bool(r) for hit, r in zip(hits, relevant)}
    for hit, r in nearest:
        flags.setdefault(hit.chunk_id, bool(r))
    window = gate_window(hits, [hit for hit, _ in nearest], k)
    kept = apply_gate(window, query, cut, k, min_rerank_score, answerability, table_cut, unmentioned)
    return () if isinstance(kept, Refusal) else tuple(flags[hit.chunk_id] for hit in kept)


@dataclass(frozen=True)
class Outcome:
    """One query after the gate: relevance of the top ``k`` before it and of the kept sources."""

    phrasing: str
    in_domain: bool
    top: tuple[bool, ...]
    kept: tuple[bool, ...]

    @property
    def answered(self) -> bool:
        return self.in_domain and any(self.kept)

    @property
    def refused(self) -> bool:
        return not self.kept

    @property
    def found(self) -> bool:
        return self.in_domain and any(self.top)

    @property
    def lost(self) -> bool:
        return self.found and not any(self.kept)

    @property
    def within_reach(self) -> bool:
        """The needle is among the sources, or among the closest passages shown beside them or instead."""
        return self.answered or self.found


@dataclass(frozen=True)
class Honest:
    """Counts over a set of in-domain and out-of-domain outcomes."""

    answered: int
    queries: int  # in-domain
    refused: int  # in-domain queries with nothing kept
    lost: int
    found: int  # in-domain queries with the needle in the top k before the gate
    bluffs: int
    ood: int
    within_reach: int = 0  # in-domain queries whose needle the person sees: sources or closest passages

    @property
    def share(self) -> float:
        return self.answered / self.queries if self.queries else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "share": round(self.share, 6)}


def tally(outcomes: Sequence[Outcome]) -> Honest:
    """Answered, refused and lost among the in-domain outcomes; bluffs among the others.

    >>> tally([Outcome("course", True, (True, False), (True,)), Outcome("ticket", True, (True,), ()),
    ...        Outcome("absurd", False, (False,), (False,))])
    Honest(answered=1, queries=2, refused=1, lost=1, found=2, bluffs=1, ood=1, within_reach=2)
    """
    inside = [o for o in outcomes if o.in_domain]
    outside = [o for o in outcomes if not o.in_domain]
    return Honest(
        answered=sum(o.answered for o in inside), queries=len(inside), refused=sum(o.refused for o in inside),
        lost=sum(o.lost for o in inside), found=sum(o.found for o in inside),
        bluffs=sum(not o.refused for o in outside), ood=len(outside),
        within_reach=sum(o.within_reach for o in inside),
    )


def by_phrasing(outcomes: Sequence[Outcome], phrasings: Sequence[str]) -> dict[str, Honest]:
    """:func:`tally` of each phrasing's in-domain outcomes, with every out-of-domain one (the bluffs are shared)."""
    outside = [o for o in outcomes if not o.in_domain]
    return {p: tally([*(o for o in outcomes if o.in_domain and o.phrasing == p), *outside])
            for p in phrasings if any(o.in_domain and o.phrasing == p for o in outcomes)}
