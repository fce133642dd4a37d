"""Document text printed by the CLI is shown, never obeyed: real processes, real pipes.

A file name with an OSC sequence (ESC ] … BEL), a newline that forges a FAILED line, and
U+202E goes through `index`, `status`, `search` and `ask` as separate processes, stdout and
stderr both piped, as a user's terminal or log file would receive them.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model]

NAME = "memo\x1b]0;pwned\x07\nFAILED forged.md [read] fake\u202edm.md"
SHOWN = "memo\\x1b]0;pwned\\x07\\nFAILED forged.md [read] fake\\u202edm.md"
EMPTY = "empty\x1b]2;x\x07\u202e.md"
RAW = ("\x1b", "\x07", "\u202e", "\x9b")


def citeline(*args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    return subprocess.run([sys.executable, "-m", "citeline", *map(str, args)], env=env,
                          capture_output=True, text=True, errors="surrogateescape", timeout=600)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    folder = tmp_path_factory.mktemp("docs")
    (folder / NAME).write_text("# Memo \u202e heading\n\nThe quarterly budget review moves to the second week "
                               "of March, and every team lead presents one page of numbers.\n")
    (folder / EMPTY).write_bytes(b"")
    db = tmp_path_factory.mktemp("index") / "db"
    return db, citeline("index", folder, "--db", db, "--no-progress")


def assert_shown_not_obeyed(done: subprocess.CompletedProcess) -> None:
    for stream in (done.stdout, done.stderr):
        assert not [ch for ch in RAW if ch in stream], stream
        assert not any(line.startswith("FAILED forged.md") for line in stream.splitlines()), stream


def test_index_prints_failures_and_logs_without_raw_escapes(indexed):
    _, done = indexed
    assert done.returncode == 3, done.stderr  # 3: the run finished, the empty file failed
    assert "FAILED empty\\x1b]2;x\\x07\\u202e.md [extract] empty" in done.stdout
    assert_shown_not_obeyed(done)


def test_status_shows_names_escaped(indexed):
    db, _ = indexed
    done = citeline("status", "--db", db)
    assert done.returncode == 0 and SHOWN in done.stdout
    assert_shown_not_obeyed(done)


def test_status_json_keeps_the_exact_names(indexed):
    db, _ = indexed
    done = citeline("status", "--db", db, "--json")
    assert {d["path"] for d in json.loads(done.stdout)["documents"]} == {NAME, EMPTY}
    assert_shown_not_obeyed(done)  # json.dumps escapes them itself


def test_ask_json_keeps_the_exact_names_and_escapes_them(indexed):
    db, _ = indexed
    done = citeline("ask", "When is the quarterly budget review?", "--db", db, "--retriever", "dense",
                    "--cut", "2", "--json")
    assert [c["document"] for c in json.loads(done.stdout)["citations"]] == [NAME]
    assert_shown_not_obeyed(done)  # U+202E and C1 too, not only what JSON must escape


def test_search_and_ask_show_names_and_labels_escaped(indexed):
    db, _ = indexed
    for done in (citeline("search", "quarterly budget review", "--db", db),
                 citeline("ask", "When is the quarterly budget review?", "--db", db, "--retriever", "dense",
                          "--cut", "2")):
        assert done.returncode == 0, done.stderr
        assert SHOWN in done.stdout and "\\u202e heading" in done.stdout
        assert_shown_not_obeyed(done)
