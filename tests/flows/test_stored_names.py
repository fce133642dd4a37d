"""A file named with the byte 0xE9 and one literally named ``caf\\xe9.md``
are two documents through a real sync (fake embedder): before, they shared one stored name and
one replaced the other, and the next sync flipped them."""
from __future__ import annotations

import os

import pytest
from testkit import synced_index

from citeline.index.check import check_index
from citeline.index.store import Store

pytestmark = [pytest.mark.usefixtures("prefect_harness")]


def test_a_byte_name_and_its_literal_spelling_are_two_documents_and_stay_so(tmp_path, tmp_path_factory):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, words in ((b"caf\xe9.md", "espresso descaled on Mondays"), (b"caf\\xe9.md", "filter brewed on Fridays"),
                        (b"plain.md", "nothing special in the name")):
        with open(os.path.join(os.fsencode(folder), name), "wb") as handle:
            handle.write(f"# Notes\n\nThe {words}.\n".encode())
    index = synced_index(folder, tmp_path_factory, indexed=3)
    store = Store(index.uri)

    def served() -> dict[str, str]:
        rows = {r["doc_id"]: r["path"] for r in store.document_rows()}
        return {rows[c["doc_id"]]: c["content"] for c in store.chunk_rows(["doc_id", "content"])}

    first = served()
    assert "espresso" in first["caf\\xe9.md"] and "filter" in first["caf\\x5cxe9.md"] and "plain.md" in first
    again = index.sync(str(folder))
    assert (again.indexed, again.skipped, again.deleted) == (0, 3, 0)  # nothing flipped
    assert served() == first and check_index(store) == []
