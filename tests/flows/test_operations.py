"""The operator's deployments (flows/operations.py, prefect.yaml) under the test server: their Run
forms, one run per index at a time, and the states a worker's engine can read."""
import shutil
import threading
import time
from pathlib import Path

import pytest
import yaml

from citeline.flows.operations import check_repair, limit_name, sync_folder
from citeline.index.store import Store
from fakes import FAKE

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "docs"
pytestmark = pytest.mark.usefixtures("prefect_harness")


def deployments() -> list[dict]:
    return yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]


@pytest.mark.parametrize("deployment", deployments(), ids=lambda d: d["name"])
def test_each_deployment_loads_and_its_run_form_is_typed_and_described(deployment):
    from prefect.flows import load_flow_from_entrypoint
    from prefect.utilities.callables import parameter_schema

    flow = load_flow_from_entrypoint(deployment["entrypoint"])
    schema = parameter_schema(flow.fn).model_dump()
    fields = schema["properties"]
    assert set(deployment.get("parameters", {})) <= set(fields)  # prefect.yaml names real parameters
    for name, field in fields.items():
        assert field.get("description", "").strip(), f"{deployment['name']}: {name} has no description"
        assert "type" in field or "anyOf" in field, f"{deployment['name']}: {name} has no type"
    assert deployment["work_pool"]["name"] == "citeline"


def test_strategy_is_offered_as_a_choice():
    from prefect.utilities.callables import parameter_schema

    strategy = parameter_schema(sync_folder.fn).model_dump()["properties"]["strategy"]
    assert strategy["anyOf"][0]["enum"] == ["A", "B", "C", "D", "E", "F"]


@pytest.fixture
def synced(tmp_path) -> tuple[Path, str]:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("04-dropout.md", "10-lr-scheduler.md"):
        shutil.copy(EXAMPLES / name, folder)
    (folder / "broken.md").write_bytes(b"caf\xe9 latin-1 bytes\x00\x01")
    db = str(tmp_path / "index")
    state = sync_folder(str(folder), db, model=FAKE, return_state=True)
    assert state.name == "DocumentsFailed"
    # what the worker's engine raises at the end of the run: an exception holding the summary
    failed = state.result(raise_on_failure=False)
    assert failed.summary.failed == 1 and failed.summary.failures[0].path == "broken.md"
    return folder, db


def hold_slot(db: str, seconds: float, held: threading.Event) -> threading.Thread:
    """Take the index's slot, as a running sync holds it, for ``seconds``."""
    from prefect.concurrency.sync import concurrency

    def hold():
        with concurrency(limit_name(db), occupy=1, strict=True):
            held.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(60)
    return thread


def test_a_second_run_of_one_index_waits_in_line_then_runs(synced):
    folder, db = synced
    thread = hold_slot(db, 3.0, threading.Event())
    started = time.monotonic()
    state = check_repair(db, wait_s=120, return_state=True)
    waited = time.monotonic() - started
    thread.join()
    assert state.is_completed() and "0 violations remain" in state.message, state.message
    assert waited >= 2.0  # it ran only once the slot was free

    second = sync_folder(str(folder), db, return_state=True)  # the index's own model: nothing to say
    assert second.is_completed() and second.result().still_failing == 1, second.message


def test_a_run_that_waited_longer_than_wait_s_does_nothing_and_says_why(synced):
    folder, db = synced
    before = Store(db).document_rows(["doc_id", "attempts"])
    thread = hold_slot(db, 4.0, threading.Event())
    state = sync_folder(str(folder), db, wait_s=0.5, return_state=True)
    thread.join()
    assert state.is_failed() and state.name == "Queued"
    assert limit_name(db) in state.message and "did nothing" in state.message
    assert Store(db).document_rows(["doc_id", "attempts"]) == before


def test_a_run_queued_behind_a_reindex_reads_the_model_the_reindex_left(synced):
    """The sync due while a reindex holds the slot runs on the index the reindex left behind."""
    from prefect.concurrency.sync import concurrency

    from citeline.flows.operations import settings_for
    from citeline.flows.reindex import reindex

    folder, db = synced
    held, switched = threading.Event(), threading.Event()

    def reindex_holding_the_slot():
        with concurrency(limit_name(db), occupy=1, strict=True):
            held.set()
            time.sleep(1.5)  # the sync is queued by now, having read nothing yet
            reindex(settings_for(db, FAKE, "A"))
            switched.set()

    thread = threading.Thread(target=reindex_holding_the_slot)
    thread.start()
    assert held.wait(60)
    state = sync_folder(str(folder), db, return_state=True)
    thread.join()
    assert switched.is_set()
    assert state.is_completed(), state.message  # was Failed IndexMismatch: it read strategy E before waiting
    assert Store(db).stamp().strategy == "A"


def test_a_waiting_run_says_so_while_it_waits(synced, caplog):
    from citeline.flows.operations import one_writer

    _, db = synced
    thread = hold_slot(db, 2.5, threading.Event())
    with caplog.at_level("INFO", logger="citeline"), one_writer(db, wait_s=60, say_every_s=0.5):
        pass
    thread.join()
    waiting = [r for r in caplog.records if "run.waiting" in r.getMessage()]
    assert len(waiting) >= 2 and "another run is writing this index" in waiting[0].getMessage()
    assert not [r for r in caplog.records if r.levelname == "ERROR"]  # waiting is not an error


def test_an_emptied_folder_is_held_by_the_scheduled_sync_until_a_run_allows_it(synced):
    folder, db = synced
    for path in folder.iterdir():  # the share did not mount
        path.unlink()
    held = sync_folder(str(folder), db, return_state=True)
    assert held.name == "DeletionsHeld" and "not forgetting 3 documents under" in held.message, held.message
    assert held.result(raise_on_failure=False).summary.deleted == 0  # the worker's engine reads the summary
    assert "## Deletions held back" in summary_artifact(held.state_details.flow_run_id)
    assert len(Store(db).document_rows(["doc_id"])) == 3
    allowed = sync_folder(str(folder), db, allow_mass_delete=True, return_state=True)
    assert allowed.is_completed() and allowed.result().deleted == 3, allowed.message


def summary_artifact(flow_run_id) -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]), key=ArtifactFilterKey(any_=["index-summary"])))
    return artifacts[0].data


def test_the_weekly_schedules_verify_and_name_real_parameters():
    from citeline.flows.serve import FolderSync
    from citeline.schemas.settings import IndexSettings

    sync = next(d for d in deployments() if d["name"] == "index-folder")
    assert [(s["cron"], s.get("parameters", {})) for s in sync["schedules"]] == [
        ("*/15 * * * *", {}), ("0 3 * * 0", {"verify": True})]
    served = FolderSync.of("/data/docs", IndexSettings(db="/data/index", model=FAKE), "*/15 * * * *",
                           verify_cron="30 3 * * 0").schedules
    assert [(s.cron, s.parameters.get("verify")) for s in served] == [("*/15 * * * *", None), ("30 3 * * 0", True)]
    assert set(served[1].parameters) <= set(sync_folder.parameters.properties)  # the flow takes each one


def test_the_scheduled_sync_excludes_and_includes_as_the_cli_does(tmp_path):
    """The deployment's include/exclude (the Run form's lists, ``citeline serve --exclude``):
    excluded files are not indexed, and an indexed file excluded later is forgotten."""
    from citeline.flows.serve import FolderSync
    from citeline.pipeline.walk import Selection
    from citeline.schemas.settings import IndexSettings

    folder, db = tmp_path / "docs", str(tmp_path / "index")
    (folder / "drafts").mkdir(parents=True)
    shutil.copy(EXAMPLES / "04-dropout.md", folder)
    shutil.copy(EXAMPLES / "10-lr-scheduler.md", folder / "drafts")
    (folder / "notes.txt").write_text("Warm-up steps before the learning rate decays.\n")
    served = FolderSync.of(str(folder), IndexSettings(db=db, model=FAKE), "*/15 * * * *",
                           selection=Selection(exclude=("drafts/", "*.txt"))).parameters
    assert served["exclude"] == ["drafts/", "*.txt"] and served["include"] == []

    state = sync_folder(**served, return_state=True)  # what a scheduled run is given
    assert state.is_completed(), state.message
    assert sorted(r["path"] for r in Store(db).document_rows(["path"])) == ["04-dropout.md"]

    state = sync_folder(str(folder), db, include=["*.md"], return_state=True)  # drafts/ back, *.txt still out
    assert state.is_completed() and state.result().indexed == 1, state.message
    assert sorted(r["path"] for r in Store(db).document_rows(["path"])) == ["04-dropout.md", "drafts/10-lr-scheduler.md"]

    state = sync_folder(str(folder), db, exclude=["*.md"], allow_mass_delete=True, return_state=True)
    assert state.is_completed() and state.result().deleted == 2, state.message

    bad = sync_folder(str(folder), db, exclude=["!"], return_state=True)  # a typo in the Run form
    assert bad.name == "InvalidParameters" and "'!' is not a gitignore-style pattern" in bad.message, bad.message


@pytest.mark.parametrize("grace_days, kept", [(7.0, (1, 1)), (0.0, (0, 0))])
def test_the_scheduled_sync_keeps_a_vanished_files_chunks_for_its_grace_days(tmp_path, grace_days, kept):
    """The deployment's ``grace_days`` (``citeline serve --grace-days``): a file gone from the
    folder is forgotten at once, its chunks kept unserved for that many days (0: deleted now)."""
    from citeline.flows.serve import FolderSync
    from citeline.schemas.settings import IndexSettings

    folder, db = tmp_path / "docs", str(tmp_path / "index")
    folder.mkdir()
    shutil.copy(EXAMPLES / "04-dropout.md", folder)
    (folder / "notes.md").write_text("# Notes\n\nWarm-up steps before the learning rate decays.\n")
    served = FolderSync.of(str(folder), IndexSettings(db=db, model=FAKE, grace_days=grace_days), "*/15 * * * *").parameters
    assert served["grace_days"] == grace_days
    assert sync_folder(**served, return_state=True).is_completed()
    (folder / "notes.md").unlink()
    state = sync_folder(**served, return_state=True)
    assert state.is_completed() and state.result().deleted == 1, state.message
    assert [r["path"] for r in Store(db).document_rows(["path"])] == ["04-dropout.md"]
    assert Store(db).kept_rows() == kept
