"""A kill -9 while LanceDB creates a table leaves its folder with a transaction file and no
manifest: LanceDB lists it and cannot open it. Such a folder is not a table (Store.table_names);
the next writer removes it and makes the table again, and every command works meanwhile."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testkit import synced_index
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.index.tokens import TokenVectors
from citeline.schemas.tables import DOCUMENTS, tokens_table_name

pytestmark = pytest.mark.usefixtures("prefect_harness")


def unmake(db: str, table: str) -> Path:
    """What a kill between the transaction file and the first manifest leaves of ``table``."""
    folder = Path(db) / f"{table}.lance"
    shutil.rmtree(folder / "_versions")
    assert list((folder / "_transactions").iterdir())
    return folder


def test_a_folder_without_a_manifest_is_not_a_table(docs, tmp_path_factory):
    index = synced_index(docs, tmp_path_factory, indexed=2)
    store = Store(index.uri)
    tokens = tokens_table_name(store.stamp())
    assert tokens in store.table_names()
    folder = unmake(index.uri, tokens)

    assert tokens not in store.table_names() and not store.has_table(tokens)
    assert folder in store.temp_files()
    assert TokenVectors(store, store.stamp()).count() == 0  # read as absent, not "table not found"


@pytest.mark.parametrize("table", ["tokens", DOCUMENTS])
def test_the_next_sync_makes_a_half_made_table_again(docs, tmp_path_factory, table):
    index = synced_index(docs, tmp_path_factory, indexed=2)
    store = Store(index.uri)
    name = tokens_table_name(store.stamp()) if table == "tokens" else table
    folder = unmake(index.uri, name)

    summary = index.sync(str(docs))

    assert summary.failed == 0, summary.line()
    assert store.has_table(name) and folder not in store.temp_files()
    assert TokenVectors(store, store.stamp()).count() == store.count_chunks()
    assert check_index(store) == []
    assert {d["status"] for d in store.document_rows(["status"])} == {"indexed"}


def test_an_index_under_the_home_folder_lists_its_tables(tmp_path, monkeypatch):
    """LanceDB expands ``~``; the manifest check must look in the same folder."""
    monkeypatch.setenv("HOME", str(tmp_path))
    store = Store("~/db")
    store.documents()
    assert (tmp_path / "db" / f"{DOCUMENTS}.lance").is_dir()
    assert store.table_names() == [DOCUMENTS] and store.temp_files() == []
