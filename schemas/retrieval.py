"""Values of the query side: ranked hits, citations, refusals and answer checks.

Every retriever returns the same ``Hit`` shape so that the evaluation harness can
compare them; only the meaning of ``score`` differs (see ``Hit``). A hit travels
from retrieval through fusion, rerank, the gate and citation unchanged in shape: a
stage that adds a number returns a new hit (``dataclasses.replace``).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone

from citeline.schemas.locator import CharRange

# Retriever names, so that the gate can tell a cosine distance from any other score.
DENSE = "dense"
BM25 = "bm25"
HYBRID = "hybrid"
RERANK = "rerank"
RETRIEVERS = (DENSE, BM25, HYBRID, RERANK)
DEFAULT_RETRIEVER = RERANK  # best R@1 and MRR on dev with the paired test (docs/query.md)
# ask's default k: the most sources it keeps and closest passages it shows. Not the study's 4:
# the gate lets through no more out-of-domain questions at 8 (it reads the nearest chunk either
# way) while the answer is within the person's reach for 4 more ticket questions on dev and 7 on
# cargo-reference (docs/query.md, "Eight passages, not four").
ASK_K = 8
# What ask shows beside its sources or its refusal: the retriever's first k passages the gate did
# not keep, never handed to a model, so the person can check for themselves whether the answer is there.
CLOSEST_NOTE = "closest passages, below the confidence cut — check them yourself"
ENV_RERANKER = "CITELINE_RERANKER"  # the reranker to use: maxsim, cross-encoder or a CrossEncoder folder

UNION = "union"  # dense top N and BM25 top N together, not fused: a candidate list only
CANDIDATE_LISTS = (DENSE, BM25, HYBRID, UNION)


@dataclass(frozen=True)
class RerankConfig:
    """Which candidates the reranker reorders, and how it orders them: one definition for
    ``ask``, ``search --retriever rerank`` and ``citeline eval``.

    Attributes:
        candidates: the list reranked: dense, bm25, hybrid (RRF) or union (dense top
            ``depth`` plus the BM25 top ``depth`` that dense did not find).
        depth: how many of each list are reranked.
        dense_weight: hybrid only: the dense list's RRF weight against BM25's 1.
        cosine_weight: weight of the z-scored cosine in the rerank order (0: reranker only).

    The ``spec`` (e.g. ``hybrid*2@50+cos0.25``) names a configuration on the command line.
    """

    candidates: str = HYBRID
    depth: int = 25
    dense_weight: float = 1.0
    cosine_weight: float = 0.0

    def __post_init__(self) -> None:
        if self.candidates not in CANDIDATE_LISTS:
            raise ValueError(f"unknown candidate list {self.candidates!r}; choose from {list(CANDIDATE_LISTS)}")
        if self.depth < 1:
            raise ValueError(f"depth must be >= 1, got {self.depth}")
        if not 0.0 <= self.cosine_weight <= 1.0 or self.dense_weight <= 0:
            raise ValueError(f"cosine weight must be in [0, 1] and dense weight > 0, got "
                             f"{self.cosine_weight} and {self.dense_weight}")
        if self.dense_weight != 1.0 and self.candidates != HYBRID:
            raise ValueError("a dense weight applies to the hybrid list only")

    @property
    def spec(self) -> str:
        """
        >>> RerankConfig(HYBRID, 50, dense_weight=2.0, cosine_weight=0.25).spec
        'hybrid*2@50+cos0.25'
        """
        weight = f"*{self.dense_weight:g}" if self.dense_weight != 1.0 else ""
        cos = f"+cos{self.cosine_weight:g}" if self.cosine_weight else ""
        return f"{self.candidates}{weight}@{self.depth}{cos}"

    @classmethod
    def parse(cls, spec: str) -> "RerankConfig":
        """The configuration a ``spec`` names.

        Raises:
            ValueError: the spec does not follow ``LIST[*W]@N[+cosW]``.

        >>> RerankConfig.parse("dense@50+cos0.5") == RerankConfig(DENSE, 50, cosine_weight=0.5)
        True
        """
        m = _SPEC.fullmatch(spec.strip())
        if not m:
            raise ValueError(f"bad rerank configuration {spec!r}; write LIST[*W]@N[+cosW], "
                             f"e.g. hybrid*2@50+cos0.25 (lists: {', '.join(CANDIDATE_LISTS)})")
        return cls(m["list"], int(m["depth"]), float(m["weight"] or 1.0), float(m["cos"] or 0.0))


_SPEC = re.compile(r"(?P<list>[a-z0-9]+)(?:\*(?P<weight>[0-9.]+))?@(?P<depth>[0-9]+)"
                   r"(?:\+cos(?P<cos>[0-9.]+))?")
DEFAULT_RERANK = RerankConfig(UNION, 50)  # chosen on dev with the paired test (docs/query.md, docs/eval-dev.md)

# What a refusal cut is applied to: a cosine distance (lower passes) or a rerank score (higher passes).
COSINE = "cosine"
CUT_KINDS = (COSINE, RERANK)
ANSWERABILITY = "answerability"  # the fitted score of query/answerability.py: higher passes
UNMENTIONED = "unmentioned"  # the question names what no passage holds (query/unmentioned.py)
REFUSAL_KINDS = (*CUT_KINDS, ANSWERABILITY, UNMENTIONED)


@dataclass(frozen=True)
class ChunkRow:
    """A stored chunk as queries read it: the chunks table's result columns.

    ``title`` and ``section`` are "" where the table holds null; ``locators`` stays
    the stored JSON text, parsed only when a citation is built.
    """

    chunk_id: str
    doc_id: str
    path: str
    title: str
    section: str
    start: int
    end: int
    content: str
    locators: str

    @classmethod
    def from_row(cls, row: Mapping) -> "ChunkRow":
        """The chunk columns of a table row (other keys are ignored).

        >>> ChunkRow.from_row({"chunk_id": "c", "doc_id": "d", "path": "a.md", "title": None,
        ...     "section": None, "start": 0, "end": 2, "content": "hi", "locators": None}).title
        ''
        """
        return cls(
            chunk_id=row["chunk_id"], doc_id=row["doc_id"], path=row.get("path") or "",
            title=row.get("title") or "", section=row.get("section") or "",
            start=int(row["start"]), end=int(row["end"]), content=row["content"],
            locators=row.get("locators") or "",
        )


CHUNK_COLUMNS = tuple(f.name for f in fields(ChunkRow))


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk.

    ``score`` is the retriever's own number: cosine distance for dense (lower is
    better), BM25 score, fused RRF score and rerank score (higher is better).
    ``rank`` counts from 1 in the retriever's own order. ``chunk`` is None only for
    the bare ids that :func:`query.fuse.rrf` ranks. ``distance`` (1 - cosine) is
    what the refusal gate reads, whatever retriever ordered the list: None until
    known (BM25 hits). A reranked hit also carries ``rerank_score`` (the reranker's
    absolute score) and ``candidate_rank`` (its rank in the list that was reranked).
    """

    chunk_id: str
    rank: int
    score: float
    retriever: str
    chunk: ChunkRow | None = None
    distance: float | None = None
    rerank_score: float | None = None
    candidate_rank: int | None = None

    def __post_init__(self) -> None:
        if self.rank < 1:
            raise ValueError(f"rank counts from 1, got {self.rank}")
        if self.chunk is not None and self.chunk.chunk_id != self.chunk_id:
            raise ValueError(f"hit {self.chunk_id!r} carries chunk {self.chunk.chunk_id!r}")


@dataclass(frozen=True)
class Citation:
    """What the server attaches to the model's ``[index]``: never written by the model.

    ``quote`` is the chunk's ``content`` (== canonical text[start:end]), never the
    embedded ``text``. ``chunk_id``, ``start`` and ``end`` (canonical offsets) let a
    client re-check the quote against the canonical text; ``path`` is the document's path
    under its synced folder and ``uri`` opens the source at the place (``file:///…/a.pdf#page=3``;
    "" until :func:`query.cite.with_sources` knows the document's source file).
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
    path: str = ""
    uri: str = ""
    # The sentence or table row of the quote that best matches the question (query/highlight.py),
    # as canonical offsets inside [start, end); None without a question or a quote.
    highlight_start: int | None = None
    highlight_end: int | None = None
    # The line's own place in its document's unit (``'Sheet'!A25:G25``, ``#page=6``, ``#row=7-7``,
    # ``#t=…``) from the document's locator map (query/locate.py); "" for text, whose line is ``#char=``.
    highlight_locator: str = ""

    @property
    def highlight(self) -> str:
        """The highlighted line's text ("" when there is none)."""
        if self.highlight_start is None or self.start is None:
            return ""
        return self.quote[self.highlight_start - self.start:self.highlight_end - self.start]

    def highlight_dict(self) -> dict | None:
        """``{start, end, fragment, locator, text}`` of the highlighted line: ``fragment`` is ``#char=``
        of its canonical range, ``locator`` its place in the document's own unit (the same for text)."""
        if self.highlight_start is None:
            return None
        fragment = CharRange(self.highlight_start, self.highlight_end).fragment()
        return {"start": self.highlight_start, "end": self.highlight_end, "fragment": fragment,
                "locator": self.highlight_locator or fragment, "text": self.highlight}

    @classmethod
    def from_dict(cls, data: dict) -> "Citation":
        """The citation :meth:`to_dict` gave (a service's answer).

        >>> c = Citation(1, "d", "a.md", "A", "#char=0,11", "Hello world", start=0, end=11,
        ...              highlight_start=6, highlight_end=11)
        >>> Citation.from_dict(c.to_dict()) == c, c.to_dict()["highlight"]["text"]
        (True, 'world')
        >>> from dataclasses import replace
        >>> s = replace(c, fragment="'S'!A1:B2", highlight_locator="'S'!A2:B2")
        >>> Citation.from_dict(s.to_dict()) == s, s.to_dict()["highlight"]["locator"]
        (True, "'S'!A2:B2")
        """
        fields = {k: v for k, v in data.items() if k != "highlight"}
        if (line := data.get("highlight")) is not None:
            own = line.get("locator", "")
            fields.update(highlight_start=line["start"], highlight_end=line["end"],
                          highlight_locator="" if own == line.get("fragment") else own)
        return cls(**fields)

    def to_dict(self) -> dict:
        """The JSON form of ``citeline ask --json``, plus what a client links with."""
        return {
            "index": self.index,
            "document_id": self.document_id,
            "document": self.document,
            "label": self.label,
            "fragment": self.fragment,
            "quote": self.quote,
            "distance": self.distance,
            "rerank_score": self.rerank_score,
            "chunk_id": self.chunk_id,
            "path": self.path,
            "start": self.start,
            "end": self.end,
            "uri": self.uri,
            "highlight": self.highlight_dict(),
        }


@dataclass(frozen=True)
class Refusal:
    """No chunk passed the gate, so no prompt is built and no model is called.

    ``kind`` is ``"cosine"`` (a distance cut: lower passes), ``"rerank"`` (a score cut:
    higher passes), ``"answerability"`` (the calibrated answerability score: higher
    passes) or ``"unmentioned"`` (the question names ``terms`` that no passage holds, whatever
    the distances; ``threshold`` is then the cut that was not consulted); ``best`` is the best
    value seen, None when nothing was retrieved.
    """

    query: str
    threshold: float
    kind: str = COSINE
    best: float | None = None
    terms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in REFUSAL_KINDS:
            raise ValueError(f"unknown refusal kind {self.kind!r}; known: {list(REFUSAL_KINDS)}")
        if (self.kind == UNMENTIONED) != bool(self.terms):
            raise ValueError("an 'unmentioned' refusal names its terms, and only it does")

    def message(self) -> str:
        """The one line the CLI prints.

        >>> Refusal("capital of France?", 0.675).message()
        'NO ANSWER: nothing under cosine distance 0.675 for "capital of France?"'
        >>> Refusal("q", 2.5, kind="rerank").message()
        'NO ANSWER: nothing over rerank score 2.5 for "q"'
        >>> Refusal("q", 0.25, kind="answerability").message()
        'NO ANSWER: nothing over answerability score 0.25 for "q"'
        >>> Refusal("retry with cargo-nextest?", 0.4, kind="unmentioned", terms=("nextest",)).message()
        'NO ANSWER: no passage mentions "nextest" for "retry with cargo-nextest?"'
        """
        if self.kind == UNMENTIONED:
            named = ", ".join(f'"{t}"' for t in self.terms)
            return f'NO ANSWER: no passage mentions {named} for "{self.query}"'
        where = {COSINE: "under cosine distance", RERANK: "over rerank score"}.get(self.kind, f"over {self.kind} score")
        return f'NO ANSWER: nothing {where} {_number(self.threshold)} for "{self.query}"'

    def to_dict(self) -> dict:
        return {**asdict(self), "terms": list(self.terms), "refused": True, "message": self.message()}


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


@dataclass(frozen=True)
class Filters:
    """Which chunks a query may return, applied before ranking (docs/query.md, "Filters").

    A chunk passes when each given kind of filter has one value it matches (values of one
    kind are alternatives; kinds combine with AND):

    Attributes:
        paths: a document's path under its synced folder starts with the value, or, when
            the value holds ``*`` or ``?``, matches it as a glob (``*`` any run of
            characters, ``/`` included; ``?`` one character; every other character is
            itself, ``%``, ``_`` and ``[`` included).
        types: the file's extension (``pdf``, ``md``; case-insensitive, no dot) or the
            extractor that read it (``pdf``, ``csv``, ``text``, ``image-ocr``, ``media``...).
        modified_since: the file's modification time, as stat saw it when last read, is at
            or after this instant (timezone-aware); a document indexed before stats were
            kept has none and does not pass.
    """

    paths: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    modified_since: datetime | None = None

    def __post_init__(self) -> None:
        if any(not p for p in self.paths):
            raise ValueError("a path filter is empty")
        if bad := [t for t in self.types if not _TYPE.fullmatch(t)]:
            raise ValueError(f"bad document type {bad[0]!r}: give an extension or extractor name, e.g. pdf")
        if self.modified_since is not None and self.modified_since.tzinfo is None:
            raise ValueError("modified_since must be timezone-aware")

    def __bool__(self) -> bool:
        return bool(self.paths or self.types or self.modified_since is not None)

    @classmethod
    def parse(cls, paths: Iterable[str] = (), types: Iterable[str] = (), since: str | None = None) -> "Filters":
        """Filters from command-line options or query parameters (built once per query).

        Raises:
            ValueError: an empty path, a type that is not a name, or an unparsable date.

        >>> Filters.parse(["docs/"], ["PDF", ".md"], "2024-05-01").modified_since.isoformat()
        '2024-05-01T00:00:00+00:00'
        >>> Filters.parse(types=[".PDF"]).types
        ('pdf',)
        """
        kinds = tuple(t.strip().lower().removeprefix(".") for t in types)
        return cls(tuple(paths), kinds, None if since in (None, "") else parse_since(since))


_TYPE = re.compile(r"[a-z0-9][a-z0-9_+-]{0,31}")


def parse_since(text: str) -> datetime:
    """An ISO 8601 date or date-time; one without a timezone is UTC.

    Raises:
        ValueError: the text is no such date.

    >>> parse_since("2024-05-01T12:30:00+02:00").isoformat()
    '2024-05-01T12:30:00+02:00'
    """
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"bad date {text!r}: write an ISO 8601 date, e.g. 2024-05-01 or "
                         f"2024-05-01T12:00:00+02:00") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Answer:
    """Everything ``ask`` produced; ``prompt`` is None exactly when the gate refused.

    ``closest`` holds the retriever's first ``k`` passages that are not sources
    (:data:`CLOSEST_NOTE`): all of them on a refusal, those the gate cut beside an answer,
    numbered on from the sources. They are cited like sources but never put in a prompt, so a
    person can still check whether the answer is among them.
    """

    query: str
    threshold: float
    citations: tuple[Citation, ...] = ()
    gate: str = COSINE  # what ``threshold`` bounds: the cosine cut or the answerability score
    prompt: str | None = None
    refusal: Refusal | None = None
    answer: str | None = None
    check: AnswerCheck | None = None
    closest: tuple[Citation, ...] = ()

    @property
    def refused(self) -> bool:
        return self.refusal is not None

    @classmethod
    def from_dict(cls, data: dict) -> "Answer":
        """The answer :meth:`to_dict` gave (a service's ``POST /ask``), without a generated answer.

        >>> a = Answer("q", 0.5, refusal=Refusal("q", 0.5, best=0.7))
        >>> Answer.from_dict(a.to_dict()) == a
        True
        """
        refusal = data.get("refusal")
        return cls(
            query=data["query"], threshold=data["threshold"], gate=data.get("gate", COSINE),
            citations=tuple(Citation.from_dict(c) for c in data.get("citations", ())), prompt=data.get("prompt"),
            refusal=None if refusal is None else Refusal(refusal["query"], refusal["threshold"], refusal["kind"],
                                                         refusal.get("best"), tuple(refusal.get("terms", ()))),
            closest=tuple(Citation.from_dict(c) for c in data.get("closest", ())),
        )

    def to_dict(self) -> dict:
        """The ``--json`` shape: query, refused, threshold, gate, citations, prompt, closest[, refusal,
        closest_note, answer, answer_checks]."""
        out = {
            "query": self.query,
            "refused": self.refused,
            "threshold": self.threshold,
            "gate": self.gate,
            "citations": [c.to_dict() for c in self.citations],
            "prompt": self.prompt,
            "closest": [c.to_dict() for c in self.closest],
        }
        if self.refusal is not None:
            out["refusal"] = self.refusal.to_dict()  # why: its kind, best value and, by name, its terms
        if self.closest:
            out["closest_note"] = CLOSEST_NOTE
        if self.answer is not None:
            out["answer"] = self.answer
            out["answer_checks"] = self.check.to_dict() if self.check else None
        return out
