"""Small documents prepared in groups (what every run does, in process and on Dask): their chunks
share encoder batches, the rows are the ones a per-document run writes, and each document still
fails alone. The real flow, Prefect and LanceDB run it in process with the fake embedder; the
per-document run it is compared with is the flow with ``work_groups`` leaving every file alone.
"""
from pathlib import Path

import pytest

from citeline.flows import ingest
from citeline.flows.ingest import index_folder, work_groups
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.pipeline import prepare
from citeline.pipeline.plan import Todo
from citeline.pipeline.walk import FileStat, SourceFile
from citeline.schemas.errors import Vanished
from citeline.schemas.settings import IndexSettings
from citeline.runtime.handles import embedder_for
from fakes import FAKE

pytestmark = [pytest.mark.usefixtures("prefect_harness")]

NOTES = ["Dropout zeroes activations at random while training.",
         "Weight decay shrinks every weight a little at each step.",
         "A warm-up raises the learning rate over the first steps.",
         "Batch normalisation rescales activations per mini-batch.",
         "Early stopping ends training when validation loss rises."]


@pytest.fixture
def notes(tmp_path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for i, text in enumerate(NOTES):
        (folder / f"note-{i}.md").write_text(f"# Note {i}\n\n{text}\n")
    (folder / "bad.md").write_bytes(b"caf\xe9 latin-1, not UTF-8\x00\x01")
    return folder


@pytest.fixture
def encoder_calls(monkeypatch) -> list[int]:
    """How many texts each call of the fake encoder got (the encoder itself still runs)."""
    embedder, calls = embedder_for(IndexSettings(model=FAKE)), []
    real = embedder.embed_counted

    def counted(texts):
        calls.append(len(texts))
        return real(texts)

    monkeypatch.setattr(embedder, "embed_counted", counted)
    return calls


def index(folder: Path, db: Path, grouped: bool, monkeypatch):
    monkeypatch.setattr(ingest, "work_groups", work_groups if grouped else list)
    state = index_folder(str(folder), IndexSettings(db=str(db), model=FAKE), return_state=True)
    return state, state.result(raise_on_failure=False)


def rows(db: Path) -> list[tuple[str, str]]:
    return sorted((r["chunk_id"], r["content"]) for r in Store(str(db)).chunk_rows(["chunk_id", "content"]))


def task_runs(state) -> dict:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(
            id=FlowRunFilterId(any_=[state.state_details.flow_run_id])))
    return {t.name: t for t in runs}


def test_a_group_encodes_across_documents_and_writes_the_same_rows(notes, tmp_path, monkeypatch, encoder_calls):
    alone_state, alone = index(notes, tmp_path / "alone", False, monkeypatch)
    per_document = list(encoder_calls)
    encoder_calls.clear()
    state, grouped = index(notes, tmp_path / "grouped", True, monkeypatch)

    assert max(per_document) == 1 and encoder_calls == [len(NOTES)]  # one call for all five notes' chunks
    assert rows(tmp_path / "grouped") == rows(tmp_path / "alone") and len(rows(tmp_path / "alone")) == len(NOTES)
    assert (grouped.indexed, grouped.failed, grouped.chunks) == (alone.indexed, alone.failed, alone.chunks) == (5, 1, 5)
    assert state.name == alone_state.name == "DocumentsFailed"
    assert [(f.path, f.stage) for f in grouped.failures] == [("bad.md", "extract")]
    assert grouped.failures[0].reason.startswith("undecodable")
    names = task_runs(state)
    assert names["bad.md"].state.is_failed() and names["bad.md"].state.message.startswith("extract: undecodable")
    assert "note-0.md" not in names and any(n.startswith("6 documents (") for n in names)
    assert check_index(Store(str(tmp_path / "grouped"))) == []


def test_a_transient_error_in_a_group_is_retried_alone(notes, tmp_path, monkeypatch):
    real_read, calls = prepare.read_stat, []

    def vanished_once(path, max_bytes, root=None):
        calls.append(path)
        if path.endswith("note-2.md") and calls.count(path) == 1:
            raise Vanished("the file changed while it was being read (injected)")
        return real_read(path, max_bytes, root)

    monkeypatch.setattr(prepare, "read_stat", vanished_once)
    state, summary = index(notes, tmp_path / "db", True, monkeypatch)

    assert (summary.indexed, summary.failed) == (5, 1) and [f.path for f in summary.failures] == ["bad.md"]
    assert sum(p.endswith("note-2.md") for p in calls) == 2
    assert task_runs(state)["note-2.md"].state.is_completed()  # its own task run, as without groups
    assert check_index(Store(str(tmp_path / "db"))) == []


def todo(name: str, size: int | None, root: str = "/r") -> Todo:
    stat = None if size is None else FileStat(size, 0, 0, 0)
    return Todo(SourceFile(f"{root}/{name}", root, name, stat))


def test_work_groups_keep_order_and_leave_large_or_unlisted_files_alone(monkeypatch):
    monkeypatch.setattr(ingest, "GROUP_DOCS", 3)
    small = [todo(f"s{i}.md", 100) for i in range(5)]
    large, unlisted = todo("large.md", ingest.SMALL_BYTES + 1), todo("unlisted.md", None)
    works = work_groups([small[0], small[1], large, *small[2:], unlisted])
    assert works == [[small[0], small[1]], large, small[2:5], unlisted]
    monkeypatch.setattr(ingest, "GROUP_DOCS", 10)
    full = [todo(f"f{i}.txt", ingest.SMALL_BYTES) for i in range(5)]
    assert work_groups(full) == [full[:4], full[4]]  # four fill GROUP_BYTES; a group of one is a lone task


def test_a_file_a_binary_parser_reads_or_a_remote_one_is_prepared_alone():
    """A group is one task: a member stuck in an isolated parser until its time-out, or an object
    store's transient error retried alone, would hold back or re-time the rest of its group."""
    notes = [todo(f"n{i}.md", 100) for i in range(2)]
    pdf, unknown = todo("scan.pdf", 100), todo("blob.xyz", 100)
    remote = [todo(f"o{i}.md", 100, root="s3://bucket/docs") for i in range(2)]
    works = work_groups([notes[0], pdf, notes[1], unknown, *remote])
    assert works == [notes[0], pdf, notes[1], unknown, remote[0], remote[1]]
    assert work_groups(notes) == [notes]


def test_grouped_documents_keep_their_stored_vectors(notes, tmp_path, monkeypatch):
    """A rename and an edit prepared in a group take what the index holds, as they do alone."""
    db = tmp_path / "grouped"
    index(notes, db, True, monkeypatch)
    (notes / "note-0.md").rename(notes / "renamed.md")
    edited = notes / "note-1.md"
    edited.write_text(edited.read_text() + "\nIt is applied after the gradient step.\n")
    _, again = index(notes, db, True, monkeypatch)
    assert (again.indexed, again.encoded, again.reused) == (2, 1, 1), again.line()
    assert check_index(Store(str(db))) == []
