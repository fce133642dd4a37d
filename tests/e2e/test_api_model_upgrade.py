"""A model upgrade under a live `citeline api` process, end to end.

Index two files (one secret), serve them, `citeline reindex --model minilm-int8`, delete the
secret and sync, then `gc --yes`. Before: the service kept its old snapshot (the secret's quote
with 200, /health ready with the old model) and gc dropped the table it read (500s).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest
from testkit import FIXTURES, INT8, needs_int8, served_api

from fakes import FAKE

pytestmark = [pytest.mark.model, pytest.mark.slow, needs_int8]
SECRET = "Confidential: the board decided to close the Zurich office next spring."


def cli(env, *args) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(FIXTURES / "fake_cli.py"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_live_service_follows_a_model_upgrade_and_survives_gc(tmp_path, cli_env):
    folder, db = tmp_path / "docs", tmp_path / "db"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nThe harbour committee meets on Fridays at the pier.\n")
    (folder / "secret.md").write_text(f"# Board\n\n{SECRET}\n")
    cli(cli_env, "index", folder, "--db", db, "--model", FAKE, "--no-progress")
    search = "search?" + urllib.parse.urlencode({"q": "Zurich office board decided", "retriever": "bm25"})
    with served_api(cli_env, "--db", db) as url:
        status, found = get(url + search)
        assert status == 200 and any("Zurich" in hit["quote"] for hit in found["results"])
        cli(cli_env, "reindex", "--model", INT8, "--db", db)
        (folder / "secret.md").unlink()
        cli(cli_env, "index", folder, "--db", db, "--no-progress")
        deadline = time.monotonic() + 120
        while (health := get(url + "health")[1])["model"] == FAKE:
            assert time.monotonic() < deadline, health
            time.sleep(0.5)
        assert health["ready"] is True
        # the service re-opens within a poll (1 s) of the sync's commit; a forgotten document's rows
        # stay in the table for the grace period, and a snapshot taken before the sync still owned them
        deadline = time.monotonic() + 10
        while any("Zurich" in hit["quote"] for hit in get(url + search)[1]["results"]):
            assert time.monotonic() < deadline, "the service still serves the forgotten secret.md"
            time.sleep(0.2)
        status, found = get(url + search)
        assert status == 200 and not any("Zurich" in hit["quote"] for hit in found["results"]), found
        gc = cli(cli_env, "gc", "--db", db, "--yes")
        assert "dropping" in gc.stdout, gc.stdout
        status, found = get(url + "search?q=harbour+committee")
        assert status == 200 and found["results"], found
        assert get(url + "health")[1]["ready"] is True
