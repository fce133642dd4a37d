"""Stat first, hash second: a sync opens only files whose stat moved, and re-embeds only changed bytes.

Opens are counted with an audit hook on the real code path: Python's own ``open`` event
(``open()``, ``os.open``) and ``citeline.open``, which ``read_source`` raises before its
``openat2``. Tasks run on threads of this process, so the hook sees every read.
"""
import os
import sys
from pathlib import Path

import pytest

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings
from citeline.runtime.handles import embedder_for
from fakes import FAKE

pytestmark = [pytest.mark.usefixtures("prefect_harness")]


class Opens:
    """Files opened under a folder, as the audit hook saw them (the hook is permanent: inert when unwatched)."""

    hooked = False
    folder: str | None = None
    seen: list[str] = []

    @classmethod
    def watch(cls, folder: Path) -> list[str]:
        if not cls.hooked:
            sys.addaudithook(cls._hook)
            cls.hooked = True
        cls.folder, cls.seen = str(folder), []
        return cls.seen

    @classmethod
    def _hook(cls, event, args):
        if cls.folder is None or event not in ("open", "citeline.open") or not args:
            return
        path = args[0]
        if isinstance(path, (str, bytes, os.PathLike)) and os.fsdecode(path).startswith(cls.folder + os.sep):
            cls.seen.append(os.path.basename(os.fsdecode(path)))


@pytest.fixture
def opens():
    yield Opens.watch
    Opens.folder = None


def sync(folder: Path, settings: IndexSettings, **kw):
    state = index_folder(str(folder), settings, return_state=True, **kw)
    assert state.is_completed(), state.message
    return state.result()


def embedded(settings: IndexSettings) -> int:
    """Texts encoded so far by the embedder the runs use (the process caches it per settings)."""
    return embedder_for(settings).stats.texts


@pytest.fixture
def indexed(docs: Path, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    before = embedded(settings)
    first = sync(docs, settings)
    assert first.indexed == 2 and embedded(settings) > before  # the count sees the runs' encoding
    return docs, settings


def test_a_no_op_sync_opens_no_file(indexed, opens):
    docs, settings = indexed
    seen = opens(docs)
    before = embedded(settings)
    again = sync(docs, settings)
    assert (again.indexed, again.skipped) == (0, 2)
    assert seen == [] and embedded(settings) == before


def test_a_touched_identical_file_is_hashed_once_and_not_embedded(indexed, opens):
    docs, settings = indexed
    touched = docs / "04-dropout.md"
    chunks = {r["chunk_id"] for r in Store(settings.db).chunk_rows(["chunk_id"])}
    os.utime(touched, ns=(touched.stat().st_atime_ns, touched.stat().st_mtime_ns + 5_000_000_000))
    seen = opens(docs)
    before = embedded(settings)
    again = sync(docs, settings)
    assert (again.indexed, again.skipped) == (0, 2)
    assert seen.count("04-dropout.md") == 1 and "10-lr-scheduler.md" not in seen  # read once: hashed, not re-read
    assert embedded(settings) == before
    assert {r["chunk_id"] for r in Store(settings.db).chunk_rows(["chunk_id"])} == chunks
    record = next(r for r in Store(settings.db).document_rows() if r["path"] == "04-dropout.md")
    assert record["mtime_ns"] == touched.stat().st_mtime_ns  # its new stat is recorded ...
    seen = opens(docs)
    assert sync(docs, settings).skipped == 2 and seen == []  # ... so the next sync reads nothing


def test_a_changed_file_is_read_once_for_hash_and_extraction(indexed, opens):
    docs, settings = indexed
    changed = docs / "10-lr-scheduler.md"
    changed.write_text(changed.read_text() + "\n\nWarm restarts help zebras.\n")
    seen = opens(docs)
    before = embedded(settings)
    again = sync(docs, settings)
    assert (again.indexed, again.skipped) == (1, 1) and embedded(settings) > before
    assert seen == ["10-lr-scheduler.md"]
    assert "zebras" in " ".join(r["content"] for r in Store(settings.db).chunk_rows(["content"]))


def test_verify_catches_a_change_that_kept_size_and_mtime(indexed, opens):
    docs, settings = indexed
    victim = docs / "04-dropout.md"
    st = victim.stat()
    text = victim.read_text()
    swapped = text.replace("dropout", "zebrout", 1)
    assert len(swapped) == len(text) and swapped != text
    victim.write_text(swapped)  # in place: same inode, same size
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))

    assert sync(docs, settings).skipped == 2  # the stat matches: an ordinary sync cannot tell
    seen = opens(docs)
    verified = sync(docs, settings, verify=True)
    assert (verified.indexed, verified.skipped) == (1, 1)
    assert sorted(seen) == ["04-dropout.md", "10-lr-scheduler.md"]  # every file hashed
    assert "zebrout" in " ".join(r["content"] for r in Store(settings.db).chunk_rows(["content"]))
    assert check_index(Store(settings.db)) == []


def test_an_index_from_before_stats_is_migrated_and_hashed_once(indexed, opens):
    docs, settings = indexed
    store = Store(settings.db)
    store.documents().drop_columns(["mtime_ns", "inode", "device"])  # as an older citeline wrote it
    before = embedded(settings)
    seen = opens(docs)
    again = sync(docs, settings)
    assert (again.indexed, again.skipped) == (0, 2) and embedded(settings) == before
    assert sorted(seen) == ["04-dropout.md", "10-lr-scheduler.md"]
    seen = opens(docs)
    assert sync(docs, settings).skipped == 2 and seen == []
    assert check_index(store) == []
