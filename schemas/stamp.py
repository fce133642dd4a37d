"""Stamps: what produced a row, so that stale rows can be told from current ones."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

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

    def columns(self) -> dict:
        """The stamp as the columns every chunk row and indexed document record carries."""
        return asdict(self)

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
        return {**self.index.columns(), "extractor": self.extractor, "extractor_version": self.extractor_version}


INDEX_STAMP_COLUMNS = tuple(f.name for f in fields(IndexStamp))
STAMP_COLUMNS = (*INDEX_STAMP_COLUMNS, "extractor", "extractor_version")


def stamp_differences(row: Mapping, expected: IndexStamp | Stamp) -> dict[str, tuple[object, object]]:
    """The stamp columns where ``row`` differs from ``expected``, as (row's, expected's).

    >>> stamp = IndexStamp("m", 384)
    >>> stamp_differences({**stamp.columns(), "strategy": "A"}, stamp)
    {'strategy': ('A', 'E')}
    """
    return {name: (row.get(name), value) for name, value in expected.columns().items() if row.get(name) != value}


def is_current(row: Mapping, expected: IndexStamp | Stamp) -> bool:
    """The one rule for stale rows: a row is current when every stamp column is today's.

    ``expected`` is the active index stamp, plus, for a document or a chunk row, the
    extractor that would read the file today at its current version.
    """
    return not stamp_differences(row, expected)
