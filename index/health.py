"""The index's health from its records and notes (schemas/health.py), and the notes runs leave."""
from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

from citeline.index.check import Violation
from citeline.index.lookup import shown_names
from citeline.index.store import Store
from citeline.schemas.health import (
    LAST_CHECK, LAST_GOOD_SYNC, LAST_SYNC, CheckNote, FailingDocument, IndexHealth, SyncNote,
)
from citeline.schemas.status import DocStatus

COMPLETED = "Completed"


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def note_sync(store: Store, root: str, state: str, line: str, at: str | None = None) -> None:
    """Note a sync that ran to its end (under the writer lock); a Completed one is the last good sync too."""
    note = SyncNote(at or utc_now(), root, state, line).to_json()
    store.set_health_note(LAST_SYNC, note)
    if state == COMPLETED:
        store.set_health_note(LAST_GOOD_SYNC, note)


def note_check(store: Store, found: list[Violation], repairs: int, remaining: list[Violation],
               at: str | None = None) -> None:
    """Note a check and repair (under the writer lock)."""
    rules = tuple(dict.fromkeys(v.rule for v in remaining))
    store.set_health_note(LAST_CHECK, CheckNote(at or utc_now(), len(found), repairs, len(remaining), rules).to_json())


def read_health(store: Store, db: str) -> IndexHealth:
    """The index's health now: every document record counted by its status, the failing ones
    listed (by path), the active stamp, rows, and the notes of the last sync and check."""
    records = store.document_rows(["doc_id", "source", "path", "status", "stage", "reason", "attempts", "updated_at"])
    failed = [r for r in records if r["status"] == DocStatus.FAILED]
    names = shown_names({r["doc_id"]: (r["source"], r["path"]) for r in failed})  # two roots' a.md told apart
    failing = sorted((FailingDocument(names[r["doc_id"]], r["source"], r["stage"] or "", r["reason"] or "",
                                      r["attempts"], _iso(r["updated_at"])) for r in failed),
                     key=lambda d: (d.path, d.source))
    stamp = store.stamp()
    notes = store.health_notes()
    rebuilding = store.staging_table() or ""
    return IndexHealth(
        db=db, by_state=dict(sorted(Counter(r["status"] for r in records).items())),
        rows=store.count_chunks() if stamp is not None else 0,
        model=stamp.embed_model if stamp else "", dim=stamp.embed_dim if stamp else 0,
        strategy=stamp.strategy if stamp else "", rebuilding=rebuilding if rebuilding != store.active_table() else "",
        last_sync=SyncNote.from_json(notes.get(LAST_SYNC)), last_good_sync=SyncNote.from_json(notes.get(LAST_GOOD_SYNC)),
        last_check=CheckNote.from_json(notes.get(LAST_CHECK)), failing=tuple(failing))


def _iso(value) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        value = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc).isoformat(timespec="seconds")
    return str(value)
