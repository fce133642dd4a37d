"""Per index, what is true of it now: the ``failing-documents-…`` table and
the ``index-health-…`` page, published by every run that writes the index, read from its records
and notes, never from one run's failures; every cell escaped. Against the session's Prefect server."""
import html
import json
import re
import shutil
from pathlib import Path

import pytest

from citeline.flows.operations import check_repair, retry_failed_documents, sync_folder
from citeline.tasks.report import artifact_keys
from fakes import FAKE
from testkit import invoke

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "docs"
pytestmark = pytest.mark.usefixtures("prefect_harness")
HOSTILE = "![b](http:⁄⁄evil.example⁄x.png) <img src=x>.md".replace("⁄", "_")  # a file name is one path part


def latest(key: str):
    from prefect.artifacts import Artifact

    artifact = Artifact.get(key)
    assert artifact is not None, f"no artifact {key}"
    return artifact


def failing(db: str) -> list[dict]:
    return json.loads(latest(artifact_keys(db)[0]).data)


def health(db: str) -> str:
    return latest(artifact_keys(db)[1]).data


def shown(cell: str) -> str:
    """A Markdown cell as the Prefect UI shows it: backslash escapes and entities read."""
    return html.unescape(re.sub(r"\\(.)", r"\1", cell))


def test_the_index_health_artifacts_say_what_is_true_now(tmp_path, monkeypatch):
    from prefect.settings import PREFECT_API_URL

    folder, db = tmp_path / "docs", str(tmp_path / "index")
    folder.mkdir()
    shutil.copy(EXAMPLES / "04-dropout.md", folder)
    (folder / "broken.md").write_bytes(b"caf\xe9 latin-1 bytes\x00\x01")
    (folder / HOSTILE).write_bytes(b"\x00\x01 [link](http://evil.example/) | cell")

    first = sync_folder(str(folder), db, model=FAKE, return_state=True)
    assert first.name == "DocumentsFailed"
    rows = failing(db)
    assert [(shown(r["path"]), r["stage"], r["attempts"]) for r in rows] == [
        (HOSTILE, "extract", 1), ("broken.md", "extract", 1)]
    for row in rows:  # nothing a name or a file's bytes hold renders as a link, an image or a cell
        for cell in map(str, row.values()):
            assert not re.search(r"(?<!\\)[\[\]()|<>!]", cell), cell
    assert json.loads(shown(rows[1]["retry-failed/retry-failed parameters"])) == {
        "db": db, "path": str(folder / "broken.md")}
    page = health(db)
    assert "| documents | failing | indexed | chunk rows |" in page and "| 3 | 2 | 1 |" in page, page
    assert f"model: {FAKE.replace('/', '/')}" in shown(page) and "strategy E" in page
    assert "last good sync: none noted yet" in page and "DocumentsFailed" in page
    assert "evil" not in page  # the page counts failures; their names are in the table, escaped

    # the next scheduled sync: nothing new failed, so no run table, but the index still has 2 failing
    second = sync_folder(str(folder), db, return_state=True)
    assert second.is_completed() and second.result().still_failing == 2
    assert len(failing(db)) == 2  # was the per-run table's [] while documents were failing
    page = health(db)
    assert re.search(r"last good sync: \d{4}-\d\d-\d\dT[^\n]*Completed", page), page
    assert "2 documents failing now: the artifact " + artifact_keys(db)[0] in page
    assert latest("failed-documents").flow_run_id == first.state_details.flow_run_id  # none made by the 2nd

    # fixed and retried: one left
    (folder / "broken.md").write_text("café, now UTF-8\n")
    assert retry_failed_documents(db, return_state=True).name == "DocumentsFailed"  # the hostile one fails again
    assert [shown(r["path"]) for r in failing(db)] == [HOSTILE]
    assert failing(db)[0]["attempts"] == 2

    # removed by `citeline rm` (no flow run): published when a server is configured
    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())
    removed = invoke("rm", folder / HOSTILE, "--db", db)
    assert removed.exit_code == 0, removed.output
    assert failing(db) == []
    assert "No document is failing." in health(db) and "| 2 | 2 | " in health(db)

    # the weekly check
    assert check_repair(db, return_state=True).is_completed()
    page = health(db)
    assert re.search(r"last check: [^\n]*0 violations found, 0 repairs, 0 violations remain", page), page


def test_two_indexes_have_two_keys_and_a_new_index_says_nothing_is_noted(tmp_path):
    from citeline.index.health import read_health
    from citeline.index.store import Store
    from citeline.tasks.report import health_markdown

    a, b = artifact_keys(str(tmp_path / "x" / "index")), artifact_keys(str(tmp_path / "y" / "index"))
    assert a != b and a[0].startswith("failing-documents-index-") and b[1].startswith("index-health-index-")
    assert all(re.fullmatch(r"[a-z0-9-]+", k) for k in (*a, *b))
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(EXAMPLES / "04-dropout.md", folder)
    db = str(tmp_path / "index")
    assert sync_folder(str(folder), db, model=FAKE, return_state=True).is_completed()
    h = read_health(Store(db), db)
    assert h.by_state == {"indexed": 1} and h.failing == () and h.last_check is None
    assert h.last_good_sync == h.last_sync and h.last_sync.state == "Completed"
    assert "last check: none noted yet" in health_markdown(h, "a test")
