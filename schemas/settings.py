"""How one index is built: a single value handed from the CLI through flows to tasks."""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_DB = ".citeline"
DEFAULT_MODEL = "all-MiniLM-L6-v2"
# Every command-line option also reads CITELINE_<COMMAND>_<OPTION>; --db and --model read these two.
ENV_PREFIX = "CITELINE"
ENV_DB = "CITELINE_DB"
ENV_MODEL = "CITELINE_MODEL"
DEFAULTS = {"db": DEFAULT_DB, "model": DEFAULT_MODEL}
# Chunking strategies by letter; what each letter means is pipeline.chunk.STRATEGIES.
STRATEGIES = ("A", "B", "C", "D", "E", "F")
DEFAULT_STRATEGY = "E"
# The memory one extraction worker may allocate (pipeline/isolate.py): a document that needs more
# fails too-large. Normal documents take 0.2-0.5 GB (VmData of the worker after Whisper, OCR,
# LibreOffice, docx, xlsx: docs/reliability.md); the honest worst cases under the other limits
# are a 4-hour stereo recording (max_media_seconds: ~4 GB decoded) and 128 MiB of XML parsed whole
# (max_parse_memory_bytes: 2 GiB). One worker per document worker: DOCUMENT_WORKERS times this in all.
MAX_MEMORY_BYTES = 6 * 1024 ** 3
# Documents prepared (extracted, chunked, embedded) at once in one process: one per core of
# the 2-core machines citeline is measured on. OCR runs one Tesseract process per page on one
# thread, so a second document keeps the other core busy; the encoder is locked, one batch at a time.
DOCUMENT_WORKERS = 2
DEFAULT_GRACE_DAYS = 7.0


@dataclass(frozen=True)
class IndexSettings:
    db: str = DEFAULT_DB
    model: str = DEFAULT_MODEL
    strategy: str = DEFAULT_STRATEGY
    budget: int = 512  # characters per chunk
    overlap: int = 64  # characters repeated from the previous chunk (strategies B, D, F)
    precision: str = "auto"  # encoder: auto | fp32 | bf16
    batch_size: int = 16
    max_bytes: int = 100 * 1024 * 1024  # larger files fail as too-large instead of being loaded
    timeout_s: float = 300.0  # per document
    max_memory_bytes: int = MAX_MEMORY_BYTES  # per extraction worker; 0: no ceiling
    ocr_lang: str = "auto"
    whisper_model: str = ""  # a CTranslate2 Whisper folder; empty: the packaged tiny.en
    # Store word-piece vectors for MaxSim (index/tokens.py), from the pass that embeds each chunk:
    # True/False as `index --token-vectors/--no-token-vectors` says (recorded in the index);
    # None keeps the index's choice (yes unless turned off). Flows resolve it to a bool.
    token_vectors: bool | None = None
    # A document a sync forgets keeps its chunk rows, unserved, this long: a share that comes
    # back (unmounted, restored from a backup) costs no re-embedding (Store.forget_documents).
    grace_days: float = DEFAULT_GRACE_DAYS
