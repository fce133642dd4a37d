"""The store on real LanceDB tables in tmp_path: table listing and filters on hostile values."""
from citeline.index.store import Store
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.tables import chunks_table_name


def test_the_active_table_is_found_among_many_chunks_tables(tmp_path):
    # LanceDB lists tables a page at a time (10 names by default, sorted): with 12 chunks
    # tables beside "documents", "meta" sorts onto a later page and used to go unseen.
    store = Store(str(tmp_path / "db"))
    stamps = [IndexStamp(embed_model=f"model-{i:02d}", embed_dim=8) for i in range(12)]
    for stamp in stamps:
        store.staging(stamp)
    store.documents()
    store.activate(stamps[5])
    assert store.active_table() == chunks_table_name(stamps[5])
    assert store.stamp() == stamps[5]
    listed = store.chunk_tables()
    assert [name for name, _, _ in listed] == sorted(chunks_table_name(s) for s in stamps)
    assert [name for name, _, active in listed if active] == [chunks_table_name(stamps[5])]
