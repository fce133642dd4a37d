"""`citeline X --json` prints one JSON object on stdout for every command, errors included.

Success runs use the fake embedder under the session's Prefect harness; errors are the
ones a script meets first: no index, a bad argument, a missing endpoint or server.
"""
import json
import os
import socket
import subprocess
import sys
import urllib.request

import click
import pytest
from click.testing import CliRunner

from citeline.cli.main import cli
from citeline.schemas.settings import DEFAULT_STRATEGY
from fakes import FAKE

pytestmark = pytest.mark.usefixtures("prefect_harness")


def run_json(*args, env=None):
    """The command's stdout parsed as one JSON object (stderr carries only log lines)."""
    result = CliRunner().invoke(cli, [str(a) for a in args] + ["--json"], env=env)
    try:
        return result.exit_code, json.loads(result.stdout)
    except ValueError:
        raise AssertionError(f"not JSON (exit {result.exit_code}): {result.stdout!r}\n{result.stderr}") from None


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, prefect_harness):
    folder = tmp_path_factory.mktemp("docs")
    (folder / "dropout.md").write_text("# Dropout\n\nDropout zeroes random units during training only.\n")
    (folder / "broken.md").write_bytes(b"caf\xe9 latin-1\x00\x01")
    db = tmp_path_factory.mktemp("index") / "db"
    code, report = run_json("index", folder, "--db", db, "--model", FAKE)
    return folder, db, code, report


def test_index_json_reports_the_summary_and_failures_and_exits_3(indexed):
    _, _, code, report = indexed
    assert code == 3
    assert report["state"] == "DocumentsFailed"
    assert (report["summary"]["indexed"], report["summary"]["failed"]) == (1, 1)
    assert [(f["path"], f["stage"]) for f in report["failures"]] == [("broken.md", "extract")]


READING = [
    (["status"], "documents"),
    (["search", "dropout training"], "results"),
    (["search", "dropout training", "--retriever", "bm25"], "results"),
    (["search", "dropout training", "--retriever", "hybrid"], "results"),
    (["ask", "when does dropout apply?", "--retriever", "dense", "--cut", "0.99"], "query"),
    (["check"], "ok"),
    (["chunks", "dropout.md"], "chunks"),
    (["calibrate"], "cut"),
    (["gc"], "tables"),
    (["retry"], "summary"),
]
# Commands whose success is parsed by their own test below; serve's needs a real Prefect server.
OWN_TEST = {"index", "reindex", "rm", "api", "eval"}
ELSEWHERE = {"serve": "tests/e2e/test_prefect_server.py::test_served_deployment_syncs_the_folder_when_triggered",
             "server": "tests/e2e/test_citeline_server.py::test_a_started_server_is_reused_keeps_the_runs_and_survives_kill_9_of_a_command"}


def test_every_listed_command_has_a_json_success_case():
    """A command added to the group must get a success case here too."""
    assert set(cli.commands) == {args[0] for args, _ in READING} | OWN_TEST | set(ELSEWHERE)


@pytest.mark.parametrize("args, key", READING)
def test_every_reading_command_prints_json(indexed, args, key):
    _, db, _, _ = indexed
    code, report = run_json(*args, "--db", db)
    assert code in (0, 3) and key in report


def test_search_retrievers_return_their_name_and_distances(indexed):
    _, db, _, _ = indexed
    for retriever in ("dense", "bm25", "hybrid"):
        _, report = run_json("search", "dropout", "--db", db, "--retriever", retriever)
        assert report["retriever"] == retriever
        assert report["results"] and all(r["distance"] is not None for r in report["results"])


def test_search_hits_carry_the_uri_ask_gives_them(indexed):
    folder, db, _, _ = indexed
    for retriever in ("dense", "bm25"):
        _, found = run_json("search", "dropout training", "--db", db, "--retriever", retriever, "-k", "1")
        (hit,) = found["results"]
        assert hit["uri"] == (folder / "dropout.md").as_uri() + hit["fragment"], retriever
    _, asked = run_json("ask", "dropout training", "--db", db, "--retriever", "dense", "--cut", "1.5", "-k", "1")
    assert asked["citations"][0]["uri"] == hit["uri"]


def test_rm_and_reindex_print_json(indexed, tmp_path):
    folder, db, _, _ = indexed
    code, report = run_json("reindex", "--db", db, "--model", FAKE, "--strategy", "C")
    assert code == 0 and report["state"] == "Completed", report
    code, report = run_json("rm", folder / "dropout.md", "--db", db)
    assert code == 0 and report["removed"] and report["still_exists"] is True


# The first error a script meets, for every command the group lists: a command added without
# one fails test_every_listed_command_prints_its_error_as_json.
FIRST_ERROR = {
    "api": (["--host", "0.0.0.0"], 2, "usage"),  # reachable from other machines without --token
    "ask": (["q", "--db", "{missing}", "--retriever", "dense"], 1, "no-index"),
    "calibrate": (["--db", "{missing}"], 1, "no-index"),
    "check": (["--db", "{missing}"], 1, "no-index"),
    "chunks": (["x", "--db", "{missing}"], 1, "no-index"),
    "eval": (["{missing}", "--out", "x"], 2, "usage"),
    "gc": (["--db", "{missing}"], 1, "no-index"),
    "index": (["{missing}"], 2, "usage"),
    "reindex": (["--db", "{missing}", "--model", FAKE], 1, "no-index"),
    "retry": (["--db", "{missing}"], 1, "no-index"),
    "rm": (["x", "--db", "{missing}"], 1, "no-index"),
    "search": (["q", "--db", "{missing}"], 1, "no-index"),
    "serve": (["{tmp}"], 2, "usage"),  # no PREFECT_API_URL
    "server": (["restart"], 2, "usage"),  # start, status or stop
    "status": (["--db", "{missing}"], 1, "no-index"),
}
MORE_ERRORS = [
    (["ask", "q", "--db", "{missing}", "--generate"], 1, "llm-error"),
    (["search", "q", "--retriever", "nope"], 2, "usage"),
    (["check", "--repair", "--db", "{missing}"], 1, "no-index"),
    (["nope"], 2, "usage"),
]


def assert_json_error(args, code, kind, tmp_path, monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    args = [a.format(missing=tmp_path / "missing", tmp=tmp_path) for a in args]
    env = {"CITELINE_LLM_URL": "", "CITELINE_LLM_MODEL": "", "PREFECT_API_URL": None}
    exit_code, report = run_json(*args, env=env)
    assert exit_code == code, report
    assert set(report) == {"error"} and set(report["error"]) == {"kind", "message", "help"}
    assert report["error"]["kind"] == kind and report["error"]["message"]


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_listed_command_prints_its_error_as_json(name, tmp_path, monkeypatch):
    assert name in FIRST_ERROR, f"add the first error of `citeline {name}` to FIRST_ERROR"
    args, code, kind = FIRST_ERROR[name]
    assert_json_error([name, *args], code, kind, tmp_path, monkeypatch)


@pytest.mark.parametrize("args, code, kind", MORE_ERRORS)
def test_errors_are_json_objects(args, code, kind, tmp_path, monkeypatch):
    assert_json_error(args, code, kind, tmp_path, monkeypatch)


def test_generate_without_an_endpoint_fails_before_opening_the_index(tmp_path):
    """The cheap check first: no index is needed to learn the endpoint is missing."""
    _, report = run_json("ask", "q", "--db", tmp_path / "missing", "--generate",
                         env={"CITELINE_LLM_URL": "", "CITELINE_LLM_MODEL": ""})
    assert report["error"]["kind"] == "llm-error" and "CITELINE_LLM_URL" in report["error"]["help"]


def test_options_read_citeline_environment_variables(indexed):
    _, db, _, _ = indexed
    result = CliRunner().invoke(cli, ["search", "dropout"], env={"CITELINE_DB": str(db),
                                                                 "CITELINE_SEARCH_RETRIEVER": "bm25",
                                                                 "CITELINE_SEARCH_JSON": "1"})
    assert json.loads(result.stdout)["retriever"] == "bm25"
    failed = CliRunner().invoke(cli, ["status", "--db", str(db) + "-missing"], env={"CITELINE_STATUS_JSON": "1"})
    assert json.loads(failed.stdout)["error"]["kind"] == "no-index"


def test_every_command_has_short_help_and_output_options():
    for name, command in cli.commands.items():
        result = CliRunner().invoke(cli, [name, "-h"])
        assert result.exit_code == 0, (name, result.output)
        for option in ("--json", "-q, --quiet", "-v, --verbose"):
            assert option in result.stdout, (name, option)


MODEL_COMMANDS = sorted(name for name, command in cli.commands.items()
                        if any(p.name == "model" for p in command.params))


def required_args(command, tmp_path) -> list[str]:
    """Values for a command's required arguments and options: an existing folder (a QUERY takes it as text)."""
    args = []
    for param in command.params:
        if param.required and isinstance(param, click.Argument):
            args.append(str(tmp_path))
        elif param.required and param.name != "model":
            args += [param.opts[0], str(tmp_path / param.name)]
    return args


@pytest.mark.parametrize("name", MODEL_COMMANDS)
def test_an_unknown_model_is_refused_before_any_work(name, tmp_path):
    """Every command taking --model (enumerated from the group) names the known models and
    exits 2 before a run starts, a server binds or an index is created."""
    command = cli.commands[name]
    db = ["--db", str(tmp_path / "db")] if any(p.name == "db" for p in command.params) else []
    code, report = run_json(name, *required_args(command, tmp_path), *db, "--model", "no-such-model",
                            env={"PREFECT_API_URL": None})
    assert code == 2 and report["error"]["kind"] == "usage", report
    assert "unknown embedding model 'no-such-model'" in report["error"]["message"]
    assert not (tmp_path / "db").exists()


def test_api_on_a_busy_port_fails_as_json_before_loading_anything(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        code, report = run_json("api", "--db", tmp_path / "db", "--port", busy.getsockname()[1])
    assert code == 1 and report["error"]["kind"] == "address-in-use", report


def test_api_stdout_is_one_json_object_and_its_logs_json_lines(tmp_path):
    """Piped with -v: the served URL is stdout's only line (request lines go to stderr), and
    uvicorn's own lines are JSON like every other log line."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    proc = subprocess.Popen([sys.executable, "-m", "citeline", "api", "--db", str(tmp_path / "db"), "--port", "0",
                             "--json", "-v"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        served = json.loads(proc.stdout.readline())
        assert not served["url"].endswith(":0/"), served  # the port the kernel gave
        with urllib.request.urlopen(served["url"] + "health", timeout=60) as response:
            assert response.status == 200
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=60)
    assert out == "", out
    events = [json.loads(line) for line in err.splitlines()]  # each line parses, or this raises
    assert any(e.get("logger") == "uvicorn.access" and "/health" in e["event"] for e in events), events


def test_an_index_that_cannot_be_created_is_a_json_error(tmp_path):
    """A --db under a regular file: one clear error (exit 1), not an OSError's traceback."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nSome words about dropout.\n")
    (tmp_path / "plain-file").write_text("")
    code, report = run_json("index", folder, "--db", tmp_path / "plain-file" / "db", "--model", FAKE)
    assert code == 1 and report["error"]["kind"] == "index-unwritable", report
    assert "plain-file" in report["error"]["message"] and "Not a directory" in report["error"]["message"]


def test_serve_without_a_reachable_server_fails_first_as_json(tmp_path):
    """PREFECT_API_URL set but nothing answers: one error object, not the deployment then a traceback."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}/api"  # bound, never listening: refused
        done = subprocess.run([sys.executable, "-m", "citeline", "serve", str(tmp_path), "--db", str(tmp_path / "db"),
                               "--json"], env={**os.environ, "PREFECT_API_URL": dead}, capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["error"]["kind"] == "no-server" and dead in report["error"]["message"], report
    assert "Traceback" not in done.stderr


def one_note_corpus(root):
    """An evaluation corpus of one document, one needle and one out-of-domain question."""
    text = "# Notes\n\n## Dropout\n\nDropout zeroes each hidden unit during training only.\n"
    needle = "Dropout zeroes each hidden unit during training only."
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "notes.md").write_text(text)
    (root / "ground_truth.jsonl").write_text(json.dumps(
        {"id": "n1", "doc": "notes.md", "needle": needle, "course": "What does dropout do?",
         "ticket": "why are my units switched off", "char_start": text.index(needle)}) + "\n")
    (root / "out_of_domain.jsonl").write_text(
        json.dumps({"id": "o1", "query": "What is the capital of France?", "kind": "absurd"}) + "\n")


def test_eval_prints_json(tmp_path):
    """The harness on one document, one strategy and one retriever (the fake embedder)."""
    one_note_corpus(tmp_path / "corpus")
    code, report = run_json("eval", tmp_path / "corpus", "--out", tmp_path / "out", "--strategies", "C",
                            "--retrievers", "dense", "--model", FAKE, "--no-progress")
    assert code == 0 and [(r["strategy"], r["retriever"]) for r in report["runs"]] == [("C", "dense")], report


def test_eval_formats_index_the_default_strategy_unless_told_otherwise(tmp_path):
    """Every format is indexed once per strategy: `eval --formats` alone measures the strategy index uses."""
    one_note_corpus(tmp_path / "corpus")
    code, _ = run_json("eval", tmp_path / "corpus", "--out", tmp_path / "out", "--formats", "md,html",
                       "--retrievers", "dense", "--model", FAKE, "--no-progress")
    assert code == 0
    formats = json.loads((tmp_path / "out" / "formats.json").read_text())["formats"]
    assert {fmt: [r["strategy"] for r in doc["runs"]] for fmt, doc in formats.items()} == {
        "md": [DEFAULT_STRATEGY], "html": [DEFAULT_STRATEGY]}
