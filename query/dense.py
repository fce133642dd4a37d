"""Dense retrieval: cosine distance between the query vector and the chunk vectors."""
from __future__ import annotations

from index.store import Store
from pipeline.embed import Embedder
from schemas.errors import IndexMismatch
from schemas.stamp import IndexStamp

RESULT_COLUMNS = ["chunk_id", "doc_id", "path", "title", "section", "start", "end", "content", "locators"]


def dense_search(store: Store, embedder: Embedder, stamp: IndexStamp, query: str, k: int = 8) -> list[dict]:
    """The k chunks nearest to ``query``, best first, each with ``distance`` (1 - cosine).

    Raises:
        IndexMismatch: the embedder is not the model the index was built with.
    """
    if embedder.name != stamp.embed_model or embedder.dim != stamp.embed_dim:
        raise IndexMismatch(
            f"query model {embedder.name} ({embedder.dim}-d) differs from the index's "
            f"{stamp.embed_model} ({stamp.embed_dim}-d): their vectors are not comparable"
        )
    rows = store.dense_search(stamp, embedder.embed_query(query), k, RESULT_COLUMNS)
    for row in rows:
        row["distance"] = float(row.pop("_distance"))
    return rows
