"""One folder of hostile inputs beside good documents, indexed by the real flow.

Every hostile file must fail alone, with its own reason, while the good documents in
the same folder are indexed intact. The folder is indexed twice (module fixture):
run 1 with two races made deterministic (a file removed, another rewritten, after the
plan was made and before the files are read), run 2 to see what the next sync does.
"""
import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from citeline.flows import ingest
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings

import make

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

IS_ROOT = os.geteuid() == 0
HUGE_BYTES = 200 * 1024 * 1024
MAX_BYTES = 100 * 1024 * 1024  # the CLI's default --max-bytes


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], bytes]
    stage: str
    kind: str
    says: str  # a fragment of the reason an operator reads


# Zero-byte files of every type, then one hostile file per row of docs/reliability.md.
HOSTILE = [
    *(Case(f"empty{suffix}", lambda: b"", "extract", "empty", "0 bytes")
      for suffix in (".pdf", ".xlsx", ".png", ".mp4", ".md", ".txt")),
    Case("header-only.pdf", make.header_only_pdf, "extract", "corrupt", "MuPDF cannot open it"),
    Case("truncated.pdf", make.truncated_pdf, "extract", "truncated", "cut off"),
    Case("corrupt-stream.pdf", make.corrupt_stream_pdf, "extract", "corrupt", "content is damaged"),
    Case("locked.pdf", lambda: make.encrypted_pdf("secret"), "extract", "encrypted", "user password"),
    Case("locked.xlsx", make.encrypted_xlsx, "extract", "encrypted", "password-protected workbook"),
    Case("legacy-renamed.xlsx", make.legacy_xls, "extract", "corrupt", "damaged OLE2 container"),
    # Formats: a Word zip bomb, a locked deck, a legacy .doc, a cut .ods, an archive.
    Case("zip-bomb.docx", lambda: make.zip_bomb(600 << 20), "extract", "too-large", "zip bomb"),
    Case("locked.pptx", make.encrypted_xlsx, "extract", "encrypted", "password-protected"),
    Case("legacy.docx", lambda: make._ole2(["WordDocument", "1Table"]), "extract", "unsupported-type",
         "legacy Word 97-2003"),
    Case("cut.ods", lambda: make.services_ods()[:700], "extract", "corrupt", "damaged or truncated zip"),
    Case("no-sheets.xlsx", make.workbook_without_sheets, "extract", "no-text", "no worksheets"),
    Case("zip-bomb.xlsx", lambda: make.zip_bomb(600 << 20), "extract", "too-large", "zip bomb"),
    Case("bomb.png", lambda: make.png_claiming(20_000, 10_000), "extract", "too-large", "decompression bomb"),
    Case("truncated.mp4", make.truncated_mp4, "extract", "truncated", "moov atom"),
    Case("noise.txt", make.undecodable, "extract", "undecodable", "no other encoding explains the bytes"),
    Case("broken-utf16.txt", make.invalid_utf16, "extract", "undecodable", "invalid utf-16-le"),
    Case("text-named.pdf", lambda: b"# Notes\n\nPlain text that says it is a PDF.\n", "extract", "corrupt",
         "not a PDF"),
]

# name -> (bytes, what it is): no documents, set aside, not failed
NOT_DOCUMENTS = {"backup.7z": (b"7z\xbc\xaf\x27\x1c\x00\x04" + bytes(64), "a 7-Zip archive (.7z)")}

# name -> (bytes, a phrase its canonical text must hold)
GOOD = {
    "notes.md": (b"# Harbour notes\n\nThe harbour committee meets on Fridays at the pier office.\n",
                 "meets on Fridays"),
    "report.pdf": (make.two_column_pdf(), "harbour project"),
    "sales.xlsx": (make.workbook(), "auditors signed off"),
    "open-password.pdf": (make.encrypted_pdf(""), "harbour project"),  # empty user password: opens
    "pdf-named.txt": (make.two_column_pdf(), "harbour project"),  # the extension lies: magic bytes win
    "latin1.txt": (make.invalid_utf8(), "Café au lait, crème brûlée"),  # not UTF-8: its code page is found
    "one-bad-page.pdf": (make.corrupt_stream_pdf(pages=2, bad=(0,)), "Speed Test Journal"),
    "handbook.docx": (make.handbook_docx(), "Run the installer twice"),
    "deck.pptx": (make.deck_pptx(), "auditors signed off on 2 April"),
    "guide.html": (make.guide_html(), "meets on Fridays at the pier office"),
    "services.csv": (make.services_csv(), "ssh | 22 | tcp"),
    "services.ods": (make.services_ods(), "ssh | 22 | tcp"),
    "Apache-2.0": (b"Apache License\nVersion 2.0, January 2004\n", "Apache License Version 2.0"),
}

CHANGED_BEFORE = b"# Changing\n\nThe first version mentions walruses.\n"
CHANGED_AFTER = b"# Changing\n\nThe second version mentions narwhals instead.\n"
OUTSIDE_WORD = "quetzalcoatlus"


class OpenWatch:
    """Records every open() of the watched paths, from any thread of this process
    (an audit hook: the only way to observe reads without replacing the reader)."""

    def __init__(self):
        self.paths: set[str] = set()
        self.opened: list[str] = []
        sys.addaudithook(self._hook)  # hooks cannot be removed: watch() scopes it

    def _hook(self, event, args):
        # citeline.open: sources are opened beneath their root by openat2, which Python does not audit.
        if event in ("open", "citeline.open") and self.paths and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.fsdecode(args[0])
            if path in self.paths:
                self.opened.append(path)


def build(folder: Path, outside: Path) -> None:
    for case in HOSTILE:
        (folder / case.name).write_bytes(case.build())
    for name, (data, _) in (*GOOD.items(), *NOT_DOCUMENTS.items()):
        (folder / name).write_bytes(data)
    with open(folder / "huge.txt", "wb") as handle:
        handle.truncate(HUGE_BYTES)  # sparse: 200 MB of size, no disk
    (outside / "secret.md").write_text(f"# Outside\n\nThe {OUTSIDE_WORD} lives outside the root.\n")
    (folder / "escape.md").symlink_to(outside / "secret.md")
    (folder / "loop-a.md").symlink_to(folder / "loop-b.md")  # a symlink loop crashed the listing once
    (folder / "loop-b.md").symlink_to(folder / "loop-a.md")
    os.mkfifo(folder / "pipe.md")  # opening a FIFO without a writer blocks forever
    (folder / "vanishes.md").write_text("# Vanishes\n\nThis file is removed after planning.\n")
    (folder / "changed.md").write_bytes(CHANGED_BEFORE)
    if not IS_ROOT:
        (folder / "no-permission.md").write_text("# Locked\n\nNobody may read this.\n")
        (folder / "no-permission.md").chmod(0)


def records(db: str) -> dict[str, dict]:
    return {r["path"]: r for r in Store(db).document_rows()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, prefect_harness):
    folder = tmp_path_factory.mktemp("hostile")
    outside = tmp_path_factory.mktemp("outside")
    build(folder, outside)
    settings = IndexSettings(db=str(tmp_path_factory.mktemp("index") / "db"), max_bytes=MAX_BYTES)
    watch = OpenWatch()
    watch.paths = {str(folder / "huge.txt")}
    original = ingest.plan_folder

    def plan_then_race(*args, **kwargs):
        plan = original(*args, **kwargs)
        (folder / "vanishes.md").unlink()
        (folder / "changed.md").write_bytes(CHANGED_AFTER)
        return plan

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ingest, "plan_folder", plan_then_race)
        first = ingest.index_folder(str(folder), settings, return_state=True)
    after_first = records(settings.db)
    check_first = check_index(Store(settings.db))
    opened_huge = list(watch.opened)
    watch.paths = set()

    second = ingest.index_folder(str(folder), settings, return_state=True)
    yield {
        "folder": folder, "settings": settings, "first": first, "after_first": after_first,
        "check_first": check_first, "opened_huge": opened_huge, "second": second,
        "after_second": records(settings.db),
    }
    if not IS_ROOT:
        (folder / "no-permission.md").chmod(0o600)  # let tmp_path clean-up remove it


@pytest.mark.parametrize("case", HOSTILE, ids=[c.name for c in HOSTILE])
def test_each_hostile_file_fails_alone_with_its_reason(runs, case):
    record = runs["after_first"][case.name]
    assert (record["status"], record["stage"]) == ("failed", case.stage), record["reason"]
    assert record["reason"].startswith(case.kind + ": "), record["reason"]
    assert case.says in record["reason"]
    assert record["chunk_count"] == Store(runs["settings"].db).count_chunks(record["doc_id"]) == 0


@pytest.mark.parametrize("name", list(NOT_DOCUMENTS))
def test_a_file_that_is_no_document_is_set_aside_not_failed(runs, name):
    record = runs["after_first"][name]
    assert (record["status"], record["reason"]) == ("not-a-document", f"not a document: {NOT_DOCUMENTS[name][1]}")
    assert record["chunk_count"] == 0


@pytest.mark.parametrize("name", list(GOOD))
def test_good_documents_beside_them_are_indexed_intact(runs, name):
    record = runs["after_first"][name]
    assert record["status"] == "indexed", record["reason"]
    assert record["chunk_count"] == Store(runs["settings"].db).count_chunks(record["doc_id"]) > 0
    assert GOOD[name][1] in " ".join(record["canonical"].split())
    assert record["sha256"] == hashlib.sha256(GOOD[name][0]).hexdigest()


def test_the_run_finishes_partially_successful_and_the_index_checks_clean(runs):
    first = runs["first"]
    summary = first.result(raise_on_failure=False)
    assert first.name == "DocumentsFailed", first.message
    failing = len(HOSTILE) + 2 + (0 if IS_ROOT else 1)  # + huge.txt, vanishes.md (+ no-permission.md)
    assert (summary.indexed, summary.failed) == (len(GOOD) + 1, failing)  # + changed.md
    assert runs["check_first"] == []


def test_a_lying_extension_is_read_by_its_magic_bytes(runs):
    assert runs["after_first"]["pdf-named.txt"]["extractor"] == "pdf"


def test_a_page_with_a_corrupt_stream_is_named_in_a_note(runs):
    notes = runs["after_first"]["one-bad-page.pdf"]["notes"]
    assert "page 1 could not be read" in notes and "zlib error" in notes


def test_a_file_over_the_size_limit_is_refused_without_being_read(runs):
    record = runs["after_first"]["huge.txt"]
    assert (record["status"], record["stage"]) == ("failed", "read")
    assert record["reason"] == (f"too-large: {HUGE_BYTES:,} bytes is over the {MAX_BYTES:,}-byte limit "
                                "(--max-bytes); the file was not read")
    assert runs["opened_huge"] == []


def test_a_symlink_leaving_the_root_is_never_followed(runs):
    assert "escape.md" not in runs["after_first"]
    contents = " ".join(r["content"] for r in Store(runs["settings"].db).chunk_rows(["content"]))
    assert OUTSIDE_WORD not in contents


def test_symlink_loops_and_pipes_are_not_documents(runs):
    assert not {"loop-a.md", "loop-b.md", "pipe.md"} & set(runs["after_first"])


def test_a_file_removed_after_planning_fails_as_vanished_then_is_forgotten(runs):
    record = runs["after_first"]["vanishes.md"]
    assert (record["status"], record["stage"]) == ("failed", "read")
    assert record["reason"].startswith("vanished: the file disappeared")
    assert runs["second"].result(raise_on_failure=False).deleted == 1
    assert "vanishes.md" not in runs["after_second"]


def test_a_file_changed_after_planning_is_recorded_with_the_hash_of_what_was_indexed(runs):
    record = runs["after_first"]["changed.md"]
    assert record["status"] == "indexed"
    assert record["sha256"] == hashlib.sha256(CHANGED_AFTER).hexdigest()
    assert "narwhals" in record["canonical"] and "walruses" not in record["canonical"]
    # The hash matches the file on disk, so the next sync skips it instead of indexing it again.
    second = runs["after_second"]["changed.md"]
    assert second["status"] == "indexed" and second["updated_at"] == record["updated_at"]


def test_the_next_sync_reads_neither_the_good_files_nor_the_unchanged_failures(runs):
    """A failure whose file has not changed is reported as still failing, not read again and not
    counted as a new failure (cron should not page for a file nobody fixed)."""
    summary = runs["second"].result(raise_on_failure=False)
    failing = len(HOSTILE) + 1 + (0 if IS_ROOT else 1)  # vanishes.md is gone for good
    assert (summary.indexed, summary.failed, summary.still_failing, summary.skipped) == \
        (0, 0, failing, len(GOOD) + 1)
    assert check_index(Store(runs["settings"].db)) == []


@pytest.mark.skipif(IS_ROOT, reason="running as root: chmod 000 does not stop root from reading")
def test_a_file_without_read_permission_fails_as_unreadable(runs):
    record = runs["after_first"]["no-permission.md"]
    assert (record["status"], record["stage"]) == ("failed", "read")
    assert record["reason"].startswith("unreadable: permission denied")
