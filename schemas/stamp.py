"""Stamps: what produced a row, so that stale rows can be told from current ones."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

PIPELINE_VERSION = "1"


@dataclass(frozen=True)
class IndexStamp:
    """What every row of one chunks table must share.

    Vectors from two embedding models are points in different spaces, so a table
    holds exactly one model; the chunk strategy decides which rows exist at all.
    """

    embed_model: str
    embed_dim: int
    pipeline_version: str = PIPELINE_VERSION
    strategy: str = "E"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str | bytes) -> "IndexStamp":
        return cls(**json.loads(raw))


@dataclass(frozen=True)
class Stamp:
    """Everything stamped on one chunk row: the index stamp plus its extractor."""

    index: IndexStamp
    extractor: str
    extractor_version: str

    def columns(self) -> dict:
        return {
            "embed_model": self.index.embed_model,
            "embed_dim": self.index.embed_dim,
            "pipeline_version": self.index.pipeline_version,
            "strategy": self.index.strategy,
            "extractor": self.extractor,
            "extractor_version": self.extractor_version,
        }
