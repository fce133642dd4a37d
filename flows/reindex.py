"""Blue/green re-index: a new model (or strategy) built beside the live index, then switched."""
from dataclasses import dataclass

from prefect import flow
from prefect.futures import wait
from prefect.states import Completed, Failed
from prefect.task_runners import ThreadPoolTaskRunner

from citeline.index.lock import writer_lock
from citeline.pipeline.record import restamped_record
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.status import Failure
from citeline.schemas.tables import chunks_table_name
from citeline.tasks.log import get_logger
from citeline.tasks.reembed import reembed_document
from citeline.tasks.store import stamp_for, store_for
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
    with writer_lock(settings.db, wait_s):
        store = store_for(settings.db)
        old = store.require_stamp()
        new = stamp_for(settings)
        if new == old:
            return Completed(message="already current", data=ReindexSummary(old, new, 0, store.count_chunks(), False))
        store.staging(new)
        records = [r for r in store.document_rows() if r["canonical"] is not None]
        futures = {reembed_document.submit(r, new, settings): r for r in records}
        wait(list(futures))
        failures = tuple(Failure(r["path"], "embed", f.state.message or "re-embedding failed")
                         for f, r in futures.items() if not f.state.is_completed())
        if failures:
            summary = ReindexSummary(old, new, len(records), 0, False, failures)
            return Failed(message=f"{len(failures)} documents failed; the live index is unchanged", data=summary)
        store.finish_run(new, staged=True)
        # The new table keeps token vectors if the live one had them: switch only when filled.
        if keeps_token_vectors(settings, old):
            store_token_vectors(settings, new)
        store.activate(new)
        store.upsert_documents([restamped_record(r["doc_id"], new, store.count_chunks(r["doc_id"])) for r in store.document_rows(
            ["doc_id", "status"])])
        summary = ReindexSummary(old, new, len(records), store.count_chunks(), True)
    log.info("reindex.switched", old_table=chunks_table_name(old), new_table=chunks_table_name(new), rows=summary.rows)
    return Completed(message=summary.line(), data=summary)

