"""Forgotten documents keep their vectors for a grace period: a file deleted and
synced away is no longer served, yet its chunk rows stay, owned by no record, so the file
coming back (a share remounted, a backup restored) costs no re-embedding; the first sync after
the grace period deletes them. Real LanceDB, real Prefect, the fake embedder.
"""
import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from citeline.cli.main import cli
from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store, now
from citeline.pipeline.embed import get_embedder
from citeline.query.search import Searcher
from citeline.schemas.settings import IndexSettings
from citeline.flows.sync_plan import unchanged
from fakes import FAKE

pytestmark = [pytest.mark.usefixtures("prefect_harness")]
GONE = "04-dropout.md"


def sync(folder: Path, settings: IndexSettings):
    state = index_folder(str(folder), settings, return_state=True)
    assert state.is_completed(), state.message
    return state.result()


def served(settings: IndexSettings, text: str) -> set[str]:
    searcher = Searcher.open(settings.db, get_embedder(settings.model))
    return {h.chunk.path for h in [*searcher.bm25(text, 20), *searcher.dense(text, 20)]}


@pytest.fixture
def forgotten(docs: Path, tmp_path):
    """Two documents indexed, then one deleted and synced away: (folder, settings, its bytes, its rows)."""
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    sync(docs, settings)
    rows = Store(settings.db).rows_per_document()
    data = (docs / GONE).read_bytes()
    (docs / GONE).unlink()
    summary = sync(docs, settings)
    assert (summary.deleted, summary.vanished) == (1, 1)
    return docs, settings, data, sum(rows.values()) - summary.rows


def test_a_forgotten_document_is_not_served_nor_counted_but_kept(forgotten):
    docs, settings, _, rows = forgotten
    store = Store(settings.db)
    assert rows > 0 and store.kept_rows() == (1, rows)
    assert GONE not in served(settings, "dropout regularization neurons")
    assert GONE not in {r["path"] for r in store.chunk_rows(["path"], owned=True)}
    assert store.count_chunks(owned=True) == store.count_chunks() - rows
    assert check_index(store) == []
    # the next sync of the unchanged folder needs no flow run: kept rows are no writer's leftovers
    assert unchanged(str(docs), settings) is not None
    assert unchanged(str(docs), IndexSettings(db=settings.db, model=FAKE, grace_days=0)) is None  # purge due


def test_a_file_restored_within_the_grace_period_keeps_its_vectors(forgotten):
    docs, settings, data, rows = forgotten
    (docs / GONE).write_bytes(data)
    back = sync(docs, settings)
    assert (back.indexed, back.restored, back.new, back.encoded, back.reused) == (1, 1, 0, 0, rows)
    assert "0 encoded" in back.line() and f"{rows} kept their vectors" in back.line()
    assert back.words() == "1 restored"
    store = Store(settings.db)
    assert GONE in served(settings, "dropout regularization neurons")
    assert store.kept_rows() == (0, 0) and store.count_chunks(owned=True) == store.count_chunks()
    assert check_index(store) == []
    sync(docs, settings)
    assert store.forgotten() == []  # the name of rows rewritten is dropped by the next flow run


def test_the_first_sync_after_the_grace_period_deletes_the_rows(forgotten):
    docs, settings, data, rows = forgotten
    store = Store(settings.db)
    assert not store.purge_due(settings.grace_days)
    assert store.purge_due(settings.grace_days, now() + timedelta(days=settings.grace_days, seconds=1))
    later = IndexSettings(db=settings.db, model=FAKE, grace_days=0)  # the period over: as a clock moved on
    sync(docs, later)
    assert store.kept_rows() == (0, 0) and store.forgotten() == []
    assert store.count_chunks() == store.count_chunks(owned=True)
    (docs / GONE).write_bytes(data)
    again = sync(docs, later)
    assert (again.new, again.restored, again.encoded, again.reused) == (1, 0, rows, 0)
    assert check_index(store) == []


def test_no_grace_deletes_the_rows_with_the_record(docs, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE, grace_days=0)
    sync(docs, settings)
    (docs / GONE).unlink()
    sync(docs, settings)
    store = Store(settings.db)
    assert store.forgotten() == [] and store.count_chunks() == store.count_chunks(owned=True)


def test_status_says_the_kept_rows_apart_and_gc_deletes_them(forgotten):
    docs, settings, _, rows = forgotten
    status = CliRunner().invoke(cli, ["status", "--db", settings.db])
    owned = Store(settings.db).count_chunks(owned=True)
    assert (f"; {owned} chunk rows (and {rows} rows of 1 forgotten document kept for the grace period, not served)"
            in status.output), status.output
    assert GONE not in status.output
    report = json.loads(CliRunner().invoke(cli, ["status", "--db", settings.db, "--json"]).output)
    assert (report["rows"], report["forgotten"]) == (owned, {"documents": 1, "rows": rows})

    kept = CliRunner().invoke(cli, ["gc", "--db", settings.db, "--yes"])  # forgotten today: within 7 days
    assert kept.exit_code == 0 and "forgotten" not in kept.output and Store(settings.db).kept_rows() == (1, rows)
    listed = CliRunner().invoke(cli, ["gc", "--db", settings.db, "--grace-days", "0"])
    assert (f"would delete the kept chunks of 1 forgotten document ({rows} rows), forgotten 0 days ago or more"
            in listed.output), listed.output
    assert Store(settings.db).kept_rows() == (1, rows)
    purged = CliRunner().invoke(cli, ["gc", "--db", settings.db, "--grace-days", "0", "--yes", "--json"])
    assert [(f["path"], f["rows"]) for f in json.loads(purged.output)["forgotten"]] == [(GONE, rows)]
    store = Store(settings.db)
    assert store.kept_rows() == (0, 0) and store.forgotten() == [] and store.count_chunks() == owned
    assert check_index(store) == []
