"""Content identity: a renamed, moved or copied file is indexed from the stored work of the
document with its bytes (canonical text, vectors): nothing extracted, nothing encoded.

Extractions are counted by wrapping ``pipeline.prepare.extract_bytes`` (the real one runs);
encodes by the fake embedder's own counter. Every scenario ends with ``check_index`` == [].
"""
import shutil
from pathlib import Path

import numpy as np
import pytest

from citeline import pipeline
from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.pipeline.walk import Selection
from citeline.schemas.settings import IndexSettings
from citeline.runtime.handles import embedder_for
from fakes import FAKE

pytestmark = [pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture
def extractions(monkeypatch) -> list[str]:
    """The names of the files extracted while the test runs."""
    seen, real = [], pipeline.prepare.extract_bytes

    def counted(data, name, options):
        seen.append(name)
        return real(data, name, options)

    monkeypatch.setattr(pipeline.prepare, "extract_bytes", counted)
    return seen


def encoded() -> int:
    return embedder_for(IndexSettings(model=FAKE)).stats.texts


def sync(folder: Path, settings: IndexSettings, **kw):
    state = index_folder(str(folder), settings, return_state=True, **kw)
    assert state.is_completed(), state.message
    assert check_index(Store(settings.db)) == []
    return state.result()


def records(settings: IndexSettings) -> dict[str, dict]:
    return {r["path"]: r for r in Store(settings.db).document_rows(["doc_id", "path", "title", "chunk_count"])}


def chunks_of(settings: IndexSettings, path: str) -> list[dict]:
    rows = Store(settings.db).chunk_rows(["doc_id", "path", "ordinal", "text", "locators", "vector"])
    return sorted((r for r in rows if r["path"] == path), key=lambda r: r["ordinal"])


def same_chunks(before: list[dict], after: list[dict]) -> bool:
    """Same texts, locators and byte-identical vectors, in the same order."""
    return [(r["text"], r["locators"], np.asarray(r["vector"], np.float32).tobytes()) for r in before] == \
        [(r["text"], r["locators"], np.asarray(r["vector"], np.float32).tobytes()) for r in after]


@pytest.fixture
def indexed(docs: Path, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    assert sync(docs, settings).indexed == 2
    return docs, settings


def test_a_renamed_file_keeps_its_chunks_and_vectors(indexed, extractions):
    docs, settings = indexed
    before, old_id = chunks_of(settings, "04-dropout.md"), records(settings)["04-dropout.md"]["doc_id"]
    (docs / "04-dropout.md").rename(docs / "dropout-renamed.md")
    start = encoded()
    summary = sync(docs, settings)
    assert (summary.indexed, summary.deleted, summary.encoded, summary.reused) == (1, 1, 0, len(before))
    assert extractions == [] and encoded() == start
    now = records(settings)
    assert set(now) == {"dropout-renamed.md", "10-lr-scheduler.md"}
    assert now["dropout-renamed.md"]["doc_id"] != old_id and now["dropout-renamed.md"]["chunk_count"] == len(before)
    after = chunks_of(settings, "dropout-renamed.md")
    assert same_chunks(before, after) and {r["doc_id"] for r in after} == {now["dropout-renamed.md"]["doc_id"]}


def test_a_file_moved_into_a_subfolder_keeps_its_chunks(indexed, extractions):
    docs, settings = indexed
    before = chunks_of(settings, "10-lr-scheduler.md")
    (docs / "sub").mkdir()
    (docs / "10-lr-scheduler.md").rename(docs / "sub" / "10-lr-scheduler.md")
    start = encoded()
    summary = sync(docs, settings)
    assert (summary.indexed, summary.deleted, summary.encoded) == (1, 1, 0)
    assert extractions == [] and encoded() == start
    assert set(records(settings)) == {"04-dropout.md", "sub/10-lr-scheduler.md"}
    assert same_chunks(before, chunks_of(settings, "sub/10-lr-scheduler.md"))


def test_a_copy_is_its_own_document_from_the_same_work_and_outlives_the_original(indexed, extractions):
    docs, settings = indexed
    before = chunks_of(settings, "04-dropout.md")
    shutil.copy(docs / "04-dropout.md", docs / "copy.md")
    start = encoded()
    summary = sync(docs, settings)
    assert (summary.indexed, summary.deleted, summary.encoded) == (1, 0, 0)
    assert extractions == [] and encoded() == start
    assert set(records(settings)) == {"04-dropout.md", "copy.md", "10-lr-scheduler.md"}
    assert same_chunks(before, chunks_of(settings, "copy.md"))

    (docs / "04-dropout.md").unlink()  # deleting one copy leaves the other intact
    summary = sync(docs, settings)
    assert (summary.indexed, summary.deleted) == (0, 1)
    assert set(records(settings)) == {"copy.md", "10-lr-scheduler.md"}
    assert same_chunks(before, chunks_of(settings, "copy.md"))

    summary = sync(docs, settings, selection=Selection(exclude=("copy.md",)))  # excluded: forgotten
    assert (summary.indexed, summary.deleted) == (0, 1)
    assert set(records(settings)) == {"10-lr-scheduler.md"}
    assert extractions == []


def test_an_edited_copy_is_extracted_and_keeps_the_vectors_of_its_unchanged_chunks(indexed, extractions):
    docs, settings = indexed
    shutil.copy(docs / "04-dropout.md", docs / "copy.md")
    sync(docs, settings)
    copy = docs / "copy.md"
    copy.write_text(copy.read_text() + "\n\nA closing paragraph only the copy has, about shard replicas.\n")
    summary = sync(docs, settings)
    assert extractions == ["copy.md"] and summary.indexed == 1
    assert 1 <= summary.encoded <= 2 and summary.reused == summary.chunks - summary.encoded
    kept = summary.chunks - summary.encoded  # the edit is at the end: the chunks before it are the original's
    assert same_chunks(chunks_of(settings, "04-dropout.md")[:kept], chunks_of(settings, "copy.md")[:kept])


def test_a_title_taken_from_the_file_name_follows_the_rename(docs, tmp_path, extractions):
    """A document without a title of its own is titled by its file name, which its chunk
    headers carry: renamed, it takes the new name's title and headers, and keeps its stored
    work (it was extracted and encoded again, a book's minutes for a rename)."""
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    (docs / "untitled.md").write_text("Dropout zeroes activations at random while training.\n")
    sync(docs, settings)
    extractions.clear()
    (docs / "untitled.md").rename(docs / "renamed.md")
    summary = sync(docs, settings)
    assert extractions == [] and summary.encoded == 0 and summary.renamed == 1
    assert records(settings)["renamed.md"]["title"] == "renamed"
    assert chunks_of(settings, "renamed.md")[0]["text"].startswith("[renamed")


def test_two_copies_renamed_together_are_both_indexed_from_stored_work(indexed, extractions):
    docs, settings = indexed
    shutil.copy(docs / "04-dropout.md", docs / "copy.md")
    sync(docs, settings)
    (docs / "04-dropout.md").rename(docs / "a.md")
    (docs / "copy.md").rename(docs / "b.md")
    summary = sync(docs, settings)
    assert (summary.indexed, summary.deleted, summary.encoded) == (2, 2, 0)
    assert extractions == []
    assert set(records(settings)) == {"a.md", "b.md", "10-lr-scheduler.md"}


def test_a_rename_stopped_before_the_old_record_is_forgotten_is_finished_by_the_next_sync(indexed, monkeypatch):
    """The renamed file is written first (its own two commits), the old record forgotten after:
    a run stopped in between leaves two consistent documents, and the next sync drops the old one."""
    from citeline.flows import ingest

    docs, settings = indexed
    (docs / "04-dropout.md").rename(docs / "renamed.md")

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(ingest, "forget_deleted", disk_full)
        state = index_folder(str(docs), settings, return_state=True)
    assert state.is_failed()
    assert set(records(settings)) == {"04-dropout.md", "renamed.md", "10-lr-scheduler.md"}
    assert check_index(Store(settings.db)) == []
    summary = sync(docs, settings)
    assert (summary.indexed, summary.deleted, summary.encoded) == (0, 1, 0)
    assert set(records(settings)) == {"renamed.md", "10-lr-scheduler.md"}
