"""Connections that send nothing, or trickle a head, are closed; connections are capped.

Raw sockets against a real `citeline api` process on loopback, with a 1 s head deadline and
8 connections so the test stays short. Before, uvicorn's defaults kept a silent connection and a
client sending a header line every few seconds for ever, and accepted connections until the
process ran out of file descriptors.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from testkit import FIXTURES, served_api

from fakes import FAKE

pytestmark = pytest.mark.usefixtures("prefect_harness")
HEAD_S, MAX = 1.0, 8


@pytest.fixture
def service(docs, tmp_path, cli_env):
    db = tmp_path / "db"
    done = subprocess.run([sys.executable, str(FIXTURES / "fake_cli.py"), "index", docs, "--db", db, "--model", FAKE,
                           "--no-progress"], env=cli_env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with served_api(cli_env, "--db", db, "--header-timeout", HEAD_S, "--max-connections", MAX) as url:
        yield url.rstrip("/").rsplit(":", 1)[1]


def connect(port: str) -> socket.socket:
    return socket.create_connection(("127.0.0.1", int(port)), timeout=10)


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed ``sock`` (reading EOF or a reset), None if still open then."""
    started = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def test_a_silent_connection_is_closed_after_the_head_deadline(service):
    with connect(service) as sock:
        took = closed_within(sock, HEAD_S + 4)
    assert took is not None and took < HEAD_S + 2, took


def test_a_trickled_head_is_closed_though_every_line_comes_in_time(service):
    with connect(service) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        closed = None
        for n in range(12):  # a header line every 0.4 s: the keep-alive timer never fires
            time.sleep(0.4)
            try:
                sock.sendall(f"X-Slow-{n}: 1\r\n".encode())
            except (BrokenPipeError, ConnectionResetError):
                closed = time.monotonic() - started
                break
        if closed is None:
            assert closed_within(sock, 1.0) is not None, "a trickled head was kept past its deadline"
        else:
            assert closed < HEAD_S + 2, closed


def test_connections_past_the_cap_are_closed_and_the_service_answers_after(service):
    socks = [connect(service) for _ in range(3 * MAX)]
    try:
        refused = sum(closed_within(s, 0.5) is not None for s in socks)
        assert refused >= 2 * MAX - 1, refused  # beyond the cap: closed as they came
    finally:
        for s in socks:
            s.close()
    time.sleep(HEAD_S + 0.5)  # the silent ones inside the cap are gone by their deadline
    with urllib.request.urlopen(f"http://127.0.0.1:{service}/health", timeout=10) as response:
        assert response.status == 200
