"""Which files the index reads and forgets: links swapped in, subfolders, renames, byte names.

Real Prefect, real LanceDB, the real model; the file system races are made
deterministic by changing the folder between runs (``citeline retry`` and
``check --repair`` read paths stored by an earlier run).
"""
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from citeline.cli.main import cli
from citeline.flows.ingest import index_folder
from citeline.flows.repair import repair_index
from citeline.flows.retry import retry_failed
from citeline.index.check import check_index, source_warnings
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("prefect_harness")]

SECRET = "quetzalcoatlus"


def index(root: Path, s: IndexSettings):
    return index_folder(str(root), s, return_state=True).result(raise_on_failure=False)


def by_path(s: IndexSettings) -> dict[str, dict]:
    return {r["path"]: r for r in Store(s.db).document_rows()}


def served(s: IndexSettings) -> str:
    # what readers see: a forgotten document's rows are kept, unowned, for the grace period
    return " ".join(r["content"] for r in Store(s.db).chunk_rows(["content"], owned=True))


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(f"# Secret\n\nThe {SECRET} lives outside the indexed folder.\n")
    return folder


def test_retry_does_not_follow_a_failed_file_swapped_for_a_symlink(docs, outside, tmp_path):
    s = IndexSettings(db=str(tmp_path / "index"))
    (docs / "broken.md").write_bytes(b"caf\xe9, latin-1 bytes\x00\x01")
    assert index(docs, s).failed == 1
    (docs / "broken.md").unlink()
    (docs / "broken.md").symlink_to(outside / "secret.md")

    summary = retry_failed(s, return_state=True).result(raise_on_failure=False)

    assert (summary.indexed, summary.failed) == (0, 1)
    record = by_path(s)["broken.md"]
    assert (record["status"], record["stage"]) == ("failed", "read")
    assert record["reason"].startswith("unreadable: a symbolic link")
    assert SECRET not in served(s)
    assert check_index(Store(s.db)) == []


def test_repair_does_not_follow_a_file_swapped_for_a_symlink(docs, outside, tmp_path):
    s = IndexSettings(db=str(tmp_path / "index"))
    index(docs, s)
    store = Store(s.db)
    doc_id = by_path(s)["04-dropout.md"]["doc_id"]
    store.chunks(store.stamp()).delete(f"doc_id = '{doc_id}'")  # damage: the repair re-reads the file
    (docs / "04-dropout.md").unlink()
    (docs / "04-dropout.md").symlink_to(outside / "secret.md")

    report = repair_index(s, return_state=True).result(raise_on_failure=False)

    failed = [r for r in report.repairs if r.action == "reindex-failed"]
    assert [r.subject for r in failed] == ["04-dropout.md"]
    assert "unreadable: a symbolic link" in failed[0].detail
    assert SECRET not in served(s)


def test_a_file_indexed_alone_is_forgotten_by_a_sync_of_its_folder(docs, tmp_path):
    s = IndexSettings(db=str(tmp_path / "index"))
    (docs / "2024").mkdir()
    q1 = docs / "2024" / "q1.md"
    q1.write_text("# Q1\n\nThe first quarter's zeppelin budget was approved.\n")
    index(q1, s)  # recorded with root docs/2024
    index(docs / "2024", s)
    q1.unlink()

    summary = index(docs, s)

    assert summary.deleted == 1
    assert "zeppelin" not in served(s)
    assert check_index(Store(s.db)) == []


def test_a_renamed_folder_is_removed_by_rm_and_reported_by_check(docs, tmp_path):
    s = IndexSettings(db=str(tmp_path / "index"))
    index(docs, s)
    renamed = docs.with_name("docs-2025")
    shutil.move(docs, renamed)
    index(renamed, s)
    store = Store(s.db)
    assert len(store.document_rows(["doc_id"])) == 4  # every document twice: the old copies are still served
    warnings = source_warnings(store)
    assert [(w.rule, w.subject) for w in warnings] == [("root-gone", str(docs))]

    out = CliRunner().invoke(cli, ["rm", str(docs), "--db", s.db])

    assert out.exit_code == 0, out.output
    assert f"removed 2 documents under {docs}" in out.output
    assert sorted(r["source"] for r in store.document_rows(["source"])) == sorted(
        str(p) for p in renamed.iterdir())
    assert check_index(store) == [] and source_warnings(store) == []
    assert store.roots() == [str(renamed)]
    again = CliRunner().invoke(cli, ["rm", str(docs), "--db", s.db])
    assert again.exit_code == 1 and "no document is indexed under" in again.output


def test_check_warns_about_a_file_gone_outside_any_synced_folder(docs, tmp_path):
    s = IndexSettings(db=str(tmp_path / "index"))
    index(docs / "04-dropout.md", s)
    (docs / "04-dropout.md").unlink()

    out = CliRunner().invoke(cli, ["check", "--db", s.db])

    assert out.exit_code == 0, out.output  # a warning: the index itself is consistent
    assert f"warning: root-gone: {docs / '04-dropout.md'}" in out.output


def test_a_file_name_that_is_not_utf8_is_indexed_under_an_escaped_name(docs, tmp_path):
    s = IndexSettings(db=str(tmp_path / "index"))
    with open(os.path.join(os.fsencode(docs), b"caf\xe9.md"), "wb") as handle:
        handle.write(b"# Cafe\n\nThe espresso machine is descaled on Mondays.\n")

    first = index(docs, s)

    assert (first.indexed, first.failed) == (3, 0)
    record = by_path(s)["caf\\xe9.md"]
    assert record["status"] == "indexed" and record["source"] == f"{docs}/caf\\xe9.md"
    assert "descaled on Mondays" in served(s)
    assert index(docs, s).skipped == 3  # read again through its real name: current
    os.unlink(os.path.join(os.fsencode(docs), b"caf\xe9.md"))
    assert index(docs, s).deleted == 1
    assert check_index(Store(s.db)) == [] and source_warnings(Store(s.db)) == []
