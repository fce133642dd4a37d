"""Per-document outcomes: data, not exceptions, so a folder run can report them all."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class DocStatus(str, Enum):
    PENDING = "pending"
    INDEXED = "indexed"
    FAILED = "failed"


class Stage(str, Enum):
    READ = "read"
    EXTRACT = "extract"
    CHUNK = "chunk"
    EMBED = "embed"
    WRITE = "write"


@dataclass(frozen=True)
class DocError:
    """Why one document failed: the stage it reached, the error's kind and message."""

    stage: str
    kind: str
    message: str

    def reason(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True)
class Outcome:
    """What happened to one document in one run."""

    path: str
    status: str  # "indexed" | "failed" | "skipped" | "deleted"
    chunks: int = 0
    truncated: int = 0
    error: DocError | None = None
