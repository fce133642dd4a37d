"""A sync forgets a document only from evidence that its file is gone.

An unmounted share is an empty folder, and a folder the listing cannot read looked empty too:
both wiped documents that were still there. Permission is denied for real: root reads through
any mode, so the commands that must meet a chmod 000 run without the DAC capabilities
(testkit ``WITHOUT_DAC``).
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from testkit import ROOT, WITHOUT_DAC, invoke, probe_cli, synced_index
from citeline.index.store import Store

pytestmark = pytest.mark.usefixtures("prefect_harness")


def write_notes(folder, count: int, under: str = "") -> None:
    (folder / under).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (folder / under / f"note-{i:02d}.md").write_text(f"# Note {i}\n\nThe harbour log of day {i} lists ship {i * 7}.\n")


def paths(db: str) -> list[str]:
    return sorted(r["path"] for r in Store(db).document_rows(["path"]))


def test_a_folder_that_comes_up_empty_forgets_nothing_unless_allowed(tmp_path, tmp_path_factory):
    share = tmp_path / "share"
    write_notes(share, 5)
    index = synced_index(share, tmp_path_factory, indexed=5)
    rows = Store(index.uri).count_chunks()
    for note in share.iterdir():  # the share did not mount: its mount point is an empty folder
        note.unlink()

    held = invoke("index", share, "--db", index.uri)
    assert held.exit_code == 4, held.output
    assert f"not forgetting 5 documents under {share}: the folder came up empty" in held.output
    assert "--allow-mass-delete" in held.output and "deleted 0" in held.output
    assert len(paths(index.uri)) == 5 and Store(index.uri).count_chunks() == rows
    assert invoke("index", share, "--db", index.uri).exit_code == 4  # not answered "unchanged" either

    allowed = invoke("index", share, "--db", index.uri, "--allow-mass-delete")
    assert allowed.exit_code == 0 and "deleted 5" in allowed.output, allowed.output
    assert paths(index.uri) == []


def test_a_sync_that_would_forget_most_of_a_folder_is_held_a_few_deletions_are_not(tmp_path, tmp_path_factory):
    folder = tmp_path / "docs"
    write_notes(folder, 24)
    index = synced_index(folder, tmp_path_factory, indexed=24)
    for i in range(4):
        (folder / f"note-{i:02d}.md").unlink()
    assert index.sync(str(folder)).deleted == 4  # a sixth of the folder: an ordinary sync
    for i in range(4, 15):
        (folder / f"note-{i:02d}.md").unlink()

    held = index.sync(str(folder))
    assert (held.deleted, held.held) == (0, (f"not forgetting 11 documents under {folder}: that is 11 of its 20 "
                                             "documents; --allow-mass-delete forgets them",))
    assert len(paths(index.uri)) == 20
    assert index.sync(str(folder), allow_mass_delete=True).deleted == 11
    assert paths(index.uri) == [f"note-{i}.md" for i in range(15, 24)]


LIST = """
import json, sys
from dataclasses import asdict
from citeline.pipeline.walk import list_folder
listing = list_folder(sys.argv[1])
print(json.dumps({"files": [f.path for f in listing.files], "unlisted": [asdict(u) for u in listing.unlisted]}))
"""


def test_the_listing_names_each_folder_and_file_it_could_not_read(tmp_path):
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "inside.md").write_text("kept\n")
    (tmp_path / "no-search").mkdir()  # listable, but its files cannot be stat'ed
    (tmp_path / "no-search" / "file.md").write_text("kept\n")
    (tmp_path / "open.md").write_text("listed\n")
    (tmp_path / "locked").chmod(0)
    (tmp_path / "no-search").chmod(0o444)
    try:
        done = subprocess.run([*WITHOUT_DAC, sys.executable, "-c", LIST, str(tmp_path)], capture_output=True,
                              text=True, cwd=ROOT, timeout=120)
    finally:
        (tmp_path / "locked").chmod(0o755)
        (tmp_path / "no-search").chmod(0o755)
    listing = json.loads(done.stdout or done.stderr)
    assert listing["files"] == ["open.md"]
    assert listing["unlisted"] == [{"path": str(tmp_path / "locked"), "reason": "Permission denied"},
                                   {"path": str(tmp_path / "no-search" / "file.md"), "reason": "Permission denied"}]


@pytest.fixture
def locked_sync(tmp_path, tmp_path_factory, cli_env):
    """A folder indexed with ``locked/inside.md``, then ``locked`` made unreadable; chmod undone after."""
    folder = tmp_path / "docs"
    write_notes(folder, 2)
    write_notes(folder, 1, under="locked")
    index = synced_index(folder, tmp_path_factory, indexed=3)
    (folder / "locked").chmod(0)
    yield folder, index, cli_env
    (folder / "locked").chmod(0o755)


def test_a_subfolder_that_cannot_be_listed_keeps_its_documents_and_the_sync_exits_4(locked_sync):
    folder, index, env = locked_sync
    run = probe_cli(["index", str(folder), "--db", index.uri], [], env, fake=True, wrapper=WITHOUT_DAC)
    assert run.exit == 4, run.stdout + run.stderr
    assert (f"not forgetting 1 document under {folder / 'locked'}: it could not be listed (Permission denied)"
            in run.stderr), run.stderr
    assert "Traceback" not in run.stderr and "deleted 0" in run.stdout
    assert paths(index.uri) == ["locked/note-00.md", "note-00.md", "note-01.md"]

    (folder / "note-01.md").unlink()  # what was listed is still synced: a deletion seen is made
    run = probe_cli(["index", str(folder), "--db", index.uri], [], env, fake=True, wrapper=WITHOUT_DAC)
    assert run.exit == 4 and "deleted 1" in run.stdout, run.stdout + run.stderr
    assert paths(index.uri) == ["locked/note-00.md", "note-00.md"]


def test_an_unreadable_citelineignore_stops_the_sync_with_one_line(tmp_path, tmp_path_factory, cli_env):
    folder = tmp_path / "docs"
    write_notes(folder, 2)
    (folder / ".citelineignore").write_text("drafts/\n")
    index = synced_index(folder, tmp_path_factory, indexed=2)
    (folder / "note-00.md").unlink()
    (folder / ".citelineignore").chmod(0)
    run = probe_cli(["index", str(folder), "--db", index.uri], [], cli_env, fake=True, wrapper=WITHOUT_DAC)
    assert run.exit == 1, run.stdout + run.stderr
    assert run.stderr.strip().splitlines() == [
        f"Error: {folder / '.citelineignore'}: cannot be read (Permission denied); nothing was indexed or forgotten"]
    assert paths(index.uri) == ["note-00.md", "note-01.md"]
