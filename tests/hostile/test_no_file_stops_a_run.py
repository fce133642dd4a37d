"""No file can stop a run. Whatever is raised on one file — by any extractor, in
its worker or in the flow's process, while its type is sniffed, its text extracted or chunked — that
document fails alone with its stage and a one-line reason; the others are indexed, the summary
prints and the exit code is the failed-documents one (3), never a crash (1).

Before the fix, ``citeline index`` on the folder of real files stopped with a 100-line traceback
(``KeyError: 'Workbook'``) on its Outlook message, and so did every later sync of the folder.
"""
from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from citeline import extractors
from citeline.cli.common import EXIT_DOCUMENTS_FAILED
from citeline.schemas.document import Canonical
from fakes import FAKE
from testkit import FIXTURES, invoke

GOOD = ("ferry.md", "# Ferry times\n\nThe ferry leaves the north pier at seven every morning.\n")


def _folder(tmp_path: Path, **files: bytes) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / GOOD[0]).write_text(GOOD[1])
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def _index(folder: Path, tmp_path: Path) -> tuple[int, dict]:
    result = invoke("index", folder, "--db", tmp_path / "db", "--model", FAKE, "--json")
    assert result.exit_code in (0, EXIT_DOCUMENTS_FAILED), result.output  # never a crash
    return result.exit_code, json.loads(result.stdout)


def _failures(report: dict) -> dict[str, dict]:
    return {f["path"]: f for f in report["failures"]}


def test_an_outlook_message_no_longer_stops_the_run_and_a_damaged_one_fails_alone(tmp_path, prefect_harness):
    # fake-email.msg crashed every sync (KeyError: 'Workbook'); it is now read (extractors/msg.py),
    # and a copy cut in half fails alone with its reason.
    folder = _folder(tmp_path)
    message = (FIXTURES / "realfiles" / "fake-email.msg").read_bytes()
    (folder / "fake-email.msg").write_bytes(message)
    (folder / "cut.msg").write_bytes(message[: len(message) // 2])
    code, report = _index(folder, tmp_path)
    assert code == EXIT_DOCUMENTS_FAILED
    assert (report["summary"]["indexed"], report["summary"]["failed"]) == (2, 1)
    failure = _failures(report)["cut.msg"]
    assert failure["stage"] == "extract" and not failure["reason"].startswith("unexpected-error")
    # the next sync is no crash either: the cut message is still failing, unchanged, and not read again
    again = invoke("index", folder, "--db", tmp_path / "db", "--model", FAKE)
    assert again.exit_code == 0, again.output
    assert "1 still failing" in again.output


class Panic(BaseException):
    """Stands for a Rust panic out of a compiled library (pyo3's PanicException is a BaseException)."""


def _plugin(extract, claims=None) -> types.ModuleType:
    """An in-process extractor (no ISOLATE) for ``.odd`` files: runs in the flow's own process."""
    module = types.ModuleType("odd_extractor")
    module.NAME, module.VERSION, module.SUFFIXES, module.MAGIC = "odd-for-tests", "1", (".odd",), ()
    module.LIBRARIES = ()  # no library of its own: what it raises is its own code's (pipeline/blame.py)
    module.extract = extract
    if claims is not None:
        module.claims = claims
    return module


def _raise(exc: BaseException):
    def extract(data, name, options):
        raise exc
    return extract


def _registered(module):
    extractors.register(module)
    return module


@pytest.fixture
def plugin():
    added: list[str] = []

    def add(*args, **kwargs):
        module = _registered(_plugin(*args, **kwargs))
        added.append(module.NAME)
        return module

    yield add
    for name in added:
        extractors.unregister(name)


@pytest.mark.parametrize("raised, says", [
    (KeyError("Workbook"), "KeyError: 'Workbook'"),
    (Panic("called `Option::unwrap()` on a `None` value"), "Panic: called `Option::unwrap()`"),
    (RecursionError("maximum recursion depth exceeded"), "RecursionError: maximum recursion depth"),
])
def test_whatever_an_in_process_extractor_raises_fails_its_document(tmp_path, prefect_harness, plugin, raised, says):
    plugin(_raise(raised))
    code, report = _index(_folder(tmp_path, **{"bad.odd": b"odd bytes"}), tmp_path)
    assert code == EXIT_DOCUMENTS_FAILED
    assert report["summary"]["indexed"] == 1
    failure = _failures(report)["bad.odd"]
    assert failure["stage"] == "extract"
    assert failure["reason"].startswith(f"unexpected-error: the odd-for-tests extractor failed on this file: {says}")
    assert "\n" not in failure["reason"] and "(raised in " in failure["reason"]


def test_a_sniffer_that_raises_on_one_file_fails_that_file(tmp_path, prefect_harness, plugin):
    def claims(head: bytes) -> bool:
        if head.startswith(b"BOOM"):
            raise IndexError("claims read past the head")
        return False

    plugin(_raise(AssertionError("never called")), claims=claims)
    code, report = _index(_folder(tmp_path, **{"boom.txt": b"BOOM and more"}), tmp_path)
    assert code == EXIT_DOCUMENTS_FAILED and report["summary"]["indexed"] == 1
    failure = _failures(report)["boom.txt"]
    assert failure["stage"] == "extract"
    assert failure["reason"].startswith("unexpected-error: the file type sniffer failed on this file: IndexError")


def test_a_canonical_form_the_chunker_cannot_cut_fails_at_the_chunk_stage(tmp_path, prefect_harness, plugin):
    def extract(data, name, options):  # a plugin's bug: text that is not a str
        return Canonical(text=data, title=name, extractor="odd-for-tests", extractor_version="1")

    plugin(extract)
    code, report = _index(_folder(tmp_path, **{"bytes.odd": b"not text"}), tmp_path)
    assert code == EXIT_DOCUMENTS_FAILED and report["summary"]["indexed"] == 1
    failure = _failures(report)["bytes.odd"]
    assert failure["stage"] == "chunk"
    assert failure["reason"].startswith("unexpected-error: the chunker failed on this file: ")
