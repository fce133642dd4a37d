"""A folder of Unstructured's e-mails, Outlook messages and data files
synced by the real flow (fake embedder) indexes every one — before, each failed "unsupported-type"
and the .msg files crashed the sync — with every quote its canonical text's exact slice
(`citeline check`) and each chunk's fragment opening its place (a MIME part, a JSON Pointer, an
XML element)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testkit import synced_index

pytestmark = pytest.mark.usefixtures("prefect_harness")

FILES = Path(__file__).parents[1] / "fixtures" / "unstructured"
NAMES = ("fake-email-attachment.msg", "fake-email.msg", "arbitrary-records.ndjson", "simple.yaml",
         "factbook-utf-16.xml", "fake-doc.rtf", "eml/fake-email-attachment.eml", "eml/fake-email-utf-16-le.eml")


@pytest.fixture(scope="module")
def index(tmp_path_factory, prefect_harness):
    folder = tmp_path_factory.mktemp("mail")
    for name in NAMES:
        shutil.copy(FILES / name, folder / Path(name).name)
    return synced_index(folder, tmp_path_factory, indexed=len(NAMES))


def test_every_file_is_indexed_and_check_passes(index):
    report = index.check()
    assert report.ok, report.violations
    for info in index.documents():
        canonical = index.canonical(info.document_id)
        chunks = index.chunks(info.path)
        assert chunks, info.path
        assert all(canonical[c.start:c.end] == c.content for c in chunks)


@pytest.mark.parametrize(("path", "phrase", "fragment"), [
    ("fake-email-attachment.msg", "Hey this is a fake attachment!", "#part=2"),
    ("fake-email.msg", "Roses are red", "#part=1"),  # headers and body in one chunk: it opens the body
    ("fake-email-attachment.eml", "Hey this is a fake attachment!", "#part=2"),
    ("arbitrary-records.ndjson", "Pruning Shears", "#/2"),
    ("factbook-utf-16.xml", "Ottawa", "#xpointer(/factbook/country[2])"),
])
def test_a_chunk_s_fragment_opens_its_place(index, path, phrase, fragment):
    chunks = [c for c in index.chunks(path) if phrase in c.content]
    assert chunks and fragment in {c.fragment for c in chunks}, [(c.fragment, c.content) for c in index.chunks(path)]


def test_the_viewer_names_the_part_and_highlights_the_quote(index):
    from citeline.web.views import viewer_page

    chunk = next(c for c in index.chunks("fake-email-attachment.msg") if "fake attachment" in c.content)
    page = viewer_page(index, index.document("fake-email-attachment.msg"), chunk)
    assert 'id="where" data-fragment="#part=2">attachment fake-attachment.txt<' in page
    assert "Hey this is a fake attachment!" in page
