"""Re-chunk and re-embed one stored document into a staged chunks table."""
from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from citeline.index.faults import failpoint
from citeline.index.filters import equals
from citeline.index.store import chunk_table
from citeline.index.tokens import TokenVectors
from citeline.pipeline.chunk import chunk_document
from citeline.pipeline.prepare import chunk_id_for, rechunk
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.tables import GENERATION, chunks_table_name
from citeline.runtime.log import Events, get_logger
from citeline.runtime.handles import embedder_for, store_for, write_lock


@task(task_run_name="reindex {record[path]}", cache_policy=NO_CACHE, persist_result=False)
def reembed_document(record: dict, stamp: IndexStamp, settings: IndexSettings) -> int:
    """Write the document's chunks for ``stamp`` into its staged table; return the rows there.

    A document whose staged rows already match (an interrupted re-index resumed) is not
    embedded again.

    Raises:
        WriterLost: an S3 index's writer lease was lost (checked before the write).
    """
    store = store_for(settings.db)
    staged = chunks_table_name(stamp)
    if _already_staged(record, stamp, settings):
        return store.count_chunks(record["doc_id"], table=staged)
    prepared = rechunk(record, embedder_for(settings), stamp, settings)
    with write_lock(settings.db):
        # the record's generation: its rows in the new table are the ones it owns after the switch
        count = store.replace_chunks(stamp, record["doc_id"], chunk_table(prepared.rows, stamp),
                                     record.get(GENERATION), staged=True)
        # the new table's word-piece vectors, from the pass that embedded its chunks
        TokenVectors(store, stamp).write_rows(prepared.token_rows)
        failpoint("reindex.document")
    get_logger(path=record["path"]).info(Events.DOCUMENT_REEMBEDDED, chunks=count)
    return count


def _already_staged(record: dict, stamp: IndexStamp, settings: IndexSettings) -> bool:
    chunks = chunk_document(record["canonical"], record["title"] or "", record["doc_id"], stamp.strategy,
                            settings.budget, settings.overlap)
    expected = {chunk_id_for(record["doc_id"], c, stamp) for c in chunks}
    staged = store_for(settings.db).chunk_rows(["chunk_id", GENERATION], equals("doc_id", record["doc_id"]),
                                               table=chunks_table_name(stamp))
    return (len(staged) == len(expected) and {r["chunk_id"] for r in staged} == expected
            and all(r[GENERATION] == record.get(GENERATION) for r in staged))
