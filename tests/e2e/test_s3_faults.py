"""Transient object-store errors are retried with a growing delay; bad input is not, until it changes.

The folder is on a real S3 server (moto, on loopback) reached through a small proxy in this
test that injects faults into chosen objects' GETs: 500 InternalError, 503 ServiceUnavailable
or a connection closed without an answer. botocore is told not to retry (AWS_MAX_ATTEMPTS=1),
so what cures a fault is s3fs's own quick retries (connection errors only) and the Prefect
task retries of ``prepare_document`` (tasks/document.py): 1, 2, 4 s, each jittered to 0.63-1.5x.
"""
import http.client
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from citeline.flows.ingest import index_folder
from citeline.index.lease import s3_client
from citeline.index.store import Store
from citeline.schemas.settings import IndexSettings
from fakes import FAKE

pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]


class FaultyS3:
    """A proxy to the S3 server that fails the GETs of chosen keys, as told, and logs every GET."""

    def __init__(self, upstream: str):
        self.upstream = urlsplit(upstream)
        self.faults: dict[str, list[str]] = {}  # key -> faults still to inject, in order ("500", "503", "reset")
        self.always: dict[str, str] = {}  # key -> a fault injected on every GET
        self.gets: dict[str, list[float]] = defaultdict(list)  # key -> when each GET came
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                key = urlsplit(self.path).path.split("/", 2)[-1]
                if "list-type" not in self.path:
                    proxy.gets[key].append(time.monotonic())
                    fault = proxy.next_fault(key)
                    if fault == "reset":
                        self.close_connection = True
                        self.connection.close()
                        return
                    if fault:
                        code = {"500": "InternalError", "503": "ServiceUnavailable"}[fault]
                        body = (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
                                f"<Message>injected {fault}</Message></Error>").encode()
                        self.send_response(int(fault))
                        self.send_header("Content-Type", "application/xml")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                        return
                self.forward()

            def do_HEAD(self):
                self.forward()

            def forward(self):
                upstream = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=30)
                length = int(self.headers.get("Content-Length") or 0)
                upstream.request(self.command, self.path, body=self.rfile.read(length) if length else None,
                                 headers={k: v for k, v in self.headers.items() if k.lower() != "host"}
                                 | {"Host": proxy.upstream.netloc})
                answer = upstream.getresponse()
                body = answer.read()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                        self.send_header(name, value)
                # a HEAD's length is the object's, though no body follows
                self.send_header("Content-Length", answer.getheader("Content-Length", "0") if self.command == "HEAD"
                                 else str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)
                upstream.close()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def next_fault(self, key: str) -> str | None:
        if key in self.always:
            return self.always[key]
        queue = self.faults.get(key)
        return queue.pop(0) if queue else None


@pytest.fixture
def faulty(s3_server, s3_bucket, monkeypatch):
    from s3fs import S3FileSystem

    moto = s3_client()  # made before the endpoint moves to the proxy: the test writes to moto itself
    proxy = FaultyS3(s3_server["AWS_ENDPOINT_URL"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)  # the sync reads through the proxy
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    S3FileSystem.clear_instance_cache()

    def put(key: str, body: bytes) -> None:
        moto.put_object(Bucket=s3_bucket, Key=key, Body=body)

    yield proxy, s3_bucket, put
    proxy.server.shutdown()
    S3FileSystem.clear_instance_cache()


def sync(root: str, db: str):
    state = index_folder(root, IndexSettings(db=db, model=FAKE), return_state=True)
    return state, state.result(raise_on_failure=False)


def test_transient_faults_are_retried_and_bad_input_is_read_once(faulty, tmp_path):
    proxy, bucket, put = faulty
    for name in ("flaky.md", "reset.md", "down.md", "good.md"):
        put(f"docs/{name}", f"# {name}\n\nDropout zeroes activations during training.\n".encode())
    put("docs/bad.md", b"caf\xe9 latin-1 bytes\x00\x01")  # not UTF-8: bad input
    proxy.faults = {"docs/flaky.md": ["500", "500"], "docs/reset.md": ["reset"] * 6}
    proxy.always = {"docs/down.md": "503"}
    root, db = f"s3://{bucket}/docs", str(tmp_path / "index")

    state, summary = sync(root, db)
    # flaky.md: two 500s, then read on the third attempt, after ~1 s and ~2 s (0.63-1.5x each)
    flaky = proxy.gets["docs/flaky.md"]
    gaps = [b - a for a, b in zip(flaky, flaky[1:])]
    assert len(flaky) == 3 and gaps[0] >= 0.45 and gaps[1] >= 0.95 and sum(gaps) < 20, gaps
    # reset.md: s3fs retried the closed connection five times, then one Prefect retry read it
    assert len(proxy.gets["docs/reset.md"]) == 7
    # down.md: the first attempt and three retries, then failed as store-unavailable
    assert len(proxy.gets["docs/down.md"]) == 4
    reasons = {f.path: f.reason for f in summary.failures}
    assert reasons.keys() == {"down.md", "bad.md"}
    assert reasons["down.md"].startswith("store-unavailable: the object store failed while it was read")
    assert reasons["bad.md"].startswith("undecodable")
    assert len(proxy.gets["docs/bad.md"]) == 1  # bad input: no retry
    assert state.name == "DocumentsFailed" and summary.indexed == 3

    # the next sync: bad.md is unchanged, so it is not read at all; down.md is tried again
    state, summary = sync(root, db)
    assert len(proxy.gets["docs/bad.md"]) == 1 and len(proxy.gets["docs/down.md"]) == 8
    assert summary.still_failing == 1 and [f.path for f in summary.failures] == ["down.md"]
    assert state.name == "DocumentsFailed"  # down.md failed again in this run: a new failure

    # the store is back: down.md is indexed, bad.md still not read; nothing new failed, so Completed
    proxy.always = {}
    state, summary = sync(root, db)
    assert state.is_completed() and summary.failed == 0 and summary.still_failing == 1, state.message
    assert "1 still failing" in state.message and len(proxy.gets["docs/bad.md"]) == 1

    # bad.md's bytes change: it is read again (and fails again, a new failure)
    put("docs/bad.md", b"still caf\xe9 latin-1\x00\x01")
    state, summary = sync(root, db)
    assert len(proxy.gets["docs/bad.md"]) == 2 and [f.path for f in summary.failures] == ["bad.md"]
    assert summary.still_failing == 0 and state.name == "DocumentsFailed"
    status = {r["path"]: (r["status"], r["attempts"]) for r in Store(db).document_rows(["path", "status", "attempts"])}
    assert status == {"flaky.md": ("indexed", 1), "reset.md": ("indexed", 1), "good.md": ("indexed", 1),
                      "down.md": ("indexed", 3), "bad.md": ("failed", 2)}
