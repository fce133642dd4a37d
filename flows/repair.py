"""``citeline check --repair``: fix what can be fixed safely, then check again."""
# No `from __future__ import annotations`: Prefect validates flow parameters from the annotations.
from dataclasses import dataclass

from prefect import flow
from prefect.states import Completed, Failed
from prefect.task_runners import ThreadPoolTaskRunner

from citeline.flows.ingest import noted, run_documents
from citeline.index.check import Violation, check_index
from citeline.index.health import note_check
from citeline.index.lock import writer_lock
from citeline.index.repair import (
    Repair, delete_duplicates, delete_orphans, plan_repair, rebuild_full_text, remove_temp_files,
)
from citeline.pipeline.plan import Todo
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp
from citeline.flows.sync_plan import RECORD_COLUMNS
from citeline.runtime.log import get_logger
from citeline.tasks.record import record_failures
from citeline.tasks.report import publish_health
from citeline.runtime.handles import store_for
from citeline.tasks.tokens import keeps_token_vectors, store_token_vectors


@dataclass(frozen=True)
class RepairReport:
    found: tuple[Violation, ...]
    repairs: tuple[Repair, ...]
    remaining: tuple[Violation, ...]


@flow(name="repair-index", flow_run_name="repair {settings.db}", task_runner=ThreadPoolTaskRunner(max_workers=2))
def repair_index(settings: IndexSettings = IndexSettings(), wait_s: float = 0.0):
    """Check the index, repair under the writer lock, check again.

    ``settings`` must name the index's own model and strategy (the CLI takes them from
    its stamp): documents are indexed again with them.

    Returns:
        RepairReport; the run is Failed when violations remain after the repair.
    """
    log = get_logger(flow="repair-index", db=settings.db)
    with writer_lock(settings.db, wait_s):
        store = store_for(settings.db)
        stamp = store.require_stamp()
        found = check_index(store)
        records = {r["doc_id"]: r for r in store.document_rows(RECORD_COLUMNS)}
        plan = plan_repair(found, set(records))
        repairs = [*remove_temp_files(store), *delete_orphans(store, plan.orphans),
                   *delete_duplicates(store, plan.duplicates)]
        repairs += reindex(plan.reindex, records, stamp, settings)
        if plan.full_text:
            repairs.append(rebuild_full_text(store))
        elif repairs:
            store.finish_run(stamp)
        if repairs and keeps_token_vectors(settings, stamp):  # re-indexed chunks need theirs
            store_token_vectors(settings, stamp)
        remaining = check_index(store)
        noted(lambda: note_check(store, found, len(repairs), remaining))
    publish_health(settings.db, "a check and repair")
    report = RepairReport(tuple(found), tuple(repairs), tuple(remaining))
    for r in repairs:
        log.info("repair.done", action=r.action, subject=r.subject, detail=r.detail)
    message = f"{len(found)} violations found, {len(repairs)} repairs, {len(remaining)} violations remain"
    return Failed(message=message, data=report) if remaining else Completed(message=message, data=report)


def reindex(targets: dict[str, list[Violation]], records: dict[str, dict], stamp: IndexStamp,
            settings: IndexSettings) -> list[Repair]:
    """Index the affected documents again from their files, exactly as a sync would."""
    if not targets:
        return []
    # fresh: a damaged row's vector must not be kept because its text is unchanged
    todo = [Todo.of_record(records[doc_id], fresh=True) for doc_id in sorted(targets, key=lambda d: records[d]["source"])]
    why = {records[d]["path"]: "; ".join(f"{v.rule}: {v.detail}" for v in vs) for d, vs in targets.items()}
    outcomes, failed = run_documents(todo, stamp, settings)
    failures = record_failures(failed, settings) if failed else []
    return [
        *(Repair("reindexed", o.path, f"{o.chunks} chunks written (was {why[o.path]})") for o in outcomes),
        *(Repair("reindex-failed", f.path, f"[{f.stage}] {f.reason} (was {why[f.path]})") for f in failures),
    ]

