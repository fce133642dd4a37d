"""Values of the query side: ranked hits, citations, refusals and answer checks.

Every retriever returns the same ``Hit`` shape so that the evaluation harness can
compare them; only the meaning of ``score`` differs (see ``Hit``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

# Retriever names, so that the gate can tell a cosine distance from any other score.
DENSE = "dense"
BM25 = "bm25"
HYBRID = "hybrid"
RERANK = "rerank"


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk.

    ``score`` is the retriever's own number: cosine distance for dense (lower is
    better), BM25 score, fused RRF score and rerank score (higher is better).
    ``rank`` counts from 1 in the retriever's own order.
    """

    chunk_id: str
    rank: int
    score: float
    retriever: str

    def __post_init__(self) -> None:
        if self.rank < 1:
            raise ValueError(f"rank counts from 1, got {self.rank}")


@dataclass(frozen=True)
class Citation:
    """What the server attaches to the model's ``[index]``: never written by the model.

    ``quote`` is the chunk's ``content`` (== canonical text[start:end]), never the
    embedded ``text``. ``chunk_id``, ``start`` and ``end`` are kept so the quote can be
    re-checked against the canonical text; ``to_dict`` leaves them out.
    """

    index: int
    document_id: str
    document: str
    label: str
    fragment: str
    quote: str
    distance: float | None = None
    rerank_score: float | None = None
    chunk_id: str = ""
    start: int | None = None
    end: int | None = None

    def to_dict(self) -> dict:
        """The JSON form of ``citeline ask --json`` (SPEC §5)."""
        return {
            "index": self.index,
            "document_id": self.document_id,
            "document": self.document,
            "label": self.label,
            "fragment": self.fragment,
            "quote": self.quote,
            "distance": self.distance,
            "rerank_score": self.rerank_score,
        }


@dataclass(frozen=True)
class Refusal:
    """No chunk passed the gate, so no prompt is built and no model is called.

    ``kind`` is ``"cosine"`` (a distance cut: lower passes) or ``"rerank"`` (a score
    cut: higher passes); ``best`` is the best value seen, None when nothing was retrieved.
    """

    query: str
    threshold: float
    kind: str = "cosine"
    best: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("cosine", "rerank"):
            raise ValueError(f"unknown refusal kind {self.kind!r}; known: ['cosine', 'rerank']")

    def message(self) -> str:
        """The one line the CLI prints.

        >>> Refusal("capital of France?", 0.675).message()
        'NO ANSWER: nothing under cosine distance 0.675 for "capital of France?"'
        >>> Refusal("q", 2.5, kind="rerank").message()
        'NO ANSWER: nothing over rerank score 2.5 for "q"'
        """
        where = "under cosine distance" if self.kind == "cosine" else "over rerank score"
        return f'NO ANSWER: nothing {where} {_number(self.threshold)} for "{self.query}"'

    def to_dict(self) -> dict:
        return {**asdict(self), "refused": True, "message": self.message()}


def _number(value: float) -> str:
    # Six significant digits: a cut from a sweep (0.45000000000000007) prints as 0.45.
    return f"{value:.6g}"


@dataclass(frozen=True)
class AnswerCheck:
    """The server's check of a generated answer against the sources it was given.

    ``answer`` has unknown citation numbers removed; ``unknown`` lists those numbers
    (first appearance order), ``uncited`` the sentences that carry no citation and
    ``cited`` the valid source indexes used, ascending.
    """

    answer: str
    cited: tuple[int, ...] = ()
    unknown: tuple[int, ...] = ()
    uncited: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every number names a source and every claim carries one."""
        return not self.unknown and not self.uncited

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "cited": list(self.cited),
            "unknown": list(self.unknown),
            "uncited": list(self.uncited),
        }
