"""Text is never lost because it looks like a heading.

A heading's words are quoted with the chunk they open, a document of nothing but headings
gets chunks, and `citeline check` (and `check --repair`) is green on such an index.
"""
from pathlib import Path

import lancedb
import pytest

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.pipeline.prepare import UNQUOTED
from citeline.schemas.settings import IndexSettings
from citeline.schemas.tables import DOCUMENTS
from fakes import FAKE
from testkit import invoke

pytestmark = [pytest.mark.usefixtures("prefect_harness")]

ONLY_HEADINGS = "<html><body><h3>Quarterly results of the northern region</h3></body></html>"
DECK_OF_TITLES = "# Agenda\n\n## Welcome and introductions\n\n## Budget review for next year\n"


@pytest.fixture
def folder(tmp_path, make) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "only-h3.html").write_text(ONLY_HEADINGS)
    (docs / "titles.md").write_text(DECK_OF_TITLES)
    (docs / "founder.pdf").write_bytes(make.founder_pdf())
    (docs / "marks.md").write_text("# \n\n## \n")  # a template never filled in: no words at all
    return docs


def synced(folder: Path, tmp_path: Path) -> Store:
    db = str(tmp_path / "db")
    assert index_folder(str(folder), IndexSettings(model=FAKE, db=db), return_state=True).is_completed()
    return Store(db)


def quotes(store: Store) -> dict[str, list[str]]:
    """Each document's chunk contents, checked against its canonical text as a citation is."""
    records = {d["doc_id"]: d for d in store.document_rows(["doc_id", "path", "canonical"])}
    found: dict[str, list[str]] = {}
    for row in sorted(store.chunk_rows(["doc_id", "start", "end", "content", "ordinal"]), key=lambda r: r["ordinal"]):
        record = records[row["doc_id"]]
        assert record["canonical"][row["start"] : row["end"]] == row["content"]
        found.setdefault(record["path"], []).append(row["content"])
    return found


def test_headings_are_quoted_and_a_text_of_headings_gets_chunks(folder, tmp_path, make):
    store = synced(folder, tmp_path)

    got = quotes(store)
    assert got["only-h3.html"] == ["Quarterly results of the northern region"]
    assert got["titles.md"] == ["Agenda\n\n## Welcome and introductions\n\n## Budget review for next year"]
    opening = [q for q in got["founder.pdf"] if make.FOUNDER in q]
    assert opening and "Founder Chairman of the company" in opening[0]  # the name opens its body's chunk
    assert "marks.md" not in got  # no words, no chunk, and a note that says so
    marks = store.document_rows(["status", "chunk_count", "notes"], "path = 'marks.md'")[0]
    assert (marks["status"], marks["chunk_count"], marks["notes"]) == ("indexed", 0, UNQUOTED)
    assert check_index(store) == []
    assert invoke("check", "--db", store.uri).exit_code == 0


def test_repair_of_a_document_stored_with_zero_chunks_is_green(folder, tmp_path):
    """An index written before headings were quoted holds the <h3> page with zero
    chunks; `check --repair` indexed it again to zero chunks and stayed red every week."""
    store = synced(folder, tmp_path)
    doc_id = store.document_rows(["doc_id"], "path = 'only-h3.html'")[0]["doc_id"]
    db = lancedb.connect(store.uri)
    db.open_table(store.active_table()).delete(f"doc_id = '{doc_id}'")
    db.open_table(DOCUMENTS).update(where=f"doc_id = '{doc_id}'", values={"chunk_count": 0})
    assert {(v.rule, v.subject) for v in check_index(store)} == {("empty", "only-h3.html")}

    result = invoke("check", "--db", store.uri, "--repair")

    assert result.exit_code == 0, result.output
    assert "reindexed: only-h3.html" in result.output
    assert check_index(store) == []
    assert quotes(store)["only-h3.html"] == ["Quarterly results of the northern region"]
