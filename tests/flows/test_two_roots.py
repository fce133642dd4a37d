"""Two synced folders that both hold ``notes.md``: ``status`` showed two identical
``notes.md`` rows and ``citeline chunks notes.md`` answered "no document notes.md". Documents are
now shown by a path that tells the folders apart, and ``chunks``, ``rm``, ``Index.document`` and the
HTTP API take any ending of a path that names one document, listing the candidates otherwise."""
import json
import os

import pytest
from click.testing import CliRunner

from citeline.library import Index
from citeline.cli.main import cli
from citeline.index.lookup import Ambiguous
from fakes import FAKE

pytestmark = pytest.mark.usefixtures("prefect_harness")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture()
def two_roots(tmp_path):
    one, two = tmp_path / "proj1", tmp_path / "proj2"
    for folder, topic in ((one, "gradient clipping"), (two, "weight decay")):
        (folder / "sub").mkdir(parents=True)
        (folder / "notes.md").write_text(f"# Notes\n\nThese notes are about {topic} in training.\n")
    (one / "sub" / "only.md").write_text("# Only\n\nA file that one folder holds.\n")
    db = tmp_path / "db"
    for folder in (one, two):
        assert run("index", folder, "--db", db, "--model", FAKE, "--no-progress").exit_code == 0
    return tmp_path, db


def test_status_tells_the_two_notes_apart(two_roots):
    _, db = two_roots
    result = run("status", "--db", db)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "notes.md" in line]
    assert [line.split()[-1] for line in lines] == ["proj1/notes.md", "proj2/notes.md"]
    report = json.loads(run("status", "--db", db, "--json").stdout)
    names = sorted(d["name"] for d in report["documents"])
    assert names == ["proj1/notes.md", "proj2/notes.md", "sub/only.md"]
    assert len({d.name for d in Index(str(db)).documents()}) == 3


def test_chunks_takes_an_ending_and_lists_the_candidates_of_an_ambiguous_one(two_roots, monkeypatch):
    base, db = two_roots
    monkeypatch.chdir(base)  # no notes.md here: the name is looked up in the index only
    chosen = run("chunks", "proj2/notes.md", "--db", db)
    assert chosen.exit_code == 0, chosen.output
    assert chosen.output.splitlines()[0].startswith("proj2/notes.md  1 chunks")
    assert run("chunks", "only.md", "--db", db).exit_code == 0  # unambiguous: one document ends so
    both = run("chunks", "notes.md", "--db", db)
    assert both.exit_code == 1
    assert "2 documents" in both.output and "proj1/notes.md" in both.output and "proj2/notes.md" in both.output
    assert "no document" in run("chunks", "tes.md", "--db", db).output  # whole components only
    with pytest.raises(Ambiguous) as caught:
        Index(str(db)).document("notes.md")
    assert caught.value.candidates == ("proj1/notes.md", "proj2/notes.md")
    assert Index(str(db)).document("proj1/notes.md").source == str(base / "proj1" / "notes.md")


def test_chunks_of_a_file_here_prefers_it(two_roots, monkeypatch):
    base, db = two_roots
    monkeypatch.chdir(base / "proj1")
    result = run("chunks", "notes.md", "--db", db)
    assert result.exit_code == 0, result.output
    assert str(base / "proj1" / "notes.md") in result.output.splitlines()[0]


def test_rm_takes_an_ending_and_removes_nothing_on_an_ambiguous_one(two_roots, monkeypatch):
    base, db = two_roots
    monkeypatch.chdir(base)
    os.rename(base / "proj2", base / "renamed")  # gone from where it was synced
    ambiguous = run("rm", "notes.md", "--db", db)
    assert ambiguous.exit_code == 1 and "proj1/notes.md" in ambiguous.output
    assert len(Index(str(db)).documents()) == 3
    removed = run("rm", "proj2/notes.md", "--db", db)
    assert removed.exit_code == 0, removed.output
    assert f"removed {base / 'proj2' / 'notes.md'}" in removed.output
    assert sorted(d.name for d in Index(str(db)).documents()) == ["notes.md", "sub/only.md"]
    assert run("rm", "sub", "--db", db).exit_code == 0  # a folder's ending
    assert [d.name for d in Index(str(db)).documents()] == ["notes.md"]


def test_the_http_api_takes_an_ending(two_roots):
    from fastapi.testclient import TestClient

    from citeline.web.app import create_app

    _, db = two_roots
    client = TestClient(create_app(Index(str(db), model=FAKE)), base_url="http://127.0.0.1")
    found = client.get("/documents", params={"path": "proj1/notes.md"})
    assert found.status_code == 200
    assert [d["name"] for d in found.json()["documents"]] == ["proj1/notes.md"]
    doc_id = found.json()["documents"][0]["document_id"]
    assert client.get("/documents/only.md").json()["document_id"] != doc_id
    assert client.get(f"/documents/{doc_id}/chunks").status_code == 200
    candidates = client.get("/documents", params={"path": "notes.md"}).json()["documents"]
    assert [d["name"] for d in candidates] == ["proj1/notes.md", "proj2/notes.md"]
    ambiguous = client.get("/documents/notes.md")
    assert ambiguous.status_code == 404 and "proj2/notes.md" in ambiguous.json()["error"]["message"]


def test_search_names_each_notes_by_its_folder(two_roots):
    _, db = two_roots
    found = {c.document for c in Index(str(db), model=FAKE).search("notes about training", k=3, retriever="bm25")}
    assert {"proj1/notes.md", "proj2/notes.md"} <= found
    result = run("search", "notes about training", "--db", db, "--model", FAKE, "--retriever", "bm25", "--json")
    assert {"proj1/notes.md", "proj2/notes.md"} <= {c["document"] for c in json.loads(result.stdout)["results"]}


def test_a_snapshot_looks_each_paths_namesakes_up_once_and_a_sync_shows_new_ones(two_roots, monkeypatch):
    """Which documents share a cited path is read once per snapshot (it was a scan of the documents
    table for every question); a sync that adds a third ``notes.md`` is seen by the next question."""
    from citeline.index.store import Store

    base, db = two_roots
    index = Index(str(db), model=FAKE)
    ask = lambda: sorted(c.document for c in index.search("notes about training", k=3, retriever="bm25"))
    first = ask()
    reads = []
    document_rows = Store.document_rows
    monkeypatch.setattr(Store, "document_rows", lambda self, *a, **k: reads.append(a) or document_rows(self, *a, **k))
    assert ask() == first and reads == []
    third = base / "proj3"
    third.mkdir()
    (third / "notes.md").write_text("# Notes\n\nThese notes are about training loss in training.\n")
    index.sync(str(third))
    found = {c.document for c in index.search("notes about training", k=3, retriever="bm25")}
    assert "proj3/notes.md" in found and "notes.md" not in found
