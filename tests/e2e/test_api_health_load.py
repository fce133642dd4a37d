"""/health answers at once while 100 questions are being answered.

Before, /health was a plain function: it waited for one of the threads every question held
(21 s in the issue's run); it now answers on the event loop from the snapshot served.
A real `citeline api` process whose fake model takes a second to encode each question.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from testkit import FIXTURES, served_api

pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]
SLOW_QUERY = "fake/slow-query-hashed-bag-of-words"  # tests/fixtures/fake_cli.py
ASKS = 100


def post(url: str, body: dict, codes: list[int]) -> None:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            codes.append(response.status)
    except urllib.error.HTTPError as exc:
        codes.append(exc.code)


def test_health_answers_at_once_under_a_hundred_asks(docs, tmp_path, cli_env):
    db = tmp_path / "db"
    done = subprocess.run([sys.executable, str(FIXTURES / "fake_cli.py"), "index", docs, "--db", db, "--model",
                           SLOW_QUERY, "--no-progress"], env=cli_env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with served_api({**cli_env, "CITELINE_WARM_RERANK": "0"}, "--db", db) as url:
        codes: list[int] = []
        asks = [threading.Thread(target=post, args=(url + "ask", {"query": f"dropout question {n}", "cut": 0.9,
                                                                   "retriever": "dense"}, codes))
                for n in range(ASKS)]
        for ask in asks:
            ask.start()
        time.sleep(1.0)  # every thread the service has is encoding a question now
        started = time.monotonic()
        with urllib.request.urlopen(url + "health", timeout=300) as response:
            health = json.loads(response.read())
        took = time.monotonic() - started
        for ask in asks:
            ask.join(timeout=300)
    print(f"health took {took:.2f} s under {ASKS} asks")
    assert health["ready"] is True and took < 0.5, took
    assert codes.count(200) == ASKS, codes
