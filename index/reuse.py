"""An index's stored work, read for reuse by the process that prepares a document (pipeline/reuse.py).

Opened from the index path in the settings, so a Dask worker in another process reads
it as the flow's own threads do; reads see one committed version of each table, so a
concurrent write of the single writer never shows a half-written document.
"""
from __future__ import annotations

from citeline.index.filters import equals
from citeline.index.store import Store
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.tables import chunks_table_name

VECTOR_COLUMNS = ("chunk_id", "text", "vector", "tokens")
LENDER_COLUMNS = ("doc_id", "source", "path", "status", "sha256", "title", "canonical", "segments", "notes",
                  "extractor", "extractor_version")


class StoredChunks:
    """The chunk rows of ``stamp``'s table in ``store``: only vectors of the same embedding are reused."""

    def __init__(self, store: Store, stamp: IndexStamp):
        self.store = store
        self.table = chunks_table_name(stamp)

    def chunk_vectors(self, doc_id: str) -> list[dict]:
        """The document's stored rows (``VECTOR_COLUMNS``); none when the table does not exist yet."""
        if not self.store.has_table(self.table):
            return []
        return self.store.chunk_rows(VECTOR_COLUMNS, equals("doc_id", doc_id), table=self.table)

    def records_with(self, sha256: str) -> list[dict]:
        """The document records of these bytes (``LENDER_COLUMNS``), oldest first: one lends its work."""
        rows = self.store.document_rows([*LENDER_COLUMNS, "created_at"], equals("sha256", sha256))
        return sorted(rows, key=lambda r: (r["created_at"], r["doc_id"]))
