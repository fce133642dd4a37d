"""Renames, moves and copies are a metadata write: the run writes the stored
rows under their new paths in a few commits, with no per-file task run, no extraction, no
chunking and no encoding, and the index it leaves is the one a fresh index of the renamed
folder would be (rows, vectors and records alike).
"""
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from citeline import pipeline
from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings
from citeline.tasks import rename
from fakes import FAKE

pytestmark = [pytest.mark.usefixtures("prefect_harness")]

WORDS = "harbour ledger pump bridge tender audit survey archive budget column inspection".split()
RECORD_COLUMNS = ["doc_id", "source", "root", "path", "status", "sha256", "size", "title", "canonical", "segments",
                  "notes", "chunk_count", "truncated", "extractor", "extractor_version", "embed_model", "embed_dim"]


@pytest.fixture
def counted(monkeypatch) -> dict[str, int]:
    """Extractions and chunkings while the test runs (the real functions run)."""
    counts = {"extract": 0, "chunk": 0}
    extract, chunk = pipeline.prepare.extract_bytes, pipeline.prepare.chunk_document

    def extracted(*args, **kwargs):
        counts["extract"] += 1
        return extract(*args, **kwargs)

    def chunked(*args, **kwargs):
        counts["chunk"] += 1
        return chunk(*args, **kwargs)

    monkeypatch.setattr(pipeline.prepare, "extract_bytes", extracted)
    monkeypatch.setattr(pipeline.prepare, "chunk_document", chunked)
    return counts


def notes(folder: Path, n: int) -> None:
    rng = random.Random(28)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        paragraphs = ["\n\n".join(" ".join(rng.choice(WORDS) for _ in range(60)).capitalize() + "."
                                  for _ in range(1 + i % 3))]
        (folder / f"note-{i:02}.md").write_text(f"# Note {i}\n\n## Part\n\n{paragraphs[0]}\n")


def sync(folder: Path, settings: IndexSettings):
    state = index_folder(str(folder), settings, return_state=True)
    assert state.is_completed(), state.message
    assert check_index(Store(settings.db)) == []
    return state.result()


def chunks_version(settings: IndexSettings) -> int:
    store = Store(settings.db)
    return store.db.open_table(store.active_table()).version


def rows(settings: IndexSettings) -> list[tuple]:
    """Every chunk row, vectors as bytes, in chunk-id order; not the generation, which each write draws."""
    out = []
    for row in Store(settings.db).chunk_rows():
        del row["generation"]
        row["vector"] = np.asarray(row["vector"], np.float32).tobytes()
        out.append(tuple(sorted(row.items())))
    return sorted(out)


def records(settings: IndexSettings) -> list[dict]:
    return sorted(Store(settings.db).document_rows(RECORD_COLUMNS), key=lambda r: r["path"])


def test_renaming_every_file_writes_stored_rows_in_a_few_commits_equal_to_a_fresh_index(tmp_path, counted):
    folder = tmp_path / "notes"
    notes(folder, 12)
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    first = sync(folder, settings)
    (folder / "moved").mkdir()
    for i in range(12):
        (folder / f"note-{i:02}.md").rename((folder / "moved" if i % 2 else folder) / f"renamed-{i:02}.md")
    counted.update(extract=0, chunk=0)
    version = chunks_version(settings)
    summary = sync(folder, settings)
    assert (summary.indexed, summary.deleted, summary.encoded, summary.reused) == (12, 12, 0, first.chunks)
    assert counted == {"extract": 0, "chunk": 0}
    # one merge for the renamed rows, one delete for the old ones, the run's finish (optimize,
    # index updates): a constant, not one commit or batch per file
    assert chunks_version(settings) - version <= 6

    fresh = IndexSettings(db=str(tmp_path / "fresh"), model=FAKE)
    sync(folder, fresh)
    assert rows(settings) == rows(fresh)
    assert records(settings) == records(fresh)


def test_one_file_copied_twice_in_one_run_lends_its_rows_to_both(docs, tmp_path, counted):
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    sync(docs, settings)
    shutil.copy(docs / "04-dropout.md", docs / "copy-a.md")
    (docs / "04-dropout.md").rename(docs / "copy-b.md")
    counted.update(extract=0, chunk=0)
    summary = sync(docs, settings)
    assert (summary.indexed, summary.deleted, summary.encoded) == (2, 1, 0)
    assert counted == {"extract": 0, "chunk": 0}
    fresh = IndexSettings(db=str(tmp_path / "fresh"), model=FAKE)
    sync(docs, fresh)
    assert rows(settings) == rows(fresh) and records(settings) == records(fresh)


def test_a_storage_error_on_the_rename_write_leaves_the_files_to_the_ordinary_path(docs, tmp_path, monkeypatch):
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    sync(docs, settings)
    (docs / "04-dropout.md").rename(docs / "renamed.md")

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rename, "_write", disk_full)
    summary = sync(docs, settings)  # written by the ordinary path, from the stored work
    assert (summary.indexed, summary.deleted, summary.encoded) == (1, 1, 0)
    assert {r["path"] for r in records(settings)} == {"renamed.md", "10-lr-scheduler.md"}
