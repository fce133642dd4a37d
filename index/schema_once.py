"""A LanceDB table as a query process reads it: its schema looked up once, not by every query.

``LanceTable.schema`` is a round trip to LanceDB's event loop thread, and LanceDB's query builders
read it several times for each query they build and run (``search`` to find the vector column,
``_blob_auto_row_id_enabled`` once or twice more, even with row ids declined): ~15 look-ups a
reranked question at 100,000 chunks, ~9 ms of its ~80 (docs/benchmarks.md section 26). A table
object is pinned at the version it was opened at (LanceDB re-checks for new versions only when
asked to), and a reader never changes its schema, so one answer serves them all.
"""
from __future__ import annotations

from lancedb.table import LanceTable


class SchemaOnce(LanceTable):
    """A view of an open ``LanceTable`` (the same table state) whose ``schema`` is read once."""

    @property
    def schema(self):
        found = self.__dict__.get("_schema_once")
        if found is None:
            found = self.__dict__["_schema_once"] = LanceTable.schema.fget(self)
        return found


def schema_once(table):
    """``table`` seen through :class:`SchemaOnce`; any other kind of table (a remote one) as it is."""
    if type(table) is not LanceTable:
        return table
    view = SchemaOnce.__new__(SchemaOnce)
    view.__dict__.update(table.__dict__)
    return view
