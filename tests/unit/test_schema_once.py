"""A query reader's table answers its schema from one look-up (index/schema_once.py): LanceDB's
query builders asked for it several times a query, each a round trip to its event loop."""
import lancedb
import pyarrow as pa
import pytest
from lancedb.table import LanceTable

from citeline.index.schema_once import schema_once


@pytest.fixture
def table(tmp_path):
    db = lancedb.connect(str(tmp_path / "db"))
    data = pa.table({"id": [f"c{i}" for i in range(50)], "vector": [[float(i), 1.0] for i in range(50)]})
    return db.create_table("t", data)


def test_queries_through_the_view_read_the_schema_once_and_find_the_same_rows(table, monkeypatch):
    looked_up = []
    real = LanceTable.schema
    monkeypatch.setattr(LanceTable, "schema", property(lambda self: looked_up.append(1) or real.fget(self)))
    ask = lambda t: [r["id"] for r in t.search([3.0, 1.0]).limit(5).select(["id"]).to_list()] + \
        [r["id"] for r in t.search().where("id IN ('c1', 'c7')").with_row_id(False).to_list()]
    plain = [ask(table) for _ in range(3)]
    per_query_plain = len(looked_up)
    looked_up.clear()
    view = schema_once(table)
    assert [ask(view) for _ in range(3)] == plain
    assert len(looked_up) == 1 < per_query_plain
    assert view.schema == table.schema and view.version == table.version


def test_a_table_of_another_kind_is_given_back_as_it_is():
    other = object()
    assert schema_once(other) is other
