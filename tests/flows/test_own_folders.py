"""An index (or Prefect's home) inside the folder it indexes is never indexed.
Its LanceDB files failed on every sync (exit 3 for ever), and a no-op sync was never one."""
from __future__ import annotations

import pytest

from citeline import Index
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings
from citeline.flows.sync_plan import unchanged
from fakes import FAKE

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_an_index_inside_its_folder_is_left_out_and_the_next_sync_is_a_no_op(docs, monkeypatch, capfd, caplog):
    db = docs / "index"  # visible: not skipped as a hidden folder
    prefect_home = docs / "prefect-home"
    (prefect_home / "logs").mkdir(parents=True)
    (prefect_home / "logs" / "server.log").write_text("Prefect's log, not a document\n")
    monkeypatch.setenv("PREFECT_HOME", str(prefect_home))
    index = Index.create(str(db), model=FAKE)
    first = index.sync(str(docs))
    assert (first.indexed, first.failed) == (2, 0), first.line()
    assert sorted(r["path"] for r in Store(str(db)).document_rows(["path"])) == ["04-dropout.md", "10-lr-scheduler.md"]
    # the run's log: on stderr, or held by pytest's log capture where Prefect's handler lets it propagate
    logged = capfd.readouterr().err.splitlines() + [r.getMessage() for r in caplog.records]
    said = [line for line in logged if "folder.left_out" in line]
    assert any(f'"folder": "{db}"' in line for line in said) and any(f'"folder": "{prefect_home}"' in line for line in said)
    second = index.sync(str(docs))  # the index's files, written by the first sync, are not new files
    assert (second.indexed, second.failed, second.skipped) == (0, 0, 2), second.line()
    assert unchanged(str(docs), IndexSettings(db=str(db), model=FAKE)) is not None
