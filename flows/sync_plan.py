"""What a sync of a folder must do, read from the folder and the index without Prefect.

``plan_folder`` is the flow's plan (flows/ingest.py). ``unchanged`` answers the most frequent
command of all, a scheduled ``citeline index`` of a folder where nothing changed, before
Prefect is imported: such a sync writes nothing, yet it paid ~1.2 s of imports and flow-run
start (its whole process is 0.8 s without them, 2,000 files) and left 94 rows in the Prefect
server's database (docs/benchmarks.md, "A sync that would write nothing"). The issue's
option "read-only work without a flow run": every run that writes is
still a flow run.

``unchanged`` is conservative: it says "nothing to do" only when every step the flow takes
would write nothing — no file to read, none to forget (nor any held back: that run fails, to be
seen), no leftover of a killed writer (a temporary file, chunk rows no record owns), no
full-text index behind its rows, a stored gate calibration that still fits, no token table to
keep current — and anything it cannot decide cheaply (an object store, a token table) runs the
flow. A step added to ``flows.ingest.index_folder`` that writes needs its condition here too.
"""
from __future__ import annotations

import os
from pathlib import Path

from citeline.index.store import Store, index_exists
from citeline.index.tokens import keeps, token_vectors_due
from citeline.pipeline.embed import resolve_model
from citeline.pipeline.objects import is_object
from citeline.pipeline.plan import STAT_COLUMNS, SyncPlan, plan_sync
from citeline.pipeline.walk import Selection, list_folder
from citeline.query.calibrate import calibration_due
from citeline.schemas.paths import absolute, escape, is_remote
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import PIPELINE_VERSION, STAMP_COLUMNS, IndexStamp
from citeline.schemas.status import RunSummary
from citeline.schemas.tables import TOKENS_KEY
from citeline.runtime.log import Events, get_logger

RECORD_COLUMNS = ["doc_id", "root", "source", "path", "status", "stage", "reason", "sha256", "attempts", "created_at",
                  *STAT_COLUMNS, *STAMP_COLUMNS]


def plan_folder(root: str, store: Store, stamp: IndexStamp, selection: Selection = Selection(),
                verify: bool = False, allow_mass_delete: bool = False) -> SyncPlan:
    """What this run must do; a single file is indexed without forgetting its neighbours, and
    nothing is forgotten without evidence (pipeline/plan.py ``hold_deletions``)."""
    listing = list_folder(root, selection, own_folders(store.uri))
    for folder in listing.left_out:
        get_logger().info(Events.FOLDER_LEFT_OUT, folder=folder, why="citeline's own files: the index, or Prefect's home")
    prune = synced_root(root) if is_folder(root) else None
    return plan_sync(listing.files, store.document_rows(RECORD_COLUMNS), stamp, prune, verify, listing.unlisted,
                     allow_mass_delete, store.forgotten_ids())


def own_folders(db: str) -> tuple[str, ...]:
    """The folders a sync never indexes though they lie in the folder it syncs: the index it
    writes (its LanceDB files failed on every sync) and the homes of Prefect and of citeline's
    server (their databases and logs)."""
    homes = (os.environ.get("PREFECT_HOME"), os.environ.get("CITELINE_HOME"))
    return tuple(absolute(p) for p in (db, *homes) if p and not is_remote(p))


def synced_root(root: str) -> str:
    """``root`` as the index stores it: resolved, escaped (schemas/paths.py); an
    object-storage URL as given, less a trailing slash."""
    return escape(absolute(root))


def is_folder(root: str) -> bool:
    """Whether ``root`` is a folder (or a prefix of objects), whose vanished files a sync forgets."""
    if is_remote(root):
        return not is_object(root.rstrip("/"))
    return Path(root).expanduser().is_dir()


def unchanged(root: str, settings: IndexSettings, selection: Selection = Selection()) -> RunSummary | None:
    """The summary of a sync of ``root`` that would write nothing, or None when the flow must run.

    Read-only: nothing is created, cleaned or locked. Another writer's run in progress shows
    as work (files not yet recorded, rows ahead of the full-text index), and work runs the
    flow, which waits for the writer lock as before.
    """
    if is_remote(root) or is_remote(settings.db) or not index_exists(settings.db):
        return None
    store = Store(settings.db)
    stored = store.stamp()
    if stored is None or stored != IndexStamp(resolve_model(settings.model).name, stored.embed_dim, PIPELINE_VERSION,
                                              settings.strategy.upper()):
        return None  # a new index, or other settings: the flow creates it or says what differs
    if store.needs_migration() or store.debris_generations():  # the flow migrates; it sweeps rows no record owns
        return None
    if store.purge_due(settings.grace_days):  # the flow purges the rows of documents forgotten long enough ago
        return None
    keep = keeps(store, settings.token_vectors)
    if settings.token_vectors is not None and store.meta_value(TOKENS_KEY) != ("on" if keep else "off"):
        return None  # the flow records the operator's choice
    plan = plan_folder(root, store, stored, selection)  # first: where a sync with work finds it
    if (plan.todo or plan.gone or plan.held or store.temp_files() or synced_root(root) not in store.roots()
            or store.needs_finish() or token_vectors_due(store, stored, keep) or calibration_due(store, stored)):
        return None
    return RunSummary(skipped=len(plan.skip), rows=store.count_chunks(owned=True), still_failing=len(plan.still_failing),
                      not_documents=tuple(plan.set_aside))
