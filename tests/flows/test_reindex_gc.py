"""gc is a writer like any other, and never drops a re-index's table before it switches."""
from pathlib import Path

import pytest
from testkit import INT8, needs_int8
from click.testing import CliRunner

from citeline.cli.main import cli
from citeline.flows.ingest import index_folder
from citeline.flows.reindex import reindex
from citeline.index.check import check_index
from citeline.index.lock import writer_lock
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings
from citeline.schemas.tables import chunks_table_name
from citeline.runtime.handles import stamp_for

pytestmark = [
    pytest.mark.model,
    pytest.mark.usefixtures("prefect_harness"),
    needs_int8,
]


def tables(store: Store) -> set[str]:
    return {name for name, _, _ in store.chunk_tables()}


def test_gc_waits_for_the_writer_lock(docs: Path, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "index"))
    index_folder(str(docs), settings)
    store = Store(settings.db)
    retired = store.active_table()
    reindex(IndexSettings(db=settings.db, model=INT8))

    with writer_lock(settings.db):  # a re-index (or any writer) is running
        result = CliRunner().invoke(cli, ["gc", "--db", settings.db, "--yes"])

    assert result.exit_code == 1 and "is being written by process" in result.output
    assert retired in tables(store)


def test_gc_keeps_the_table_of_an_interrupted_reindex_which_then_resumes(docs: Path, tmp_path, monkeypatch):
    settings = IndexSettings(db=str(tmp_path / "index"))
    index_folder(str(docs), settings)
    store = Store(settings.db)
    target = IndexSettings(db=settings.db, model=INT8)
    building = chunks_table_name(stamp_for(target))
    import citeline.tasks.reembed as reembed

    real = reembed.rechunk

    def dies_on_the_second(record, *args):
        if record["path"] == "10-lr-scheduler.md":
            raise RuntimeError("the run stops here (injected)")
        return real(record, *args)

    monkeypatch.setattr(reembed, "rechunk", dies_on_the_second)
    assert not reindex(target, return_state=True).is_completed()
    monkeypatch.setattr(reembed, "rechunk", real)
    assert store.count_chunks(table=building) > 0  # one document staged, the switch never came

    result = CliRunner().invoke(cli, ["gc", "--db", settings.db, "--yes"])

    assert result.exit_code == 0, result.output
    assert f"keeping {building}" in result.output and building in tables(store)
    summary = reindex(target)
    assert summary.switched and store.active_table() == building
    assert check_index(store) == []
    assert store.staging_table() is None  # switched: gc may drop the old table now, and only that
    dropped = CliRunner().invoke(cli, ["gc", "--db", settings.db, "--yes"])
    assert dropped.exit_code == 0 and tables(store) == {building}
