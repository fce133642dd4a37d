"""Decide, per file, whether a run must (re)index it, may skip it, or must forget it.

Stat first, hash second: a file whose size, mtime, inode and device are those its record
was written from is skipped without being opened. Any other file the record knows is
read once by its task, which hashes those bytes and skips it when they are the recorded
ones (``pipeline.prepare.Known``), or extracts from the very same bytes when they are not.

Content identity: a new file of the size of a stored document may be that document
renamed, moved or copied. Its task hashes it and, when a stored document has those bytes,
indexes it from that document's canonical text and vectors: no extraction, no encoding
(``pipeline.prepare.same_bytes``). A renamed file's old record is then forgotten with the
other vanished ones, after the new one is written.

Deletion only from evidence: a record is forgotten only when the listing saw its folder and
not its file. Nothing under a folder the listing could not read is forgotten (``Unlisted``),
and a root that comes up empty, or a sync that would forget more than half of a root's
documents (and at least ``MASS_DELETE_MIN``), forgets nothing unless the operator allows it
(``allow_mass_delete``): an unmounted share is an empty folder. Both are ``Held`` in the plan,
and the run that holds them fails, so it is seen.

A failed file is read again only when it changed: bad input fails the same way every time,
so a sync lists a failed file whose stat is the one it failed with as still failing, opens
nothing and writes nothing for it (``is_still_failing``). A failure that says nothing
against the file (it vanished mid-read, the object store was unavailable, the write was
refused) is tried again on every sync.

A file that is no document (an archive, source code, a photo with no text) is set aside, not
failed, and passed by like an unchanged one while its stat is the one it was read under
(``is_set_aside``); a change reads it again, and it may then be a document.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from citeline.pipeline.extractor_versions import extractor_versions
from citeline.pipeline.prepare import Known, doc_id_for
from citeline.pipeline.record import Prior
from citeline.pipeline.reuse import Reuse, StoredWork
from citeline.pipeline.walk import FileStat, SourceFile, Unlisted
from citeline.schemas.errors import StoreUnavailable, Vanished
from citeline.schemas.paths import is_under
from citeline.schemas.stamp import IndexStamp, Stamp, is_current
from citeline.schemas.status import NOT_A_DOCUMENT, DocStatus, NotDocument

STAT_COLUMNS = ("size", "mtime_ns", "inode", "device")
# Failures that say nothing against the file: tried again by the next sync, changed or not.
RETRIED_KINDS = frozenset(error.kind for error in (Vanished, StoreUnavailable))
RETRIED_STAGES = frozenset({"write"})  # disk full, an I/O error of the index
# A sync forgets more than this share of a root's documents only when allowed; a small folder
# (fewer than MASS_DELETE_MIN to forget) is not held, unless it came up empty.
MASS_DELETE_SHARE = 0.5
MASS_DELETE_MIN = 10
ALLOW_FLAG = "--allow-mass-delete"


@dataclass(frozen=True)
class Todo:
    file: SourceFile
    prior: Prior = Prior()
    known: Known | None = None  # the file may be unchanged: skip it if its bytes are these
    same_size: bool = False  # a stored document has this new file's size: it may be a rename or a copy
    fresh: bool = False  # take nothing from the index (a repair does not trust the rows it replaces)
    forgotten: bool = False  # a sync forgot this document within the grace period: its rows are still stored

    @property
    def was_indexed(self) -> bool:
        """Whether the index may hold chunks of the document's previous version, whose
        vectors its unchanged chunks keep (pipeline/reuse.py); a new file reads nothing."""
        return self.prior.created_at is not None

    def reuse(self, stored: StoredWork) -> Reuse | None:
        """What the task may take from the index; None when there is nothing to look for."""
        if self.fresh or not (self.was_indexed or self.same_size or self.forgotten):
            return None
        return Reuse(stored, previous=self.was_indexed or self.forgotten, same_size=self.same_size)

    @classmethod
    def of_record(cls, record: dict, fresh: bool = False) -> "Todo":
        """A stored document as work: index its file again (retry; repair, ``fresh``)."""
        return cls(SourceFile(record["source"], record["root"], record["path"]), Prior.of(record), fresh=fresh)


@dataclass(frozen=True)
class Held:
    """Documents a sync did not forget, though their files were not listed, and why."""

    folder: str  # absolute, escaped: the folder that failed, or the root
    documents: int
    reason: str

    def line(self) -> str:
        noun = "document" if self.documents == 1 else "documents"
        return f"not forgetting {self.documents} {noun} under {self.folder}: {self.reason}"


@dataclass
class SyncPlan:
    todo: list[Todo] = field(default_factory=list)
    skip: list[SourceFile] = field(default_factory=list)
    gone: list[dict] = field(default_factory=list)  # stored records whose file is no longer there
    still_failing: list[SourceFile] = field(default_factory=list)  # failed, unchanged since: not read
    held: list[Held] = field(default_factory=list)  # records kept though not listed (``hold_deletions``)
    set_aside: list[NotDocument] = field(default_factory=list)  # no documents, unchanged since: not read


def is_current_record(record: dict, stamp: IndexStamp) -> bool:
    """Whether an indexed record's rows are today's: same index stamp, and its extractor
    still registered at the version that wrote it (looked up by name: no file is read)."""
    if record.get("status") != DocStatus.INDEXED:
        return False
    name = record.get("extractor")
    version = extractor_versions().get(name)  # read without importing the extractors: a no-op sync needs none
    return version is not None and is_current(record, Stamp(stamp, name, version))


def stat_matches(record: dict, seen: FileStat | None) -> bool:
    """Whether the listing saw the file the record was written from (a record without a
    stat, from before stats were kept, never matches: its file is hashed once)."""
    if seen is None:
        return False
    stored = tuple(record.get(name) for name in STAT_COLUMNS)
    return None not in stored and stored == (seen.size, seen.mtime_ns, seen.inode, seen.device)


def is_still_failing(record: dict, seen: FileStat | None) -> bool:
    """Whether a failed document's file is still the one that failed: bad input, unchanged
    since (the stat its failure was recorded with), that would fail the same way again.

    >>> failed = {"status": "failed", "stage": "extract", "reason": "encrypted: a password is needed",
    ...           "size": 9, "mtime_ns": 1, "inode": 2, "device": 3}
    >>> is_still_failing(failed, FileStat(9, 1, 2, 3)), is_still_failing(failed, FileStat(9, 5, 2, 3))
    (True, False)
    >>> is_still_failing({**failed, "reason": "store-unavailable: 503 SlowDown"}, FileStat(9, 1, 2, 3))
    False
    """
    if record.get("status") != DocStatus.FAILED or record.get("stage") in RETRIED_STAGES:
        return False
    kind = (record.get("reason") or "").split(":", 1)[0]
    return kind not in RETRIED_KINDS and stat_matches(record, seen)


def is_set_aside(record: dict, seen: FileStat | None) -> bool:
    """Whether a file set aside as no document is still the one that was read (its stat).

    >>> aside = {"status": "not-a-document", "size": 9, "mtime_ns": 1, "inode": 2, "device": 3}
    >>> is_set_aside(aside, FileStat(9, 1, 2, 3)), is_set_aside(aside, FileStat(10, 1, 2, 3))
    (True, False)
    """
    return record.get("status") == DocStatus.NOT_DOCUMENT and stat_matches(record, seen)


def not_document(file: SourceFile, record: dict) -> NotDocument:
    """A set-aside file as operators see it: its path and what its record says it is."""
    return NotDocument(file.path, (record.get("reason") or "").removeprefix(NOT_A_DOCUMENT))


def stored_sizes(records: list[dict]) -> set[int]:
    """The sizes of the indexed documents: a new file of another size is no rename or copy of
    one, and is extracted without looking for stored work (a first index looks for none)."""
    return {r["size"] for r in records if r.get("status") == DocStatus.INDEXED and r.get("size") is not None}


def plan_sync(files: list[SourceFile], records: list[dict], stamp: IndexStamp, prune_root: str | None,
              verify: bool = False, unlisted: tuple[Unlisted, ...] = (), allow_mass_delete: bool = False,
              forgotten: set[str] = frozenset()) -> SyncPlan:
    """Sort files into todo and skip; records whose source lies under ``prune_root`` with no file become gone.

    Args:
        files: what is on disk now, with the stat the listing saw.
        records: the stored document records (at least doc_id, root, source, status,
            sha256, the stat and stamp columns, attempts, created_at).
        prune_root: the folder being synced, or None when a single file was given
            (then nothing else is forgotten).
        verify: hash every known file even when its stat matches (a nightly check for
            changes that kept size and mtime), and read every failed one again.
        unlisted: what the listing could not read; nothing under it is forgotten.
        allow_mass_delete: forget what is gone even when the root came up empty or most of it went.
        forgotten: doc ids of documents a sync forgot whose rows are kept for the grace period: a
            file that comes back under one keeps the vectors of its unchanged chunks.
    """
    by_id = {r["doc_id"]: r for r in records}
    sizes = stored_sizes(records)
    plan = SyncPlan()
    seen = set()
    for file in files:
        doc_id = doc_id_for(file.source)
        seen.add(doc_id)
        record = by_id.get(doc_id)
        if record is None:
            plan.todo.append(Todo(file, same_size=file.stat is not None and file.stat.size in sizes,
                                  forgotten=doc_id in forgotten))
        elif not verify and is_still_failing(record, file.stat):
            plan.still_failing.append(file)
        elif not verify and is_set_aside(record, file.stat):
            plan.set_aside.append(not_document(file, record))
        elif not is_current_record(record, stamp):
            plan.todo.append(Todo(file, Prior.of(record)))
        elif not verify and stat_matches(record, file.stat):
            plan.skip.append(file)
        else:
            plan.todo.append(Todo(file, Prior.of(record), Known.of(record)))
    if prune_root is not None:
        # By path, not by the root a record was written with: a file first indexed alone
        # or through a subfolder is forgotten by a sync of any folder above it.
        under = [r for r in records if is_under(r["source"], prune_root)]
        arrived = frozenset(todo.file.stat.size for todo in plan.todo if todo.same_size)
        plan.gone, plan.held = hold_deletions([r for r in under if r["doc_id"] not in seen], len(under), prune_root,
                                              empty=not files, unlisted=unlisted, allow=allow_mass_delete,
                                              arrived=arrived)
    return plan


def hold_deletions(gone: list[dict], under: int, root: str, empty: bool, unlisted: tuple[Unlisted, ...] = (),
                   allow: bool = False, arrived: frozenset[int] = frozenset()) -> tuple[list[dict], list[Held]]:
    """The records a sync of ``root`` may forget, and those it holds back with why.

    A gone record with the size of a new file is likely renamed or moved (its new file is then
    indexed from its stored work, pipeline/prepare.py ``same_bytes``): it counts for no mass
    deletion and is never held by one, so renaming every file of a folder is an ordinary sync.

    >>> gone = [{"source": f"/docs/a/{i}.md"} for i in range(3)] + [{"source": "/docs/b.md"}]
    >>> kept, held = hold_deletions(gone, 20, "/docs", False, (Unlisted("/docs/a", "Permission denied"),))
    >>> [r["source"] for r in kept], held[0].line()
    (['/docs/b.md'], 'not forgetting 3 documents under /docs/a: it could not be listed (Permission denied)')
    >>> hold_deletions(gone, 4, "/docs", True)[1][0].line()
    'not forgetting 4 documents under /docs: the folder came up empty (a share not mounted?); --allow-mass-delete forgets them'
    >>> len(hold_deletions(gone, 4, "/docs", True, allow=True)[0])
    4
    >>> many = [{"source": f"/docs/{i}.md", "size": 10 + i} for i in range(12)]
    >>> hold_deletions(many, 12, "/docs", False)[1][0].line()
    'not forgetting 12 documents under /docs: that is 12 of its 12 documents; --allow-mass-delete forgets them'
    >>> len(hold_deletions(many, 12, "/docs", False, arrived=frozenset(range(10, 20)))[0])  # renamed: forgotten
    12

    Args:
        gone: the records under ``root`` whose files the listing did not see.
        under: how many records lie under ``root`` in all.
        empty: the listing found no file under ``root``.
        arrived: the sizes of the new files that may be a stored document renamed, moved or copied.
    """
    held = []
    for folder in unlisted:
        inside = [r for r in gone if is_under(r["source"], folder.path)]
        if inside:
            held.append(Held(folder.path, len(inside), f"it could not be listed ({folder.reason})"))
            gone = [r for r in gone if not is_under(r["source"], folder.path)]
    lost = [r for r in gone if r.get("size") not in arrived]
    if allow or not lost:
        return gone, held
    if empty:
        why = "the folder came up empty (a share not mounted?)"
    elif len(lost) > MASS_DELETE_SHARE * under and len(lost) >= MASS_DELETE_MIN:
        why = f"that is {len(lost)} of its {under} documents"
    else:
        return gone, held
    moved = [r for r in gone if r.get("size") in arrived]
    return moved, [*held, Held(root, len(lost), f"{why}; {ALLOW_FLAG} forgets them")]
