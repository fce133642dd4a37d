"""Whatever an extractor's parser library raises on a file is that file's failure
(stage, kind ``parser-error``, the library's own message), decided in the worker that runs the
parser; an exception of citeline's own code still stops the run with its traceback.

Each file of ``library_raises.CASES`` is a real document edited so that its library raises
something its extractor does not map (python-pptx's ``InvalidXmlError`` on a slide list entry
without its id, Pillow's ``SyntaxError``, PyAV's ``UnicodeDecodeError``, …): before pipeline/blame.py each
stopped ``citeline index`` with exit 1 and a traceback, indexing none of the folder.
"""
from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from citeline import extractors
from citeline.cli.main import cli
from citeline.pipeline import blame
from citeline.pipeline.isolate import extract_isolated
from citeline.schemas.errors import DocumentError, ParserFailed, Unexpected
from citeline.schemas.options import ExtractOptions

import library_raises
from fakes import FAKE

OPTIONS = ExtractOptions(time_limit_s=60)
# the installed distribution each file's reason names
LIBRARY = {"slide-without-id.pptx": "python-pptx", "style-without-value.docx": "python-docx",
           "huge-border-id.xlsx": "openpyxl", "deflate64-manifest.ods": "Python's zipfile",
           "deflate64-content.odt": "Python's zipfile", "deflate64-chapter.epub": "EbookLib",
           "bad-page-label.pdf": "pymupdf", "navigation-root.html": "lxml",
           "bad-frame-sequence.png": "pillow", "latin1-title.wav": "av"}
GOOD = ("# Ferry times\n\nThe ferry leaves the north pier at seven every morning.\n", "north pier at seven")


def _module(name: str, data: bytes):
    return extractors.for_bytes(data[:8192], name)


@pytest.fixture(scope="module")
def cases():
    return {name: build() for name, build in library_raises.CASES.items()}


def test_every_extractor_is_covered_by_a_case_or_has_no_library():
    """A case per extractor whose library is third-party; csv and text read with Python alone
    (the csv module's one error, csv.Error, is mapped by the extractor itself)."""
    covered = {_module(name, build()[0]).NAME for name, build in library_raises.CASES.items()}
    # The newer readers have no case here yet: whatever their libraries raise fails the
    # document alone through pipeline/blame.py's ``contained``, which the fuzz test of real files
    # (tests/hostile/test_fuzz_extractors.py) exercises for each of them.
    uncovered = {"eml", "msg", "json", "yaml", "xml", "markup", "rtf", "legacy-office"}
    assert set(extractors.registered()) - covered - uncovered <= {"csv", "text", "calamine"}
    assert set(extractors.registered()) <= set(blame.LIBRARIES)  # every extractor declares its libraries


@pytest.mark.parametrize("name", list(library_raises.CASES))
def test_the_file_makes_its_library_raise_what_the_extractor_does_not_map(cases, name):
    """Called bare, the extractor lets the library's exception out: not a DocumentError, so the
    flow (``is_bad_input``) took it for a citeline bug and stopped the run."""
    data, raised, says = cases[name]
    with pytest.raises(raised) as caught:
        _module(name, data).extract(data, name, OPTIONS)
    assert not isinstance(caught.value, DocumentError)
    assert says in f"{type(caught.value).__name__}: {caught.value}"


@pytest.mark.parametrize("name", list(library_raises.CASES))
def test_in_the_worker_it_is_the_files_parser_error_with_the_librarys_message(cases, name):
    data, raised, says = cases[name]
    module = _module(name, data)
    with pytest.raises(ParserFailed) as caught:
        extract_isolated(module.__name__, data, name, OPTIONS)
    reason = str(caught.value)
    assert caught.value.kind == "parser-error"
    assert reason.startswith(f"{LIBRARY[name]} failed on this file: {raised.__name__}: "), reason
    assert says in reason and "(raised in " in reason, reason


def test_a_folder_with_every_such_file_indexes_the_good_one_and_fails_each_bad_one(cases, tmp_path, prefect_harness):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, (data, _, _) in cases.items():
        (folder / name).write_bytes(data)
    (folder / "ferry.md").write_text(GOOD[0])
    result = CliRunner().invoke(cli, ["index", str(folder), "--db", str(tmp_path / "db"), "--model", FAKE, "--json"])
    assert result.exit_code == 3, result.output  # as for any failed document (test_cli_json)
    report = json.loads(result.stdout)
    assert report["state"] == "DocumentsFailed"
    assert (report["summary"]["indexed"], report["summary"]["failed"]) == (1, len(cases))
    failures = {f["path"]: f for f in report["failures"]}
    assert set(failures) == set(cases)
    for name, (_, raised, says) in cases.items():
        assert failures[name]["stage"] == "extract", failures[name]
        assert failures[name]["reason"].startswith(f"parser-error: {LIBRARY[name]} failed on this file: "
                                                   f"{raised.__name__}"), failures[name]
        assert says in failures[name]["reason"]
    chunks = CliRunner().invoke(cli, ["chunks", "ferry.md", "--db", str(tmp_path / "db"), "--json"])
    assert GOOD[1] in chunks.stdout, chunks.output


# ------------------------------------- citeline's own bugs are named, and cost only their file
# A bug a file reveals (the KeyError of ooxml.ole2_reason on an Outlook message)
# stopped every sync of the folder; it now fails that document, kind unexpected-error, with the
# exception and the frame it rose in, and the run goes on.

MODULE = "hostile_extractors"  # tests/fixtures: declares LIBRARIES = ("json",)


def test_an_exception_of_the_declared_library_is_the_files():
    with pytest.raises(ParserFailed, match=r"^Python's json failed on this file: JSONDecodeError: Expecting"):
        extract_isolated(MODULE, b"HANG JSON{", "a.hang", OPTIONS)


def test_an_exception_raised_by_the_extractors_own_code_is_the_files_unexpected_error():
    with pytest.raises(Unexpected, match=r"^the hang-for-tests extractor failed on this file: KeyError: "
                                         r"b'HANG KEY' \(raised in hostile_extractors:\d+\); a citeline bug"):
        extract_isolated(MODULE, b"HANG KEY", "b.hang", OPTIONS)


def test_an_exception_raised_inside_an_undeclared_package_is_unexpected_too():
    with pytest.raises(Unexpected, match=r"LinAlgError: Singular matrix \(raised in numpy\."):
        extract_isolated(MODULE, b"HANG NUMPY", "c.hang", OPTIONS)


def test_a_citeline_bug_fails_its_document_alone_and_the_run_goes_on(tmp_path, prefect_harness):
    import hostile_extractors

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ferry.md").write_text(GOOD[0])
    (folder / "bug.hang").write_bytes(b"HANG KEY")
    extractors.register(hostile_extractors)
    try:
        result = CliRunner().invoke(cli, ["index", str(folder), "--db", str(tmp_path / "db"), "--model", FAKE,
                                          "--json"])
    finally:
        extractors.unregister(hostile_extractors.NAME)
        sys.modules.pop("hostile_extractors", None)
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert (report["summary"]["indexed"], report["summary"]["failed"]) == (1, 1)
    [failure] = report["failures"]
    assert (failure["path"], failure["stage"]) == ("bug.hang", "extract")
    assert failure["reason"].startswith("unexpected-error: the hang-for-tests extractor failed on this file: "
                                        "KeyError"), failure


def test_the_library_is_found_below_the_last_citeline_frame():
    """Frames are judged by the module they run in, compiled code's by its source path."""
    from citeline.extractors import pptx

    data, raised, _ = library_raises.slide_without_id_pptx()
    try:
        pptx.extract(data, "odd.pptx", OPTIONS)
    except raised as exc:
        library, where = blame.blamed(exc, pptx)
    assert library == "pptx" and where.startswith("pptx.oxml.xmlchemy:")
    try:
        {}["x"]
    except KeyError as exc:
        assert blame.blamed(exc, pptx) == (None, "")  # raised in a frame of no library: not the file's


@pytest.mark.parametrize("charset", ["base64", "zlib", "rot13"])
def test_a_page_declaring_a_codec_that_is_no_text_encoding_is_undecodable(charset):
    """``codecs.lookup`` knows these names, but ``bytes.decode`` refuses them with a LookupError raised
    in html.py's own frame: no library's, so it stopped the run; the extractor now says why."""
    from citeline.extractors import html
    from citeline.schemas.errors import Undecodable

    page = f'<html><head><meta charset="{charset}"></head><body><p>caf\xe9 au lait</p></body></html>'.encode("latin-1")
    with pytest.raises(Undecodable, match="not a text encoding"):
        html.extract(page, "menu.html", OPTIONS)
