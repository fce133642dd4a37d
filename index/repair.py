"""What ``citeline check --repair`` may fix, and the fixes that need only the store.

A violation is repaired in one of three safe ways: the document it concerns is indexed
again (its rows are rebuilt from its file by the ordinary pipeline: see flows/repair.py),
chunks that belong to no document are deleted, or the full-text index is rebuilt. Rows
are never edited in place: the pipeline is the only thing that makes them.
Call everything here under the index's writer lock.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from citeline.index.check import Violation
from citeline.index.filters import one_of
from citeline.index.store import Store

# Rules whose cure is to index the document again: its rows are wrong or missing.
REINDEX_RULES = frozenset({"chunk_count", "empty", "quote", "stamp", "norm", "duplicate"})
# "rows" (the total) is the sum of the per-document counts: it heals with them.
DERIVED_RULES = frozenset({"rows"})


@dataclass(frozen=True)
class RepairPlan:
    reindex: dict[str, list[Violation]] = field(default_factory=dict)  # doc_id -> why
    orphans: dict[str, Violation] = field(default_factory=dict)  # doc_id without a record -> why
    duplicates: tuple[str, ...] = ()  # chunk ids stored more than once
    full_text: bool = False
    unfixable: tuple[Violation, ...] = ()


@dataclass(frozen=True)
class Repair:
    """One thing repair did, as an operator reads it."""

    action: str  # reindexed | reindex-failed | deleted-orphans | deleted-duplicates | rebuilt-full-text | removed-temp-files
    subject: str
    detail: str

    def line(self) -> str:
        return f"{self.action}: {self.subject}: {self.detail}"


def plan_repair(violations: list[Violation], known_doc_ids: set[str]) -> RepairPlan:
    """Sort violations into the fixes above; what fits none is left for a person."""
    reindex: dict[str, list[Violation]] = {}
    orphans: dict[str, Violation] = {}
    duplicates, unfixable, full_text = [], [], False
    for v in violations:
        if v.rule == "orphan-chunks" and v.doc_id:
            orphans[v.doc_id] = v
        elif v.rule == "full-text":
            full_text = True
        elif v.rule in REINDEX_RULES and v.doc_id in known_doc_ids:
            reindex.setdefault(v.doc_id, []).append(v)
            if v.rule == "duplicate":
                duplicates.append(v.subject)
        elif v.rule in REINDEX_RULES and v.doc_id:
            orphans.setdefault(v.doc_id, v)  # a bad row of a document nobody records: it goes
        elif v.rule not in DERIVED_RULES:
            unfixable.append(v)
    return RepairPlan(reindex, orphans, tuple(duplicates), full_text, tuple(unfixable))


def delete_orphans(store: Store, orphans: dict[str, Violation]) -> list[Repair]:
    """Drop chunks whose document has no record: nothing can cite them correctly."""
    stamp = store.stamp()
    store.delete_documents(sorted(orphans), stamp)
    return [Repair("deleted-orphans", doc_id, why.detail) for doc_id, why in sorted(orphans.items())]


def delete_duplicates(store: Store, chunk_ids: tuple[str, ...]) -> list[Repair]:
    """Drop every copy of a duplicated chunk; re-indexing its document writes it back once.

    A merge keyed on chunk_id cannot tell two copies of one key apart, so the copies
    go first.
    """
    if not chunk_ids:
        return []
    store.chunks(store.stamp()).delete(one_of("chunk_id", chunk_ids))
    return [Repair("deleted-duplicates", c, "every copy removed before its document is indexed again")
            for c in chunk_ids]


def rebuild_full_text(store: Store) -> Repair:
    """Build the full-text index again over every row, then compact."""
    stamp = store.stamp()
    store.rebuild_full_text(stamp)
    store.finish_run(stamp)
    indexed, unindexed = store.fts_coverage()
    return Repair("rebuilt-full-text", "index", f"the full-text index now covers {indexed} rows "
                                                f"({unindexed} not yet indexed)")


def remove_temp_files(store: Store) -> list[Repair]:
    """Half-written data files a killed writer left behind."""
    return [Repair("removed-temp-files", path, "left by a writer that was killed mid-write")
            for path in store.clean_temp_files()]
