"""With the real model: an annual report's slight text blocks (a title word set
apart, a bare URL, a sidebar label) are quoted inside the chunks beside them, none is a chunk of
its own, and a document of nothing but such a block is never a source."""
import pytest

from citeline import Index
from citeline.schemas.document import carries_content

QUESTION = "Who founded Reliance Industries?"


@pytest.mark.model
def test_no_chunk_of_the_report_is_a_fragment_and_none_is_a_source(make, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "annual-report.pdf").write_bytes(make.annual_report_pdf())
    # A file that says nothing but a link: one chunk, which may not stand as a source.
    (folder / "link.md").write_text("https://www.ril.com/ar2023\n")
    index = Index.create(str(tmp_path / "db"), model="all-MiniLM-L6-v2")
    assert index.sync(str(folder)).indexed == 2

    chunks = index.chunks("annual-report.pdf")
    canonical = index.canonical(chunks[0].document_id)
    assert all(canonical[c.start:c.end] == c.content for c in chunks)
    assert [c.content for c in chunks if not carries_content(c.content)] == []
    for slight in ("AND", "https://www.ril.com/ar2023", "Corporate Overview"):
        holders = [c.content for c in chunks if slight in c.content.split("\n")]
        assert holders and all(c != slight for c in holders), slight  # quoted, and never alone

    answer = index.ask(QUESTION)
    assert not answer.refused, answer.refusal.message()
    assert "founded by Dhirubhai H. Ambani" in answer.citations[0].quote
    assert all(carries_content(c.quote) for c in answer.citations)
    assert "link.md" not in {c.path for c in answer.citations}
