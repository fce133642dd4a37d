"""Retrieval metrics that need no generation call: Recall@k, MRR, destroyed answers.

A retrieval is correct when one returned chunk's ``content`` contains the whole
needle, compared after collapsing runs of whitespace to one space, nothing else
(corpora/README.md). Ranks count from 1; ``None`` means not found within the depth.
Inputs may also be BEIR/TREC dicts (``run[qid][doc_id] = score``,
``qrels[qid][doc_id] = relevance``); nothing the caller passes is mutated.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

DEPTH = 20  # MRR and "found" are measured in the top 20

_WS = re.compile(r"\s+")

Ranks = Sequence["int | None"] | Mapping[str, "int | None"]


def collapse_ws(s: str) -> str:
    """Replace every run of whitespace with one space; nothing else (no strip, no case).

    >>> collapse_ws("a \\n\\t b  c ")
    'a b c '
    """
    return _WS.sub(" ", s)


def contains_needle(content: str, needle: str) -> bool:
    """Whether ``content`` contains the whole ``needle``, whitespace-collapsed on both.

    >>> contains_needle("the  KV\\ncache grows", "KV cache")
    True
    """
    return collapse_ws(needle) in collapse_ws(content)


def first_relevant_rank(
    ranked_contents: Sequence[str], needle: str, depth: int = DEPTH
) -> int | None:
    """The 1-based rank of the first chunk that contains the needle, within ``depth``.

    Args:
        ranked_contents: chunk contents, best first.
        needle: the verbatim answer sentence.
        depth: how many chunks to look at.

    Returns:
        The rank, or None when no chunk in the top ``depth`` contains the needle.
    """
    target = collapse_ws(needle)
    for rank, content in enumerate(ranked_contents[:depth], 1):
        if target in collapse_ws(content):
            return rank
    return None


def hits_at(ranks: Ranks, k: int) -> list[int]:
    """Per query, 1 if the answer is in the top ``k`` else 0 (the input of ``stats.paired``)."""
    return [int(r is not None and r <= k) for r in _values(ranks)]


def recall_at(ranks: Ranks, k: int) -> float:
    """Recall@k = |{q : rank_q <= k}| / |Q|.

    Args:
        ranks: per-query first relevant rank (None if not found), as a list or a
            ``{qid: rank}`` dict.
        k: the cut-off, >= 1.

    Returns:
        The fraction of queries answered in the top ``k``.

    Raises:
        ValueError: if there are no queries or ``k`` < 1.

    >>> recall_at([1, 3, None, 5], 4)
    0.5
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    found = hits_at(ranks, k)
    if not found:
        raise ValueError("recall of no queries is undefined")
    return sum(found) / len(found)


def reciprocal_rank(rank: int | None, depth: int = DEPTH) -> float:
    """RR = 1 / rank when rank <= depth, else 0 (also 0 when not found)."""
    return 1.0 / rank if rank is not None and rank <= depth else 0.0


def mrr(ranks: Ranks, depth: int = DEPTH) -> float:
    """Mean reciprocal rank: MRR = (1 / |Q|) * sum over q of RR(rank_q).

    Raises:
        ValueError: if there are no queries.

    >>> mrr([1, 2, None, 25])
    0.375
    """
    values = [reciprocal_rank(r, depth) for r in _values(ranks)]
    if not values:
        raise ValueError("MRR of no queries is undefined")
    return sum(values) / len(values)


def destroyed(needles: Iterable[str], all_chunk_contents: Iterable[str],
              contains: Callable[[str, str], bool] | None = None) -> list[str]:
    """The needles that no chunk contains whole: chunking cut them (recall ceiling 0).

    Args:
        needles: the answer sentences.
        all_chunk_contents: the ``content`` of every chunk of one strategy.
        contains: ``contains(needle, content)``; default: whitespace-collapsed containment.

    Returns:
        The destroyed needles, in input order.
    """
    if contains is not None:
        contents = list(all_chunk_contents)
        return [n for n in needles if not any(contains(n, c) for c in contents)]
    chunks = [collapse_ws(c) for c in all_chunk_contents]  # collapse each chunk once
    return [n for n in needles if not any(collapse_ws(n) in c for c in chunks)]


def _values(ranks: Ranks) -> list[int | None]:
    return list(ranks.values()) if isinstance(ranks, Mapping) else list(ranks)
