"""Blue/green re-index: a new model (or strategy) built beside the live index, then switched."""
from collections import Counter
from dataclasses import dataclass, replace

from prefect import flow
from prefect.futures import wait
from prefect.states import Completed, Failed
from prefect.task_runners import ThreadPoolTaskRunner

from citeline.index.faults import failpoint, is_storage_error, set_up_writes, storage_reason
from citeline.index.lease import check_writer
from citeline.index.lock import writer_lock
from citeline.index.store import Store
from citeline.pipeline.record import restamped_record
from citeline.schemas import interrupt
from citeline.schemas.errors import WriterLost
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.status import Failure
from citeline.schemas.tables import chunks_table_name
from citeline.tasks.calibrate import calibrate_gate
from citeline.runtime.log import get_logger
from citeline.tasks.reembed import reembed_document
from citeline.tasks.report import publish_health
from citeline.runtime.signals import cooperative
from citeline.runtime.handles import stamp_for, store_for
from citeline.tasks.tokens import keeps_token_vectors, store_token_vectors


@dataclass(frozen=True)
class ReindexSummary:
    old: IndexStamp
    new: IndexStamp
    documents: int
    rows: int
    switched: bool
    failures: tuple[Failure, ...] = ()

    def line(self) -> str:
        verb = "switched to" if self.switched else "NOT switched to"
        return (f"{verb} {self.new.embed_model} ({self.new.embed_dim}-d), strategy {self.new.strategy}: "
                f"{self.documents} documents, {self.rows} rows; previous: {self.old.embed_model}, "
                f"strategy {self.old.strategy}")


@flow(name="reindex", flow_run_name="reindex {settings.db} to {settings.model}",
      task_runner=ThreadPoolTaskRunner(max_workers=2))
def reindex(settings: IndexSettings, wait_s: float = 0.0):
    """Re-chunk and re-embed every stored document for ``settings``' model and strategy.

    The stored canonical text is used, so nothing is extracted again. Queries keep using
    the live table until every document is in the new one; then one commit switches.
    An interrupted run resumes: documents already complete in the new table are skipped.
    """
    log = get_logger(flow="reindex", db=settings.db)
    with writer_lock(settings.db, wait_s), cooperative():
        store = store_for(settings.db)
        old = store.require_stamp()
        new = stamp_for(settings)
        if new == old:
            return Completed(message="already current", data=ReindexSummary(old, new, 0, store.count_chunks(), False))
        staged = chunks_table_name(new)
        with set_up_writes(settings.db, "; nothing was re-indexed, the live index is unchanged"):
            store.staging(new)
            store.mark_staging(new)
        # the documents' tasks keep word-piece vectors from their pass when the live index keeps them
        settings = replace(settings, token_vectors=keeps_token_vectors(settings, old))
        records = [r for r in store.document_rows() if r["canonical"] is not None]
        if pruned := prune_unrecorded(store, staged, {r["doc_id"] for r in records}):
            log.warning("reindex.pruned", table=staged, documents=len(pruned))
        futures = {reembed_document.submit(r, new, settings): r for r in records}
        if not wait_unless_stopped(list(futures)):
            return stopped_by_signal(old, new, futures)
        raise_writer_lost(futures)
        failures = tuple(reembed_failure(r["path"], f.state) for f, r in futures.items() if not f.state.is_completed())
        if failures:
            summary = ReindexSummary(old, new, len(records), 0, False, failures)
            return Failed(message=f"{len(failures)} documents failed; the live index is unchanged", data=summary)
        try:
            check_writer(settings.db)  # S3: a run whose lease was lost neither finishes nor switches
            store.finish_run(new, staged=True)
            # The new table keeps token vectors if the live one had them: switch only when filled.
            if keeps_token_vectors(settings, old):
                store_token_vectors(settings, new)
        except Exception as exc:  # disk full: the staged table waits, complete, for the next run
            if not is_storage_error(exc):
                raise
            summary = ReindexSummary(old, new, len(records), 0, False)
            return Failed(message=f"not switched, the live index is unchanged: {storage_reason(exc)}; run the re-index again "
                                  "once there is space: it resumes", data=summary)
        expected = {r["doc_id"]: (r["path"], f.result()) for f, r in futures.items()}
        if problems := unpublishable(store.rows_per_document(staged), expected):
            summary = ReindexSummary(old, new, len(records), 0, False)
            return Failed(message=f"not switched, the live index is unchanged: {'; '.join(problems[:5])}"
                                  + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""),
                          data=summary)
        check_writer(settings.db)
        failpoint("reindex.switch")
        store.activate(new)
        failpoint("reindex.restamp")
        rows = store.rows_per_document()  # one scan, not one per document
        store.upsert_documents([restamped_record(r["doc_id"], new, rows[r["doc_id"]])
                                for r in store.document_rows(["doc_id", "status"])])
        calibrate_gate(settings, new, force=True)  # the new model's distances get their own cut
        summary = ReindexSummary(old, new, len(records), store.count_chunks(), True)
    log.info("reindex.switched", old_table=chunks_table_name(old), new_table=staged, rows=summary.rows)
    publish_health(settings.db, f"the re-index to {new.embed_model}, strategy {new.strategy}")
    return Completed(message=summary.line(), data=summary)


def reembed_failure(path: str, state) -> Failure:
    """A document the re-index could not stage, as a person reads it: a storage write the disk
    refused is stage ``write`` with its cause (no Prefect wording, no Rust source path)."""
    exc = state.result(raise_on_failure=False)
    if isinstance(exc, BaseException) and is_storage_error(exc):
        return Failure(path, "write", storage_reason(exc))
    if isinstance(exc, BaseException):
        return Failure(path, "embed", f"{type(exc).__name__}: {exc}")
    return Failure(path, "embed", state.message or "re-embedding failed")


STOP_POLL_S = 0.2  # how often the wait for the documents looks for a stop request


def wait_unless_stopped(futures: list) -> bool:
    """Wait for every future; False as soon as the run is told to stop (SIGTERM, SIGINT).

    Asked once more after the wait: the documents a signal stops all end within one poll
    (each raises Stopped), and read as failures they turned a Ctrl-C into "documents failed"."""
    while wait(futures, timeout=STOP_POLL_S).not_done and not interrupt.requested():
        pass
    if interrupt.requested():
        return False
    for future in futures:
        # Prefect's wait with a timeout leaves a done future's state to be read back from the
        # API, where it may still say Running; wait() takes the final state from the future itself
        # (a WriterLost read as Running was reported as "documents failed", not writer-lost).
        future.wait()
    return True


def stopped_by_signal(old: IndexStamp, new: IndexStamp, futures: dict):
    """Told to stop before the switch: the live table is untouched, the staged one keeps what
    its documents wrote and its ``staging`` mark (gc keeps it), so the same re-index resumes."""
    done = sum(f.state.is_completed() for f in futures)
    summary = ReindexSummary(old, new, len(futures), 0, False)
    name = interrupt.signal_name(interrupt.requested())
    return Failed(name="Stopped", data=summary,
                  message=f"stopped by signal {name} before the switch: {done} of {len(futures)} documents "
                          "re-embedded; the live index is unchanged; run the same `citeline reindex` to resume")


def raise_writer_lost(futures) -> None:
    """Stop the run as a sync stops when its S3 lease was lost: with the WriterLost, not as
    documents that failed."""
    for future in futures:
        if future.state.is_failed() and isinstance(lost := future.state.result(raise_on_failure=False), WriterLost):
            raise lost


def prune_unrecorded(store: Store, table: str, recorded: set[str]) -> list[str]:
    """Delete the rows of documents without a record from a reused staging table.

    The table may be an earlier re-index's (the model switched back) or an interrupted
    one's; a document deleted since has no record, and nothing else would remove it.

    Returns:
        The doc ids whose rows were deleted.
    """
    gone = sorted(set(store.rows_per_document(table)) - recorded)
    store.delete_chunks_of(table, gone)
    return gone


def unpublishable(staged: Counter, expected: dict[str, tuple[str, int]]) -> list[str]:
    """Why the staged table must not go live: rows of unrecorded documents, or counts off.

    Args:
        staged: rows per doc id in the staged table.
        expected: doc id -> (path, rows its re-embedding reported) for every recorded document.

    >>> unpublishable(Counter({"a": 2, "x": 1}), {"a": ("a.md", 2), "b": ("b.md", 1)})
    ['1 rows of document x, which has no record', 'b.md: 0 rows staged, 1 expected']
    """
    return [
        *(f"{staged[d]} rows of document {d}, which has no record" for d in sorted(set(staged) - set(expected))),
        *(f"{path}: {staged[d]} rows staged, {rows} expected"
          for d, (path, rows) in sorted(expected.items(), key=lambda e: e[1][0]) if staged[d] != rows),
    ]
