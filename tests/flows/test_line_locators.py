"""Each source's best line carries its own place in its document's unit (query/locate.py): the
cells of its row on a sheet, its page in a PDF; a text document's line is its `#char=` range.
Checked against the files themselves (openpyxl's cells, PyMuPDF's page text), through the
library, `--json` and the terminal. The fake embedder: which chunk comes first is not the point,
where each shown line lies is."""
import json
import re

import openpyxl
import pymupdf
import pytest
from click.testing import CliRunner

from citeline import Index
from citeline.cli.main import cli
from citeline.schemas.retrieval import Citation
from fakes import FAKE

pytestmark = pytest.mark.usefixtures("prefect_harness")
SHEET_RANGE = re.compile(r"^'?(?P<sheet>[^'!]+)'?!(?P<c1>[A-Z]+)(?P<r1>\d+)(?::(?P<c2>[A-Z]+)(?P<r2>\d+))?$")


def flowing_pdf() -> bytes:
    """Prose that runs on from page 1 to page 2 mid-sentence: a chunk crosses the page break."""
    import textwrap

    lines = textwrap.wrap(" ".join(f"Sentence {i} tells how pump {i} of the harbour works." for i in range(60)), 90)
    doc = pymupdf.open()
    for part in (lines[:20], lines[20:]):
        page = doc.new_page()
        for n, line in enumerate(part):
            page.insert_text((54, 60 + 14 * n), line, fontsize=10)
    return doc.tobytes()


@pytest.fixture(scope="module")
def indexed(make, tmp_path_factory):
    root = tmp_path_factory.mktemp("lines")
    folder = root / "docs"
    folder.mkdir()
    (folder / "half-year.xlsx").write_bytes(make.report_workbook())
    (folder / "journal.pdf").write_bytes(make.text_pdf(4, seed=3))
    (folder / "flow.pdf").write_bytes(flowing_pdf())
    (folder / "notes.md").write_text("# Harbour\n\nThe committee meets at the old pier.\n\n"
                                     "The pump house keeps the minutes of every meeting.\n")
    index = Index.create(str(root / "db"), model=FAKE)
    assert index.sync(str(folder)).indexed == 4
    return folder, index


def rows_of(fragment: str) -> tuple[str, int, int]:
    found = SHEET_RANGE.match(fragment)
    assert found, fragment
    return found["sheet"], int(found["r1"]), int(found["r2"] or found["r1"])


@pytest.mark.parametrize("question", ["What was the trading operating profit?", "Restructuring costs 2022",
                                      "Research and development costs in the first half"])
def test_a_sheet_line_names_the_row_of_cells_it_was_read_from(indexed, question):
    folder, index = indexed
    book = openpyxl.load_workbook(folder / "half-year.xlsx", data_only=True)
    sheets = [c for c in index.search(question, k=8) if c.path == "half-year.xlsx" and c.highlight]
    assert sheets, "no sheet source with a line"
    for c in sheets:
        sheet, first, last = rows_of(c.highlight_locator)
        # inside what the chunk quotes: its data rows or the header rows it repeats above them
        quoted = [rows_of(f"{d['sheet']}!{d['cells']}") for d in index.chunk(c.chunk_id).locators
                  if d["kind"] == "sheet"]
        assert any(s == sheet and a <= first <= last <= b for s, a, b in quoted), (c.highlight_locator, quoted)
        # the cells the line names hold what the line shows: its row label and its figures
        shown = [str(v) for row in book[sheet].iter_rows(min_row=first, max_row=last, values_only=True)
                 for v in row if v is not None]
        assert shown and all(value.replace(",", "") in c.highlight.replace(",", "") for value in shown), (
            c.highlight_locator, shown, c.highlight)


def test_a_pdf_line_names_the_page_it_is_printed_on(indexed):
    folder, index = indexed
    pages = [page.get_text() for page in pymupdf.open(folder / "journal.pdf")]
    third = [line for line in pages[2].splitlines() if line.endswith(".")][10]
    sources = [c for c in index.search(third, k=8) if c.path == "journal.pdf" and c.highlight]
    assert sources
    flat = [" ".join(page.split()) for page in pages]
    for c in sources:
        page = int(c.highlight_locator.removeprefix("#page="))
        assert " ".join(c.highlight.split()) in flat[page - 1], (c.highlight_locator, c.highlight)
    assert any(" ".join(third.split()) in " ".join(c.highlight.split()) and c.highlight_locator == "#page=3"
               for c in sources)


def test_a_text_line_is_its_character_range_and_every_form_carries_the_place(indexed):
    folder, index = indexed
    [text] = [c for c in index.search("Who keeps the minutes of every meeting?", k=8) if c.path == "notes.md"]
    line = text.to_dict()["highlight"]
    assert text.highlight_locator == "" and line["locator"] == line["fragment"]
    assert index.canonical(text.document_id)[text.highlight_start:text.highlight_end] == text.highlight

    question = "What was the trading operating profit?"
    sheet = next(c for c in index.search(question, k=8) if c.path == "half-year.xlsx" and c.highlight)
    as_json = sheet.to_dict()["highlight"]
    assert as_json["locator"] == sheet.highlight_locator != as_json["fragment"]
    assert Citation.from_dict(json.loads(json.dumps(sheet.to_dict()))) == sheet

    done = CliRunner().invoke(cli, ["search", question, "--db", index.uri, "-k", "8", "--json"])
    assert done.exit_code == 0, done.output
    by_chunk = {r["chunk_id"]: r["highlight"] for r in json.loads(done.stdout)["results"]}
    assert by_chunk[sheet.chunk_id]["locator"] == sheet.highlight_locator
    shown = CliRunner().invoke(cli, ["search", question, "--db", index.uri, "-k", "8"])
    assert f"  ({sheet.highlight_locator})" in shown.stdout  # the terminal prints the row's cells after it
    answered = CliRunner().invoke(cli, ["ask", question, "--db", index.uri, "--cut", "2"])
    assert answered.exit_code == 0 and f"  ({sheet.highlight_locator})" in answered.stdout, answered.output


def test_the_sheet_viewer_marks_the_row_that_answers(indexed):
    """The page's "Open at this place" passes the line (`?line=start,end#line`, citeline/web/static/ask.js):
    a sheet's view marks that row among the chunk's cited rows and scrolls to it, as a text's view does."""
    import html

    from fastapi.testclient import TestClient

    from citeline.web.app import create_app

    _, index = indexed
    sheet = next(c for c in index.search("Restructuring costs 2022", k=8) if c.path == "half-year.xlsx" and c.highlight)
    with TestClient(create_app(index, poll_s=0), base_url="http://127.0.0.1") as client:
        page = client.get(f"/view/{sheet.chunk_id}?doc={sheet.document_id}"
                          f"&line={sheet.highlight_start},{sheet.highlight_end}").text
        plain = client.get(f"/view/{sheet.chunk_id}?doc={sheet.document_id}").text
    marked = re.findall(r'<tr class="cited-row line-row"( id="line")?>(.*?)</tr>', page)
    assert [anchor for anchor, _ in marked] == [' id="line"']  # one row, the scroll target
    cells = [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", marked[0][1]) if c]
    assert " | ".join(cells) == " ".join(sheet.highlight.split()), (cells, sheet.highlight)
    assert "line-row" not in plain and 'class="cited-row"' in plain


def test_the_pdf_viewer_opens_at_the_page_the_line_is_printed_on(indexed):
    """A chunk that runs from page 1 onto page 2 opens at page 2, which holds most of it; asked
    from a line printed on page 1, the viewer opens page 1."""
    from fastapi.testclient import TestClient

    from citeline.web.app import create_app

    _, index = indexed
    [chunk] = [c for c in index.chunks("flow.pdf") if {d["page"] for d in c.locators} == {1, 2}]
    assert chunk.fragment == "#page=2"
    first_line = (chunk.start, chunk.start + chunk.content.index("\n"))  # printed at the foot of page 1
    with TestClient(create_app(index, poll_s=0), base_url="http://127.0.0.1") as client:
        page = client.get(f"/view/{chunk.chunk_id}?doc={chunk.document_id}&line={first_line[0]},{first_line[1]}").text
        plain = client.get(f"/view/{chunk.chunk_id}?doc={chunk.document_id}").text
    assert re.search(r'<iframe id="pdf" src="[^"]*#page=1"', page)
    assert re.search(r'<iframe id="pdf" src="[^"]*#page=2"', plain)
