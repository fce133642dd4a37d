"""The index folder deleted while `citeline api` serves it, and a read-only index folder.

Deleted: every route that reads the index answers 503 "IndexGone" with one clear message
(stale LanceDB handles would answer from files that are no longer there: half the routes
failed with 500, others answered from memory); /health says not ready.
Read-only (a real read-only bind mount, as root cannot be refused by file modes): the writing
commands fail with one line before any flow starts, the reading ones work.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from citeline.library import Index
from citeline.web.app import create_app
from fakes import FAKE

pytestmark = pytest.mark.usefixtures("prefect_harness")
FAKE_CLI = Path(__file__).resolve().parents[1] / "fixtures" / "fake_cli.py"


def test_an_index_deleted_while_served_is_503_index_gone(docs, tmp_path):
    db = tmp_path / "db"
    index = Index.create(str(db), model=FAKE)
    assert index.sync(str(docs)).indexed == 2
    with TestClient(create_app(index, poll_s=0), base_url="http://127.0.0.1") as client:
        doc = client.get("/documents").json()["documents"][0]["document_id"]
        chunk = client.get(f"/documents/{doc}/chunks").json()["chunks"][0]["chunk_id"]
        assert client.get("/search", params={"q": "dropout", "retriever": "dense"}).status_code == 200
        shutil.rmtree(db)
        for path in ("/search?q=dropout&retriever=dense", "/search?q=dropout&retriever=bm25", "/documents",
                     f"/documents/{doc}/chunks", f"/view/{chunk}", f"/sources/{doc}"):
            response = client.get(path)
            assert response.status_code == 503, (path, response.status_code, response.text[:300])
            error = response.json()["error"]
            assert error["type"] == "IndexGone" and f"the index at {db} is gone" in error["message"], error
        ask = client.post("/ask", json={"query": "dropout", "cut": 0.95, "retriever": "dense"})
        assert ask.status_code == 503 and ask.json()["error"]["type"] == "IndexGone"
        assert client.get("/health").json()["ready"] is False


def fake_cli(env: dict[str, str], *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(FAKE_CLI), *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def read_only_index(docs, tmp_path, cli_env):
    """An index reached through a read-only bind mount of its folder; skipped where mounting is not allowed."""
    source, mounted = tmp_path / "rw", tmp_path / "ro"
    source.mkdir()
    mounted.mkdir()
    assert fake_cli(cli_env, "index", docs, "--db", source / "db", "--model", FAKE, "--no-progress").returncode == 0
    bind = subprocess.run(["mount", "--bind", str(source), str(mounted)], capture_output=True, text=True)
    if bind.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bind.stderr.strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mounted)], check=True, capture_output=True)
        yield mounted / "db"
    finally:
        subprocess.run(["umount", str(mounted)], check=True)


def test_a_read_only_index_refuses_writes_in_one_line_and_serves_reads(read_only_index, docs, cli_env):
    """Before: `index` printed the lock file's error after its flow had started, then Prefect's
    `Still processing items` warning."""
    db = read_only_index
    for command in (["index", docs, "--no-progress"], ["rm", docs / "04-dropout.md"]):
        done = fake_cli(cli_env, *command, "--db", db)
        assert done.returncode == 1, done.stdout + done.stderr
        assert done.stderr.splitlines() == [f"Error: the index at {db} cannot be written (a read-only file system): "
                                            "index, retry, reindex, rm, gc, calibrate and check --repair write to it; "
                                            "status, search, ask and check only read"], done.stderr
    status = fake_cli(cli_env, "status", "--db", db)
    assert status.returncode == 0 and "04-dropout.md" in status.stdout, status.stderr
    search = fake_cli(cli_env, "search", "dropout", "--db", db, "--retriever", "bm25")
    assert search.returncode == 0 and "04-dropout.md" in search.stdout, search.stderr
    check = fake_cli(cli_env, "check", "--db", db)
    assert check.returncode == 0 and "index OK" in check.stdout, check.stdout + check.stderr
