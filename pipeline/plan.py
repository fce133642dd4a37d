"""Decide, per file, whether a run must (re)index it, may skip it, or must forget it."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from citeline import extractors
from citeline.pipeline.prepare import SNIFF_BYTES, doc_id_for
from citeline.pipeline.record import Prior
from citeline.pipeline.walk import SourceFile
from citeline.schemas.errors import UnsupportedType
from citeline.schemas.paths import is_under, os_path
from citeline.schemas.stamp import IndexStamp, Stamp, is_current
from citeline.schemas.status import DocStatus


@dataclass(frozen=True)
class Todo:
    file: SourceFile
    prior: Prior = Prior()

    @classmethod
    def of_record(cls, record: dict) -> "Todo":
        """A stored document as work: index its file again (retry, repair)."""
        return cls(SourceFile(record["source"], record["root"], record["path"]), Prior.of(record))


@dataclass
class SyncPlan:
    todo: list[Todo] = field(default_factory=list)
    skip: list[SourceFile] = field(default_factory=list)
    gone: list[dict] = field(default_factory=list)  # stored records whose file is no longer there


def file_digest(path: str) -> tuple[str, bytes] | None:
    """sha256 of the file and its first bytes, or None if it cannot be read now."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
            digest.update(head)
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest(), head


def is_unchanged(record: dict, file: SourceFile, stamp: IndexStamp) -> bool:
    """True when the stored rows came from these bytes with today's code and model."""
    if record.get("status") != DocStatus.INDEXED:
        return False
    found = file_digest(os_path(file.source))
    if found is None or found[0] != record.get("sha256"):
        return False
    try:
        module = extractors.for_bytes(found[1], file.path)
    except UnsupportedType:  # no extractor claims it now: index it again, to record why it fails
        return False
    return is_current(record, Stamp(stamp, module.NAME, module.VERSION))


def plan_sync(files: list[SourceFile], records: list[dict], stamp: IndexStamp, prune_root: str | None) -> SyncPlan:
    """Sort files into todo and skip; records whose source lies under ``prune_root`` with no file become gone.

    Args:
        files: what is on disk now.
        records: the stored document records (at least doc_id, root, source, status,
            sha256, stamps, attempts, created_at).
        prune_root: the folder being synced, or None when a single file was given
            (then nothing else is forgotten).
    """
    by_id = {r["doc_id"]: r for r in records}
    plan = SyncPlan()
    seen = set()
    for file in files:
        doc_id = doc_id_for(file.source)
        seen.add(doc_id)
        record = by_id.get(doc_id)
        if record is not None and is_unchanged(record, file, stamp):
            plan.skip.append(file)
        else:
            plan.todo.append(Todo(file, Prior.of(record)))
    if prune_root is not None:
        # By path, not by the root a record was written with: a file first indexed alone
        # or through a subfolder is forgotten by a sync of any folder above it.
        plan.gone = [r for r in records if is_under(r["source"], prune_root) and r["doc_id"] not in seen]
    return plan
