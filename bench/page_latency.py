"""The ask page's round trip in Chromium, as a person gets it.

Starts ``citeline api`` over ``--db`` in its own process, opens the ask page in headless
Chromium and asks the dev corpus's questions (course wording, then the out-of-domain ones)
one after another on that one page, as a person does: type, Enter, wait for the sources or the
refusal. The page itself measures each ask (``performance.measure('ask')`` in web/static/ask.js: from
the fetch to the cards drawn); this reads those entries. The first ``--warmup`` asks are not
counted. With ``--wait-warm`` the service's background encoding of the index's word-pieces
(service.warm_reranker) is waited for first; ``CITELINE_WARM_RERANK=0`` in the environment turns
that encoding off (the "before").

    .venv/bin/python bench/page_latency.py --db INDEX [--questions 40] [--wait-warm]
    .venv/bin/python bench/page_latency.py --smoke

``--smoke`` (tests/flows/test_bench_smoke.py, marked slow: it needs Chromium): the tiny corpus of
bench/smokekit.py indexed with the tests' fake embedder, served by ``citeline`` on that fake
(tests/fixtures/fake_cli.py), 2 questions after 1 warm-up: runs, no figure.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

DEV = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora" / "dev"


def questions(corpus: Path) -> list[str]:
    inside = [json.loads(line)["course"] for line in (corpus / "ground_truth.jsonl").read_text().splitlines() if line]
    outside = [json.loads(line)["query"] for line in (corpus / "out_of_domain.jsonl").read_text().splitlines() if line]
    mixed = []
    for i in range(max(len(inside), len(outside))):  # alternate, so refusals and answers interleave
        mixed += [q for q in (inside[i] if i < len(inside) else None, outside[i] if i < len(outside) else None) if q]
    return mixed


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db")
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--wait-warm", action="store_true", help="wait for the service's word-piece encoding first")
    parser.add_argument("--corpus", type=Path, default=DEV)
    parser.add_argument("--log", type=Path, default=Path("/tmp/page_latency_api.log"))
    parser.add_argument("--smoke", action="store_true", help="a tiny corpus on the fake embedder, 2 questions")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            args.db, args.corpus, args.questions, args.warmup = smokekit.tiny_index(), smokekit.tiny_corpus(), 2, 1
            serve_and_ask(args, (sys.executable, str(smokekit.FAKE_CLI)))
    elif args.db:
        serve_and_ask(args, (sys.executable, "-m", "citeline"))
    else:
        parser.error("--db is required")


def serve_and_ask(args, citeline: tuple[str, ...]) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITELINE_LLM_", "OPENAI_"))}
    log = open(args.log, "w")
    started = time.monotonic()
    proc = subprocess.Popen([*citeline, "api", "--db", args.db, "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        while True:
            assert proc.poll() is None, "citeline api exited: " + args.log.read_text()[-2000:]
            try:
                with urllib.request.urlopen(base + "/health", timeout=5) as r:
                    if b'"ready":true' in r.read():
                        break
            except OSError:
                time.sleep(0.5)
        ready_s = time.monotonic() - started
        warm_s = None
        if args.wait_warm:  # the warm-up is over when the idle service stops using the CPU
            last, quiet = cpu_s(proc.pid), 0
            while quiet < 5:
                assert proc.poll() is None, "citeline api exited"
                time.sleep(2)
                now = cpu_s(proc.pid)
                quiet, last = (quiet + 1 if now - last < 0.2 else 0), now
            warm_s = time.monotonic() - started - 10
        result = measure(base, questions(args.corpus)[: args.questions + args.warmup], args.warmup)
        rss = int(next(line for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                       if line.startswith("VmRSS")).split()[1]) // 1024
        print(json.dumps({**result, "ready_s": round(ready_s, 1), "warm_s": warm_s and round(warm_s, 1),
                          "service_rss_mb": rss, "load_after": os.getloadavg()}))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(base: str, asked: list[str], warmup: int) -> dict:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(base + "/")
        box = driver.find_element(By.ID, "question")
        for question in asked:
            count = len(driver.execute_script("return performance.getEntriesByName('ask')"))
            box.clear()
            box.send_keys(question, Keys.ENTER)
            deadline = time.monotonic() + 120
            while len(driver.execute_script("return performance.getEntriesByName('ask')")) <= count:
                assert time.monotonic() < deadline, "no answer in 120 s"
                time.sleep(0.02)
        durations = driver.execute_script("return performance.getEntriesByName('ask').map(e => e.duration)")
    finally:
        driver.quit()
    counted = sorted(durations[warmup:])
    return {"n": len(counted), "p50_ms": round(statistics.median(counted), 1),
            "p95_ms": round(counted[int(0.95 * (len(counted) - 1))], 1), "max_ms": round(counted[-1], 1)}


if __name__ == "__main__":
    main()
