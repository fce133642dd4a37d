"""A sync that would write nothing is answered before Prefect (flows/sync_plan.py):
``unchanged`` says so only when every step of the flow would write nothing, with the counts the
flow itself reports; any work, or any doubt, runs the flow."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from testkit import probe_cli, synced_index
from fakes import FAKE
from citeline.index.store import Store
from citeline.query.calibrate import stored_calibration
from citeline.schemas.settings import IndexSettings
from citeline.flows.sync_plan import unchanged

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture
def synced(docs, tmp_path_factory):
    """(folder, index) synced once with the fake embedder."""
    return docs, synced_index(docs, tmp_path_factory, indexed=2)


def test_an_unchanged_folder_is_answered_with_the_counts_the_flow_reports(synced):
    folder, index = synced
    answer = unchanged(str(folder), IndexSettings(db=index.uri, model=FAKE))
    assert answer is not None
    assert answer.line() == index.sync(str(folder)).line()  # the flow, run anyway, says the same
    assert (answer.skipped, answer.indexed, answer.rows) == (2, 0, Store(index.uri).count_chunks())


def _edit(folder, db):
    (folder / "04-dropout.md").write_text((folder / "04-dropout.md").read_text() + "\nOne more line.\n")


def _add(folder, db):
    (folder / "new.md").write_text("# New\n\nA note that arrived.\n")


def _delete(folder, db):
    (folder / "10-lr-scheduler.md").unlink()


def _killed_writer(folder, db):
    """What a kill -9 mid-commit leaves (Store.clean_temp_files)."""
    (next(Path(db).glob("*.lance/data")) / ".tmp-killed-writer").write_bytes(b"half")


def _half_made_table(folder, db):
    """What a kill -9 while LanceDB creates a table leaves: a folder without a manifest."""
    (Path(db) / "killed_create.lance" / "_transactions").mkdir(parents=True)


def _rows_past_full_text(folder, db):
    store = Store(db)
    table = store.chunks(store.stamp())
    table.add(table.search().limit(1).to_arrow())


def _calibration_of_another_rule(folder, db):
    store = Store(db)
    found = stored_calibration(store, store.stamp())
    store.set_calibration(store.active_table(), dataclasses.replace(found, version="0").to_json())


WORK = [_edit, _add, _delete, _killed_writer, _half_made_table, _rows_past_full_text, _calibration_of_another_rule]


@pytest.mark.parametrize("change", WORK, ids=lambda f: f.__name__.strip("_"))
def test_work_for_the_flow_is_never_answered_unchanged(synced, change):
    folder, index = synced
    change(folder, index.uri)
    assert unchanged(str(folder), IndexSettings(db=index.uri, model=FAKE)) is None


@pytest.mark.parametrize("settings", [{"strategy": "C"}, {"token_vectors": True}], ids=["other strategy", "token vectors"])
def test_settings_the_index_was_not_built_with_run_the_flow(synced, settings):
    """The flow refuses another strategy with its reason, or starts the token table: not a no-op."""
    folder, index = synced
    assert unchanged(str(folder), IndexSettings(db=index.uri, model=FAKE, **settings)) is None


def test_a_file_of_a_synced_folder_given_alone_runs_the_flow(synced):
    """Syncing one file records it as a root of its own: a write."""
    folder, index = synced
    assert unchanged(str(folder / "04-dropout.md"), IndexSettings(db=index.uri, model=FAKE)) is None


def test_no_index_yet_runs_the_flow(docs, tmp_path):
    assert unchanged(str(docs), IndexSettings(db=str(tmp_path / "none"), model=FAKE)) is None
    assert not (tmp_path / "none").exists()  # read-only: nothing created


def flow_runs() -> int:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.count_flow_runs()


def test_the_cli_answers_an_unchanged_folder_without_prefect_or_a_flow_run_unless_told(synced, cli_env):
    folder, index = synced
    args = ["index", str(folder), "--db", index.uri, "--no-progress"]
    before = flow_runs()
    quick = probe_cli(args, ["prefect"], cli_env, fake=True)
    assert (quick.exit, quick.imported) == (0, []), quick.stdout
    assert flow_runs() == before
    full = probe_cli([*args, "--always-run"], ["prefect"], cli_env, fake=True)
    assert (full.exit, full.imported) == (0, ["prefect"]), full.stdout
    assert flow_runs() == before + 1
    summary = [ln for ln in quick.stdout.splitlines() if ln.startswith("indexed ")]
    assert summary and summary == [ln for ln in full.stdout.splitlines() if ln.startswith("indexed ")]
    assert summary[0].startswith("indexed 0, failed 0, skipped 2, deleted 0")


def test_the_cli_runs_the_flow_as_soon_as_a_file_changed(synced, cli_env):
    folder, index = synced
    _add(folder, index.uri)
    before = flow_runs()
    ran = probe_cli(["index", str(folder), "--db", index.uri, "--no-progress", "--json"], ["prefect"], cli_env, fake=True)
    assert (ran.exit, ran.imported) == (0, ["prefect"]), ran.stdout
    assert flow_runs() == before + 1
    report = json.loads(ran.stdout)
    assert report["summary"]["indexed"] == 1 and "flow_run" not in report
