"""`/view/{chunk}` pages are built from what the index stored, never by parsing the source in
the service; a source changed or gone since it was indexed is said to be (major 6).

A real index (fake embedder, real flow, real LanceDB) served in-process by FastAPI's TestClient.
"""
from __future__ import annotations

import io
import os

import pytest
from fastapi.testclient import TestClient

import make
from citeline.library import Index
from citeline.web.app import create_app
from fakes import FAKE

pytestmark = pytest.mark.usefixtures("prefect_harness")
AUDIT = "The auditors signed off on 2024-04-02."


@pytest.fixture
def served(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    (folder / "sales.xlsx").write_bytes(make.workbook())
    (folder / "notes.md").write_text("# Notes\n\nThe harbour committee meets on Fridays at the pier.\n")
    index = Index.create(str(tmp_path / "db"), model=FAKE)
    assert index.sync(str(folder)).indexed == 2
    with TestClient(create_app(index, poll_s=0), base_url="http://127.0.0.1") as client:
        yield folder, client


def chunk_with(client, path: str, words: str) -> str:
    doc = next(d["document_id"] for d in client.get("/documents").json()["documents"] if d["path"] == path)
    return next(c["chunk_id"] for c in client.get(f"/documents/{doc}/chunks").json()["chunks"] if words in c["content"])


def other_workbook() -> bytes:
    """The same sheets, the audit remark saying something else."""
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.title = "Q1 sales"
    notes = wb.create_sheet("Notes ")
    notes.append(["Topic", "Remark"])
    notes.append(["Audit", "The auditors never signed anything."])
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def test_an_unchanged_workbook_is_viewed_from_the_index_without_a_notice(served):
    _, client = served
    page = client.get(f"/view/{chunk_with(client, 'sales.xlsx', AUDIT)}")
    assert page.status_code == 200 and AUDIT in page.text and 'class="range"' in page.text
    assert "source-changed" not in page.text


def test_a_workbook_replaced_since_indexing_is_viewed_as_indexed_and_said_to_have_changed(served):
    """Before: the view parsed the current file with openpyxl in the service's process and
    showed the new workbook's cells under the old citation."""
    folder, client = served
    view = f"/view/{chunk_with(client, 'sales.xlsx', AUDIT)}"
    (folder / "sales.xlsx").write_bytes(other_workbook())
    page = client.get(view)
    assert page.status_code == 200, page.text
    assert AUDIT in page.text and "never signed" not in page.text
    assert "the source has changed since it was indexed" in page.text


def test_a_workbook_replaced_by_bytes_no_parser_can_read_is_still_viewed(served):
    """Before: 500 (openpyxl's BadZipFile raised inside the request)."""
    folder, client = served
    view = f"/view/{chunk_with(client, 'sales.xlsx', AUDIT)}"
    (folder / "sales.xlsx").write_bytes(b"PK\x03\x04" + os.urandom(4096))
    page = client.get(view)
    assert page.status_code == 200 and AUDIT in page.text and "changed since it was indexed" in page.text


def test_a_deleted_source_is_viewed_as_indexed_and_said_to_be_gone(served):
    """Before: 404 for the sheet view (the service could not re-read the file)."""
    folder, client = served
    views = [f"/view/{chunk_with(client, 'sales.xlsx', AUDIT)}", f"/view/{chunk_with(client, 'notes.md', 'harbour')}"]
    (folder / "sales.xlsx").unlink()
    (folder / "notes.md").unlink()
    for view, words in zip(views, (AUDIT, "harbour committee")):
        page = client.get(view)
        assert page.status_code == 200 and words in page.text, page.text
        assert "cannot be served" in page.text and "as it was indexed" in page.text


def test_an_edited_text_file_is_said_to_have_changed(served):
    folder, client = served
    view = f"/view/{chunk_with(client, 'notes.md', 'harbour')}"
    assert "source-changed" not in client.get(view).text
    (folder / "notes.md").write_text("# Notes\n\nThe committee moved to Mondays.\n")
    page = client.get(view).text
    assert "harbour committee meets on Fridays" in page and "changed since it was indexed" in page
