"""Warm latency of ``citeline api`` against the same calls in process (``Index``), and its memory.

Over an index of the dev corpus (~1k chunks): the questions of ground_truth.jsonl and
out_of_domain.jsonl, asked round-robin.

- in process: ``Index.search(q, k=8)`` (dense) and ``Index.ask(q)`` (the default: MaxSim
  rerank of the hybrid top 25, gate, citations, prompt; no generation), one client calling
  from a worker thread, as the service's endpoints run, for ``--seconds`` each;
- over HTTP: ``GET /search?q=…&k=8`` and ``POST /ask {"question": q}`` against
  ``citeline api`` running as its own process, with 1 and 4 concurrent clients
  (keep-alive connections), each for ``--seconds``;
- RSS of the service process after start and after the runs (/proc/PID/status VmRSS);
- per HTTP cell, ``service_p50_ms``: the median of the service's own time per request (its
  ``Server-Timing`` header, from the request's arrival in the app to the response's start), so
  what the connection, the event loop's hand-offs and the client add is the difference.

Each cell starts warm (one untimed call per client) and each kind is measured in process
and over HTTP back to back, so the ratio HTTP / in-process compares medians of the same
work at the same load.

Why the worker thread: FastAPI runs a plain ``def`` endpoint on a thread of its pool, and
torch's two intra-op threads behave very differently there. On the main thread of a busy
2-core machine (load 10) one ``embed_query`` took ~480 ms at the median against ~29 ms on a
worker thread of the same process, and ~56 ms on the main thread after
``torch.set_num_threads(1)``; the bench's earlier in-process column (1.4–3.2 s per search)
measured that, not citeline's work.

    .venv/bin/python bench/http_latency.py --db DB [--seconds 20] [--questions N] [--token-vectors]

Without --db the corpus is indexed (strategy E) into a temporary folder first.
--token-vectors first adds stored word-piece vectors to the index at DB (it writes to it:
use a copy), so MaxSim reranks without running the model over the candidates.
``--smoke`` (tests/flows/test_bench_smoke.py): the tiny corpus of bench/smokekit.py indexed with the tests'
fake embedder, served by ``citeline`` on that fake (tests/fixtures/fake_cli.py), 4 questions (one per client), 0.3 s a cell:
runs, no figure.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citeline.runtime import env  # noqa: E402

env.apply()

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev"
K = 8


def questions(corpus: Path) -> list[str]:
    rows = [json.loads(line) for name in ("ground_truth.jsonl", "out_of_domain.jsonl")
            for line in (corpus / name).read_text().splitlines() if line.strip()]
    return [row.get("course") or row.get("query") for row in rows]


def percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"n": len(samples), "p50_ms": round(statistics.median(ordered) * 1000, 2), "p95_ms": round(p95 * 1000, 2)}


def in_process(index, kind: str, qs: list[str], seconds: float) -> dict:
    """One client calling ``index`` for ``seconds``, timed on a worker thread as the service runs it."""
    call = (lambda q: index.search(q, K)) if kind == "search" else (lambda q: index.ask(q))

    def client() -> list[float]:
        call(qs[0])  # warm: model, reranker, caches, this thread
        samples, i, stop = [], 0, time.monotonic() + seconds
        while not samples or time.monotonic() < stop:  # one timed call at least, however short the cell
            start = time.perf_counter()
            call(qs[i % len(qs)])
            samples.append(time.perf_counter() - start)
            i += 1
        return samples

    with ThreadPoolExecutor(max_workers=1) as pool:
        samples = pool.submit(client).result()
    return {**percentiles(samples), "per_s": round(len(samples) / seconds, 1)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CITELINE = (sys.executable, "-m", "citeline")


def start_service(db: str, citeline: tuple[str, ...] = CITELINE) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([*citeline, "api", "--db", db, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("citeline api exited")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/health")
            if b'"ready":true' in conn.getresponse().read():
                return proc, port
        except OSError:
            time.sleep(0.5)
    raise SystemExit("citeline api did not become ready")


def request(conn: http.client.HTTPConnection, kind: str, q: str) -> float:
    """Send one request; return the service's own time for it (its Server-Timing), in seconds."""
    if kind == "search":
        conn.request("GET", f"/search?{urllib.parse.urlencode({'q': q, 'k': K})}")
    else:
        conn.request("POST", "/ask", body=json.dumps({"question": q}), headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"{kind} {q!r}: HTTP {response.status} {body[:200]!r}")
    return float(response.getheader("Server-Timing", "app;dur=nan").partition("dur=")[2]) / 1000


def over_http(port: int, kind: str, qs: list[str], clients: int, seconds: float) -> dict:
    samples: list[float] = []
    inside: list[float] = []  # the service's own time per request (Server-Timing)
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(offset: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        request(conn, kind, qs[offset])  # warm this connection
        i = offset
        mine, served = [], []
        while not mine or time.monotonic() < stop:  # one timed request at least: the warm-up may outlast the cell
            q = qs[i % len(qs)]
            start = time.perf_counter()
            served.append(request(conn, kind, q))
            mine.append(time.perf_counter() - start)
            i += clients
        with lock:
            samples.extend(mine)
            inside.extend(served)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {**percentiles(samples), "per_s": round(len(samples) / (time.monotonic() - began), 1),
            "service_p50_ms": percentiles(inside)["p50_ms"]}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def build_index(corpus: Path) -> str:
    db = os.path.join(tempfile.mkdtemp(prefix="http-latency-"), "db")
    done = subprocess.run([sys.executable, "-m", "citeline", "index", str(corpus / "docs"), "--db", db,
                           "--no-progress"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    return db


def add_token_vectors(db: str) -> int:
    from citeline.index.store import Store
    from citeline.pipeline.embed import get_embedder
    from citeline.tasks.tokens import fill_token_vectors

    store = Store(db)
    stamp = store.stamp()
    added, _ = fill_token_vectors(store, stamp, lambda: get_embedder(stamp.embed_model))
    return added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--questions", type=int, default=0, help="use only the first N questions (0: all)")
    parser.add_argument("--token-vectors", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="a tiny corpus on the fake embedder, 0.3 s a cell")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            args.db, args.corpus, args.seconds, args.questions = smokekit.tiny_index(), smokekit.tiny_corpus(), 0.3, 4
            measure(args, (sys.executable, str(smokekit.FAKE_CLI)))
    else:
        measure(args, CITELINE)


def measure(args, citeline: tuple[str, ...]) -> None:
    db = args.db or build_index(args.corpus)
    if args.token_vectors:
        print(f"token vectors added for {add_token_vectors(db)} chunks", file=sys.stderr)
    qs = questions(args.corpus)
    qs = qs[:args.questions] if args.questions else qs
    from citeline import Index
    from citeline.index.store import Store

    report = {"cpu": cpu_name(), "cores": os.cpu_count(), "chunks": Store(db).count_chunks(),
              "token_vectors": any(n.startswith("tokens_") for n in Store(db).table_names()),
              "load_before": os.getloadavg(), "seconds": args.seconds, "in_process": {}, "http": {}}
    index = Index.open(db)
    proc, port = start_service(db, citeline)
    try:
        report["rss_mb_started"] = rss_mb(proc.pid)
        for kind in ("search", "ask"):  # each kind back to back: in process, then HTTP, at one load
            report["in_process"][kind] = in_process(index, kind, qs, args.seconds)
            for clients in (1, 4):
                report["http"][f"{kind} x{clients}"] = over_http(port, kind, qs, clients, args.seconds)
        report["rss_mb_after"] = rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    report["load_after"] = os.getloadavg()
    report["ratio_p50_1_client"] = {
        kind: round(report["http"][f"{kind} x1"]["p50_ms"] / report["in_process"][kind]["p50_ms"], 2)
        for kind in ("search", "ask")}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
