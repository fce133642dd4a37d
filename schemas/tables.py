"""The LanceDB layout, written by hand so that schemas/ needs only pyarrow."""
from __future__ import annotations

import hashlib
import secrets

import pyarrow as pa

from citeline.schemas.health import HEALTH  # noqa: F401 - the table of schemas/health.py's notes
from citeline.schemas.stamp import STAMP_COLUMNS, IndexStamp

DOCUMENTS = "documents"
META = "meta"  # key/value rows; "active" names the chunks table queries use
ROOT_KEY = "root:"  # meta rows "root:<path>" -> <path>: the folders and files synced into the index
CALIBRATION_KEY = "calibration:"  # meta rows "calibration:<chunks table>" -> its gate calibration (JSON)
CHUNKS_PREFIX = "chunks_"
TOKENS_PREFIX = "tokens_"  # twin of a chunks table (unless turned off): its chunks' word-piece vectors
STAMP_KEY = b"citeline.stamp"

META_SCHEMA = pa.schema([
    pa.field("key", pa.string(), nullable=False),
    pa.field("value", pa.string(), nullable=False),
])


def chunks_table_name(stamp: IndexStamp) -> str:
    """One chunks table per stamp, so a re-index builds beside the live table."""
    return CHUNKS_PREFIX + hashlib.sha256(stamp.to_json().encode()).hexdigest()[:12]


def tokens_table_name(stamp: IndexStamp) -> str:
    """The token-vector twin of ``chunks_table_name(stamp)`` (same model, same chunks)."""
    return TOKENS_PREFIX + chunks_table_name(stamp).removeprefix(CHUNKS_PREFIX)


# A chunk's unit word-piece vectors, [CLS]/[SEP] dropped, as int8 with one scale per word-piece
# (schemas/tokens.py ``quantize``): ``vectors`` holds (count, embed_dim) int8 bytes, row-major, and
# ``scale`` count float16 scales, row ``i`` being ``vectors[i] * scale[i]``. 386 bytes a MiniLM
# word-piece against 768 as float16. Version 1 (tables without TOKENS_VERSION_KEY) held float16
# bytes and no scale: still read, and rebuilt by the next run that keeps token vectors.
TOKENS_VERSION = 2
TOKENS_VERSION_KEY = b"citeline.tokens"
TOKENS_SCHEMA = pa.schema([
    pa.field("chunk_id", pa.string(), nullable=False),
    pa.field("count", pa.int32(), nullable=False),
    pa.field("scale", pa.binary(), nullable=False),
    pa.field("vectors", pa.large_binary(), nullable=False),
], metadata={TOKENS_VERSION_KEY: str(TOKENS_VERSION).encode()})
# The meta row saying whether the index keeps token vectors: "off" after `index --no-token-vectors`
# (a sync without the flag then stores none), "on" (or no row: the default) otherwise.
TOKENS_KEY = "token_vectors"

_TS = pa.timestamp("us", tz="UTC")

STAMP_FIELDS = [
    pa.field(name, pa.int32() if name == "embed_dim" else pa.string(), nullable=False) for name in STAMP_COLUMNS
]

STAT_FIELDS = [pa.field("mtime_ns", pa.int64()), pa.field("inode", pa.int64()), pa.field("device", pa.int64())]

# Which write of a document its chunk rows came from: a number drawn for each write of a
# document's rows and stored on the rows and on the record, committed in that order. A row
# whose generation no record holds was written by a run killed (or refused by a full disk)
# before its record: readers do not see it and the next sync deletes it (Store.unowned_generations).
# Null on rows and records written before generations were kept: those count as owned.
GENERATION = "generation"
GENERATION_FIELD = pa.field(GENERATION, pa.int64())


# Documents a sync forgot whose chunk rows are kept for a grace period (Store.forget_documents):
# one row per forgotten write, by the generation its rows carry. Those rows are owned by no
# record, so no reader sees them; a file that comes back within the grace period keeps their
# vectors (pipeline/reuse.py), and the sync after it ends deletes them (Store.sweep_unowned).
FORGOTTEN = "forgotten"
FORGOTTEN_SCHEMA = pa.schema([
    pa.field("generation", pa.int64(), nullable=False),
    pa.field("doc_id", pa.string(), nullable=False),
    pa.field("path", pa.string(), nullable=False),
    pa.field("forgotten_at", pa.timestamp("us", tz="UTC"), nullable=False),
])


def new_generation() -> int:
    """A fresh generation: random, so two writes (two processes, two runs) never share one."""
    return secrets.randbits(63)

DOCUMENTS_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),  # absolute path
        pa.field("root", pa.string(), nullable=False),  # the folder it was indexed from
        pa.field("path", pa.string(), nullable=False),  # relative to root
        pa.field("sha256", pa.string()),  # of the bytes last read
        pa.field("size", pa.int64()),
        # The stat the bytes were read under: a file that still shows it is not read again.
        # Added after indexes existed (Store.migrate adds them, empty: hash once).
        *STAT_FIELDS,
        GENERATION_FIELD,  # of the chunk rows this record owns (added by Store.migrate)
        pa.field("status", pa.string(), nullable=False),
        pa.field("stage", pa.string()),
        pa.field("reason", pa.string()),
        pa.field("attempts", pa.int32(), nullable=False),
        pa.field("chunk_count", pa.int32(), nullable=False),
        pa.field("truncated", pa.int32(), nullable=False),
        pa.field("title", pa.string()),
        pa.field("canonical", pa.large_string()),
        pa.field("segments", pa.large_string()),  # JSON locator map
        pa.field("notes", pa.string()),
        *[f.with_nullable(True) for f in STAMP_FIELDS],
        pa.field("created_at", _TS),
        pa.field("updated_at", _TS),
    ]
)


def chunks_schema(stamp: IndexStamp) -> pa.Schema:
    """The chunks table for one index stamp; the stamp is also table metadata."""
    return pa.schema(
        [
            pa.field("chunk_id", pa.string(), nullable=False),
            pa.field("doc_id", pa.string(), nullable=False),
            pa.field("path", pa.string(), nullable=False),
            pa.field("title", pa.string()),
            pa.field("section", pa.string()),
            pa.field("ordinal", pa.int32(), nullable=False),
            pa.field("start", pa.int32(), nullable=False),
            pa.field("end", pa.int32(), nullable=False),
            pa.field("content", pa.string(), nullable=False),  # quoted
            pa.field("text", pa.string(), nullable=False),  # embedded
            pa.field("locators", pa.string()),  # JSON list of locator dicts
            pa.field("tokens", pa.int32(), nullable=False),
            pa.field("truncated", pa.bool_(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), stamp.embed_dim), nullable=False),
            *STAMP_FIELDS,
            GENERATION_FIELD,  # the write that stored the row; the record of the same one owns it
        ],
        metadata={STAMP_KEY: stamp.to_json().encode()},
    )
