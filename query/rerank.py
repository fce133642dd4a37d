"""Rerankers: an expensive scorer over a short candidate list.

A ``Reranker`` gives each candidate an absolute relevance score (higher is
better) that can be compared across queries, so a cut on it can gate answers.
Ordering may also mix in the candidate's cosine similarity (``cosine_weight``):
both signals are z-scored over the list and averaged, which orders well but is
only meaningful within one list, so hits keep the raw score as ``rerank_score``.

Two implementations:

- ``MaxSimReranker``: late interaction over the embedding model's own word-piece
  vectors (query/maxsim.py); needs no weights beyond the embedder's.
- ``CrossEncoderReranker``: a sentence-transformers ``CrossEncoder`` from a local
  folder or a name already in the Hugging Face cache; never downloads.

A candidate is scored on a ``Passage``: its ``text`` (what was embedded: header plus
content, or the quoted content where the text is not at hand) and, for MaxSim, its
stored word-piece vectors when the index keeps them.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from citeline.index.tokens import READ_CACHE_BYTES
from citeline.index.tokens import _Recent  # the stored vectors' read cache: the same LRU by bytes
from citeline.schemas.tokens import as_stored
from citeline.query.maxsim import maxsim, mix
from citeline.schemas.errors import CitelineError
from citeline.schemas.retrieval import DEFAULT_RERANK, ENV_RERANKER, RERANK, Hit

MAXSIM = "maxsim"
# Word-piece vectors MaxSim encoded on the fly, kept as a reader decodes stored ones (float32):
# ~1,600 MiniLM chunks.
ENCODED_CACHE_BYTES = READ_CACHE_BYTES
CROSS_ENCODER = "cross-encoder"


class RerankerUnavailable(CitelineError):
    """No reranker of the requested kind is configured or loadable on this machine."""


@dataclass(frozen=True)
class Passage:
    """What a reranker reads of one candidate.

    ``text`` is the embedded text (header plus content); ``token_vectors`` the
    chunk's stored word-piece vectors, where the index keeps them (MaxSim only).
    """

    text: str
    token_vectors: np.ndarray | None = field(default=None, compare=False, repr=False)


@runtime_checkable
class Reranker(Protocol):
    """Scores candidate passages for a query; higher is more relevant."""

    name: str
    cosine_weight: float

    def score(self, query: str, passages: Sequence[Passage]) -> list[float]:
        """One absolute score per passage, in the passages' order."""
        ...


def rerank(
    query: str, hits: Sequence[Hit], reranker: Reranker, k: int | None = None,
    passages: Sequence[Passage] | None = None,
) -> list[Hit]:
    """Reorder candidate hits by the reranker, best first.

    Each returned hit is a new one with ``rerank_score`` (the reranker's absolute
    score), ``candidate_rank`` (its rank before), ``rank`` from 1, ``score`` (the
    ordering value: the raw score, or the z-score mix with cosine when the
    reranker has a ``cosine_weight``) and ``retriever`` = "rerank". Ties keep the
    candidates' order.

    Args:
        query: the question.
        hits: candidates in their retriever's order, each with its chunk; hits need
            ``distance`` when the reranker mixes in cosine.
        reranker: the scorer.
        k: keep the first ``k``; None keeps all.
        passages: what the reranker reads, one per hit; None reads each chunk's
            quoted ``content``.

    Returns:
        The reordered hits.
    """
    if not hits:
        return []
    if passages is None:
        passages = [Passage(hit.chunk.content) for hit in hits]
    scores = np.asarray(reranker.score(query, passages), dtype=np.float64)
    if len(scores) != len(hits):
        raise ValueError(f"{reranker.name} returned {len(scores)} scores for {len(hits)} passages")
    order_by = scores
    if reranker.cosine_weight > 0:
        cosines = [1.0 - float(hit.distance) for hit in hits]
        order_by = mix(scores, cosines, 1.0 - reranker.cosine_weight)
    order = np.argsort(-order_by, kind="stable")[: k if k is not None else len(hits)]
    return [
        replace(hits[i], candidate_rank=hits[i].rank, rank=rank, score=float(order_by[i]),
                rerank_score=float(scores[i]), retriever=RERANK)
        for rank, i in enumerate(order, 1)
    ]


class MaxSimReranker:
    """ColBERT-style MaxSim over the embedder's word-piece vectors.

    A passage carrying ``token_vectors`` (stored at index time, index/tokens.py) is
    scored on them; the others are encoded on the fly from their text.

    Args:
        embedder: the index's ``Embedder`` (its ``token_vectors`` are what is scored).
        cosine_weight: weight of the z-scored cosine in the ordering mix; 0 orders by
            MaxSim alone.
    """

    def __init__(self, embedder, cosine_weight: float = DEFAULT_RERANK.cosine_weight,
                 cache_bytes: int = ENCODED_CACHE_BYTES):
        if not 0.0 <= cosine_weight <= 1.0:
            raise ValueError(f"cosine_weight must be in [0, 1], got {cosine_weight}")
        self.embedder = embedder
        self.cosine_weight = cosine_weight
        self.name = MAXSIM if cosine_weight == 0 else f"{MAXSIM}+cosine{cosine_weight:g}"
        self._lock = threading.Lock()
        # What was encoded on the fly, by text: an index without stored vectors encoded up to
        # 100 candidates per question, 3.9-4.3 s a page ask on 2,100 chunks.
        self._encoded = _Recent(cache_bytes) if cache_bytes > 0 else None

    def score(self, query: str, passages: Sequence[Passage]) -> list[float]:
        """Mean over query word-pieces of the best cosine to any of the passage's word-pieces."""
        if not passages:
            return []
        docs = [p.token_vectors for p in passages]
        if self._encoded is not None:
            known = self._encoded.get([p.text for p, d in zip(passages, docs) if d is None])
            docs = [d if d is not None else known.get(p.text) for p, d in zip(passages, docs)]
        todo = [i for i, vectors in enumerate(docs) if vectors is None]
        with self._lock:
            q = self.embedder.token_vectors([query])[0]
            fresh = self.embedder.token_vectors([passages[i].text for i in todo]) if todo else []
        fresh = self._keep({passages[i].text: vectors for i, vectors in zip(todo, fresh)}) if todo else {}
        for i in todo:
            docs[i] = fresh[passages[i].text]
        return maxsim(q, docs).tolist()

    def warm(self, texts: Sequence[str], batch: int = 8, stop: threading.Event | None = None) -> int:
        """Encode the texts not cached yet, ``batch`` at a time (a question waits one batch at
        most), until the cache is full or ``stop`` is set; returns how many were encoded.

        The service runs this over an index's chunks that have no stored vectors, so a warm
        ask reads every candidate's vectors from memory (docs/benchmarks.md, section 13).
        """
        if self._encoded is None:
            return 0
        # by length, so a batch pads little (as TokenCache batches)
        todo = sorted((t for t in dict.fromkeys(texts) if not self._encoded.get([t])), key=len)
        done = 0
        for start in range(0, len(todo), batch):
            if (stop is not None and stop.is_set()) or self._encoded.used >= self._encoded.budget:
                break
            part = todo[start:start + batch]
            with self._lock:
                vectors = self.embedder.token_vectors(part)
            self._keep(dict(zip(part, vectors)))
            done += len(part)
        return done

    def _keep(self, encoded: dict) -> dict:
        """The vectors as a reader gets stored ones back (int8 and a scale per word-piece,
        index/tokens.py: a score is the same whether its vectors were stored, cached or just
        encoded), kept in the cache."""
        kept = {t: as_stored(v) for t, v in encoded.items()}
        if self._encoded is not None:
            self._encoded.put(kept)
        return kept


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` loaded from disk, scoring (query, text) pairs.

    Args:
        spec: a local folder holding a CrossEncoder, or a model name already in the
            local Hugging Face cache (nothing is downloaded: HF_HUB_OFFLINE=1).
        cosine_weight: weight of the z-scored cosine in the ordering; 0 by default,
            as the study reranked by the cross-encoder alone.
    """

    def __init__(self, spec: str, cosine_weight: float = 0.0, batch_size: int = 32):
        if not spec or spec == CROSS_ENCODER:
            raise not_configured()
        self.spec = spec
        self.cosine_weight = cosine_weight
        self.batch_size = batch_size
        self.name = f"{CROSS_ENCODER}:{spec}"

    @cached_property
    def model(self):
        os.environ["HF_HUB_OFFLINE"] = "1"
        from sentence_transformers import CrossEncoder
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        path = Path(self.spec).expanduser()
        try:
            return CrossEncoder(str(path) if path.is_dir() else self.spec, device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            err = RerankerUnavailable(f"cannot load the cross-encoder {self.spec!r} from disk: {exc}")
            err.add_note(_HELP)
            raise err from None

    def score(self, query: str, passages: Sequence[Passage]) -> list[float]:
        """The cross-encoder's score per passage, through the model's own configured activation.

        ms-marco models configure none (a logit); a one-label model without that
        setting gets sentence-transformers' sigmoid. Either way higher is better.
        """
        if not passages:
            return []
        pairs = [(query, p.text) for p in passages]
        scores = self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False,
                                    convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float64).reshape(len(passages), -1)[:, 0].tolist()


_HELP = (
    f"Help: copy a CrossEncoder folder (e.g. cross-encoder/ms-marco-MiniLM-L-6-v2, saved on a machine "
    f"with hub access) here and pass --reranker /path/to/it or set {ENV_RERANKER}=/path/to/it; "
    f"--reranker {MAXSIM} needs no extra weights."
)


def not_configured() -> RerankerUnavailable:
    err = RerankerUnavailable("no cross-encoder is configured: this machine cannot download one")
    err.add_note(_HELP)
    return err


def get_reranker(spec: str | None, embedder, cosine_weight: float | None = None) -> Reranker:
    """The reranker named by ``spec``: "maxsim", "cross-encoder" (must be configured) or a path/name.

    Args:
        spec: ``maxsim`` (default when None or empty), ``cross-encoder`` or a
            CrossEncoder folder / cached model name.
        embedder: the index's embedder (MaxSim reads its token vectors).
        cosine_weight: override the reranker's default cosine mix weight.

    Raises:
        RerankerUnavailable: ``cross-encoder`` with no folder or name given.
    """
    spec = (spec or MAXSIM).strip()
    if spec == MAXSIM:
        return MaxSimReranker(embedder, DEFAULT_RERANK.cosine_weight if cosine_weight is None else cosine_weight)
    if spec == CROSS_ENCODER:
        raise not_configured()
    return CrossEncoderReranker(spec, 0.0 if cosine_weight is None else cosine_weight)


class TokenCache:
    """The query side's MaxSim reranker, with each text's word-piece vectors computed once.

    ``MaxSimReranker`` encodes the candidates of every query on the fly; over one
    index the same chunks come back for many queries (the evaluation asks the same
    questions of every strategy; the calibration asks hundreds of one index). Scores are the same function (:func:`query.maxsim.maxsim` of the
    same ``Embedder.token_vectors``), only batched differently (by length, which
    also pads less), so they agree with the product's to float rounding.
    """

    def __init__(self, reranker, queries: dict | None = None, docs: dict | None = None,
                 stored: dict | None = None, codec=None):
        self.reranker = reranker
        self.name = reranker.name
        self.cosine_weight = reranker.cosine_weight
        self._docs = {} if docs is None else docs  # shared by the rerank configurations of one index
        self._queries = {} if queries is None else queries  # shared across strategies
        # The passages' vectors as the index stores them (index/tokens.py, int8 by default), so
        # scores are the product's: ``codec`` maps encoded vectors to what a reader gets back.
        self._stored = {} if stored is None else stored  # shared as ``docs`` is
        self.codec = codec or as_stored

    def score(self, query: str, passages: Sequence[Passage]) -> list[float]:
        texts = [p.text for p in passages]
        self._fill(self._docs, texts)
        self._fill(self._queries, [query])
        for t in texts:
            if t not in self._stored:
                self._stored[t] = self.codec(self._docs[t])
        return maxsim(self._queries[query], [self._stored[t] for t in texts]).tolist()

    def _fill(self, cache: dict, texts: Sequence[str], batch: int = 16) -> None:
        embedder = self.reranker.embedder
        missing = sorted({t for t in texts if t not in cache}, key=lambda t: (len(t), t))
        for i in range(0, len(missing), batch):
            part = missing[i : i + batch]
            cache.update(zip(part, embedder.token_vectors(part)))
