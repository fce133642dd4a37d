"""Not a document is not a failure: an archive, source code, a photo with no
text and a recording with no speech are set aside with what they are, counted and listed in the
run's summary, its --json, ``citeline status`` and the library, exit 0, and are passed by until
they change. And the summary says what happened in words (item 10)."""
import io
import json
import random
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings
from citeline.flows.sync_plan import unchanged
from fakes import FAKE
from testkit import invoke

pytestmark = [pytest.mark.usefixtures("prefect_harness")]

SET_ASIDE = {
    "bundle.zip": "a zip archive (.zip)",
    "noise.png": "an image with no text",
    "room.wav": "a recording with no speech",
    "tool.py": "Python source",
}


def noise_png() -> bytes:
    """A photo's worth of grey noise: pixels, no text."""
    rng = random.Random(41)
    out = io.BytesIO()
    Image.frombytes("L", (96, 96), bytes(rng.randrange(256) for _ in range(96 * 96))).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture
def folder(docs, make) -> Path:
    """The suite's two Markdown documents, and one file of each kind that is no document."""
    (docs / "tool.py").write_text("print('not a document')\n")
    with zipfile.ZipFile(docs / "bundle.zip", "w") as archive:
        archive.writestr("inside.txt", "an archive is not read")
    (docs / "noise.png").write_bytes(noise_png())
    (docs / "room.wav").write_bytes(make.silence_wav(1.0))
    return docs


def sync(folder: Path, settings: IndexSettings):
    state = index_folder(str(folder), settings, return_state=True)
    assert state.is_completed(), state.message  # never red
    assert check_index(Store(settings.db)) == []
    return state.result()


def statuses(settings: IndexSettings) -> dict[str, tuple[str, str | None]]:
    return {r["path"]: (r["status"], r["reason"]) for r in Store(settings.db).document_rows(["path", "status", "reason"])}


def test_files_that_are_no_documents_are_skipped_with_what_they_are_and_passed_by(folder, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "db"), model=FAKE)
    summary = sync(folder, settings)
    assert (summary.indexed, summary.failed, summary.failures) == (2, 0, ())
    assert {d.path: d.what for d in summary.not_documents} == SET_ASIDE
    assert summary.words() == "2 new, 4 skipped as not documents"
    stored = statuses(settings)
    assert {s for p, s in stored.items() if p.endswith(".md")} == {("indexed", None)}
    assert {p: s for p, s in stored.items() if not p.endswith(".md")} == {
        p: ("not-a-document", f"not a document: {what}") for p, what in SET_ASIDE.items()}

    # remembered: the no-op shortcut answers, reads nothing, and still lists them
    again = unchanged(str(folder), settings)
    assert again is not None and {d.path for d in again.not_documents} == set(SET_ASIDE)
    assert "4 skipped as not documents" in again.line()


def test_a_changed_file_is_examined_again(folder, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "db"), model=FAKE)
    (folder / "LICENSE").write_bytes(bytes(range(256)))  # no suffix, binary: of no known type
    first = sync(folder, settings)
    assert "LICENSE" in {d.path for d in first.not_documents} and first.failed == 0
    (folder / "LICENSE").write_text("Permission is granted to read this licence in the harbour.\n")
    second = sync(folder, settings)
    assert (second.indexed, second.changed, second.failed) == (1, 1, 0)
    assert statuses(settings)["LICENSE"] == ("indexed", None)
    assert "LICENSE" not in {d.path for d in second.not_documents}
    (folder / "LICENSE").write_bytes(b"\x00\x01\x02\x03" * 64)  # a document replaced by a file that is none
    third = sync(folder, settings)  # sync() checks the index: no chunk is left of the document it replaced
    assert third.failed == 0 and "LICENSE" in {d.path for d in third.not_documents}
    assert statuses(settings)["LICENSE"][0] == "not-a-document"
    assert not [r for r in Store(settings.db).chunk_rows(["path"]) if r["path"] == "LICENSE"]


def test_cli_exits_0_and_lists_them_in_text_json_and_status(folder, tmp_path):
    db = tmp_path / "db"
    result = invoke("index", folder, "--db", db, "--model", FAKE, "--no-progress")
    assert result.exit_code == 0, result.output
    assert "In words: 2 new, 4 skipped as not documents" in result.output
    assert "  SKIPPED tool.py: not a document: Python source" in result.output
    assert "FAILED" not in result.output

    again = invoke("index", folder, "--db", db, "--model", FAKE, "--no-progress", "--json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert report["failures"] == [] and report["summary"]["in_words"] == "4 skipped as not documents"
    assert {d["path"]: d["what"] for d in report["not_documents"]} == SET_ASIDE

    shown = invoke("status", "--db", db)
    assert shown.exit_code == 0, shown.output
    line = next(line for line in shown.output.splitlines() if "room.wav" in line)
    assert line.startswith("skipped") and "not a document: a recording with no speech" in line


def test_renaming_a_file_that_is_no_document_is_no_new_failure(folder, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "db"), model=FAKE)
    sync(folder, settings)
    (folder / "tool.py").rename(folder / "script.py")
    summary = sync(folder, settings)
    assert summary.failed == 0 and "script.py" in {d.path for d in summary.not_documents}
    assert summary.words() == "1 deleted, 4 skipped as not documents"


def test_a_text_file_renamed_twice_reuses_its_stored_work_both_times(docs, tmp_path):
    """A second rename of a text file titled by its name re-encoded it (every such
    rename did: its title, in every chunk header, changed). Each rename now keeps the vectors,
    and the title and headers follow the name; the summary says it in words."""
    settings = IndexSettings(db=str(tmp_path / "db"), model=FAKE)
    words = "harbour ledger pump bridge tender audit survey archive budget".split()
    rng = random.Random(10)
    (docs / "book.txt").write_text("\n\n".join(" ".join(rng.choice(words) for _ in range(90)) for _ in range(6)))
    first = sync(docs, settings)
    assert first.words() == "3 new"
    for old, new in (("book.txt", "book-2023.txt"), ("book-2023.txt", "archive/old-book.txt")):
        (docs / new).parent.mkdir(exist_ok=True)
        (docs / old).rename(docs / new)
        summary = sync(docs, settings)
        assert (summary.encoded, summary.reused, summary.deleted) == (0, summary.chunks, 1), summary.line()
        assert summary.words() == "1 renamed"
    rows = [r for r in Store(settings.db).chunk_rows(["path", "title", "text"]) if r["path"] == "archive/old-book.txt"]
    assert len(rows) > 1 and all(r["title"] == "old-book" and r["text"].startswith("[old-book") for r in rows)
    changed = docs / "archive" / "old-book.txt"
    changed.write_text(changed.read_text() + "\n\nA closing paragraph about the tender.\n")
    (docs / "gone.md").write_text("# Gone\n\nSoon deleted.\n")
    sync(docs, settings)
    (docs / "gone.md").unlink()
    changed.write_text(changed.read_text() + "\n\nOne more line.\n")
    assert sync(docs, settings).words() == "1 changed, 1 deleted"


def test_the_library_shows_them_skipped_with_what_they_are_never_failed(folder, tmp_path):
    from fastapi.testclient import TestClient

    from citeline.library import Index
    from citeline.web.app import create_app

    index = Index.create(str(tmp_path / "db"), model=FAKE)
    assert index.sync(str(folder)).failed == 0
    with TestClient(create_app(index, poll_s=0), base_url="http://127.0.0.1") as client:
        page = client.get("/library").text
        skipped = client.get("/library", params={"status": "not-a-document"}).text
    assert "0 failed" in page and "4 skipped as not documents" in page and "Failed" not in page
    assert '<span class="badge not-a-document">skipped</span>' in skipped
    assert "Not a document: Python source" in skipped and skipped.count('class="doc-link"') == 4


def test_an_old_unsupported_type_failure_is_skipped_once_retried(folder, tmp_path):
    """An index written before files were set aside holds such files as failed: they stay still failing
    until changed, and ``retry`` moves them to skipped (counted there, not as indexed)."""
    from citeline.flows.retry import retry_failed

    settings = IndexSettings(db=str(tmp_path / "db"), model=FAKE)
    sync(folder, settings)
    store = Store(settings.db)
    old = {"doc_id": next(r["doc_id"] for r in store.document_rows(["doc_id", "path"]) if r["path"] == "tool.py"),
           "status": "failed", "stage": "extract", "reason": "unsupported-type: a text file with suffix .py"}
    store.upsert_documents([old])
    assert sync(folder, settings).still_failing == 1
    state = retry_failed(settings, return_state=True)
    assert state.is_completed(), state.message
    summary = state.result()
    assert (summary.indexed, summary.failed) == (0, 0)
    assert [(d.path, d.what) for d in summary.not_documents] == [("tool.py", "Python source")]
    assert statuses(settings)["tool.py"] == ("not-a-document", "not a document: Python source")
