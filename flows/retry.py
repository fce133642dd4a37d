"""Re-run only the documents that failed, without re-scanning the folder."""
from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from citeline.flows.ingest import final_state, in_words, run_documents, stopped_by_signal, stopped_state
from citeline.index.faults import is_storage_error
from citeline.index.lock import writer_lock
from citeline.pipeline.plan import Todo
from citeline.schemas import interrupt
from citeline.schemas.paths import absolute, escape, is_under
from citeline.schemas.settings import IndexSettings
from citeline.schemas.status import DocStatus, NotDocument, RunSummary
from citeline.tasks.record import as_failures, record_failures
from citeline.tasks.report import publish_report
from citeline.runtime.signals import cooperative
from citeline.runtime.handles import stamp_for, store_for
from citeline.tasks.tokens import keeps_token_vectors, store_token_vectors


@flow(name="retry-failed", flow_run_name="retry failed in {settings.db}",
      task_runner=ThreadPoolTaskRunner(max_workers=2))
def retry_failed(settings: IndexSettings = IndexSettings(), path: str | None = None, wait_s: float = 0.0):
    """Index again every failed document (under ``path`` if given).

    Returns:
        RunSummary, with the same final states as ``index_folder``.
    """
    with writer_lock(settings.db, wait_s), cooperative():
        store = store_for(settings.db)
        stamp = stamp_for(settings)
        store.chunks(stamp, create=True)
        todo = failed_todo(store.document_rows(where=f"status = '{DocStatus.FAILED}'"), path)
        outcomes, failed = run_documents(todo, stamp, settings)
        if interrupt.requested():
            return stopped_by_signal(store, outcomes, failed, len(todo), 0)
        # failed before as unsupported or without text, some are no documents: skipped now, not indexed
        set_aside = tuple(NotDocument(o.path, o.what) for o in outcomes if o.status == DocStatus.NOT_DOCUMENT)
        outcomes = [o for o in outcomes if o.status == DocStatus.INDEXED]
        failures, stopped = as_failures(failed), None
        try:
            failures = record_failures(failed, settings) if failed else []
            if outcomes:
                store.finish_run(stamp)
                if keeps_token_vectors(settings, stamp):
                    store_token_vectors(settings, stamp)
        except Exception as exc:  # disk full: report what was done, the next run finishes
            if not is_storage_error(exc):
                raise
            stopped = exc
        summary = RunSummary(indexed=len(outcomes), failed=len(failures),
                             chunks=sum(o.chunks for o in outcomes),
                             truncated=sum(o.truncated for o in outcomes),
                             encoded=sum(o.encoded for o in outcomes), reused=sum(o.reused for o in outcomes),
                             rows=store.count_chunks(), failures=tuple(failures),
                             not_documents=set_aside, **in_words(outcomes, [], 0))
    publish_report(summary, path or settings.db, settings.db,
                   by=f"the retry of the failed documents under {path}" if path else "the retry of every failed document")
    return stopped_state(summary, stopped) if stopped else final_state(summary, None)


def failed_todo(records: list[dict], path: str | None) -> list[Todo]:
    """Failed records as work items, limited to ``path`` (a file or a folder, local or an
    ``s3://`` URL) when given."""
    scope = escape(absolute(path)) if path else None
    return [Todo.of_record(r) for r in sorted(records, key=lambda r: r["source"])
            if scope is None or is_under(r["source"], scope)]
