"""`citeline search` and `ask` send the question to a `citeline api` serving the same index on
this machine, and print what they would have printed answering it themselves.

Real processes on the fake embedder (tests/fixtures/fake_cli.py): the service announces itself
under CITELINE_HOME; each command is run twice, through the service and with --local.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from testkit import FIXTURES, served_api

from fakes import FAKE

pytestmark = pytest.mark.usefixtures("prefect_harness")
QUESTION = "Why does dropout only apply during training?"


def cli(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(FIXTURES / "fake_cli.py"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def indexed(docs, tmp_path, cli_env):
    env = {**cli_env, "CITELINE_HOME": str(tmp_path / "home")}
    db = tmp_path / "db"
    assert cli(env, "index", docs, "--db", db, "--model", FAKE, "--no-progress").returncode == 0
    return env, db


@pytest.mark.parametrize("command", [
    ("ask", QUESTION), ("ask", QUESTION, "--json"), ("ask", "What is the capital of France?"),
    ("search", QUESTION, "-k", "3"), ("search", QUESTION, "--json", "--retriever", "bm25"),
    ("ask", QUESTION, "--path", "04-dropout.md", "-k", "2"),
])
def test_a_command_answered_by_the_service_prints_what_it_prints_alone(indexed, command):
    env, db = indexed
    alone = cli(env, *command, "--db", db, "--local")
    assert alone.returncode == 0, alone.stderr[-2000:]
    with served_api(env, "--db", db) as url:
        announced = list((db.parent / "home" / "services").glob("*.json"))
        assert [json.loads(p.read_text())["url"] for p in announced] == [url]
        served = cli(env, command[0], "-v", *command[1:], "--db", db)
    assert served.returncode == 0, served.stderr[-2000:]
    assert f"asking the citeline api at {url}" in served.stderr
    assert served.stdout == alone.stdout
    assert not list((db.parent / "home" / "services").glob("*.json"))  # withdrawn when it stopped


def test_a_service_killed_with_minus_9_is_passed_over(indexed):
    env, db = indexed
    with served_api(env, "--db", db):
        (announced,) = (db.parent / "home" / "services").glob("*.json")
        os.kill(json.loads(announced.read_text())["pid"], 9)
        done = cli(env, "ask", "-v", QUESTION, "--db", db)
        assert not announced.exists()  # what it left is removed by the first command that finds it dead
    assert done.returncode == 0 and "asking the citeline api" not in done.stderr
    assert done.stdout == cli(env, "ask", QUESTION, "--db", db, "--local").stdout
