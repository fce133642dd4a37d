"""An index's health as operators see it in the Prefect UI (tasks/report.py ``publish_health``):
its documents by state, rows, model, the last good sync and the last check, and the documents
failing now."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

# The index's table of these notes: key/value rows, as META's. Not in META: a running service
# re-opens its snapshot when META moves, and every sync notes its end.
HEALTH = "health"
# Its keys:
LAST_SYNC = "last_sync"  # every sync that ran to its end: when, which folder, its state and summary
LAST_GOOD_SYNC = "last_good_sync"  # the last of them that ended Completed
LAST_CHECK = "last_check"  # the last check-repair: violations found, repairs, violations left


@dataclass(frozen=True)
class SyncNote:
    """A sync that ran to its end."""

    at: str  # ISO 8601, UTC
    root: str  # the folder synced, as the index stores it
    state: str  # the run's final state: Completed, DocumentsFailed, DeletionsHeld, TooManyFailed
    line: str  # its summary line (RunSummary.line)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: str | None) -> "SyncNote | None":
        return cls(**json.loads(raw)) if raw else None


@dataclass(frozen=True)
class CheckNote:
    """A check of the index's invariants (``citeline check --repair``, the check-repair deployment)."""

    at: str
    found: int  # violations the first check found
    repairs: int
    remaining: int  # violations the check after the repair found
    rules: tuple[str, ...] = ()  # the rules still violated, each once

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: str | None) -> "CheckNote | None":
        if not raw:
            return None
        fields = json.loads(raw)
        return cls(**{**fields, "rules": tuple(fields.get("rules", ()))})


@dataclass(frozen=True)
class FailingDocument:
    """A document whose record says failed, now."""

    path: str  # as the index names it (relative to its root)
    source: str  # as the index stores it (absolute, escaped): what retry-failed's path takes
    stage: str
    reason: str
    attempts: int
    since: str  # ISO 8601, UTC: the attempt that failed last (an unchanged file is not read again)


@dataclass(frozen=True)
class IndexHealth:
    """What ``index-health`` shows."""

    db: str
    by_state: dict[str, int] = field(default_factory=dict)  # a record's status -> documents
    rows: int = 0
    model: str = ""  # "" before the first document
    dim: int = 0
    strategy: str = ""
    rebuilding: str = ""  # the chunks table a re-index builds and has not switched to yet
    last_sync: SyncNote | None = None
    last_good_sync: SyncNote | None = None
    last_check: CheckNote | None = None
    failing: tuple[FailingDocument, ...] = ()
