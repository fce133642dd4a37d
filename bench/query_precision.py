"""One question through MiniLM in bf16 autocast against fp32: which is faster for a single text?

    .venv/bin/python bench/query_precision.py [--rounds 3]
    .venv/bin/python bench/query_precision.py --smoke   # 8 questions, one round (tests/flows/test_bench_smoke.py, marked model)

Two embedders of the packaged model (bf16 and fp32 ``_encode_locked``, one text at a time, as a
question was encoded before ``embed_query`` went fp32), the 64 dev questions (course and ticket
wording) on a worker thread (as the service runs its endpoints), alternating rounds in one
process; prints the median ms per question of each, their ratio, the CPU and the load.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from citeline.tasks import env

env.apply()

from citeline.pipeline.embed import get_embedder  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev"


def questions() -> list[str]:
    rows = [json.loads(line) for line in (CORPUS / "ground_truth.jsonl").read_text().splitlines() if line.strip()]
    return [r[key] for key in ("course", "ticket") for r in rows]


def median_ms(embedder, texts: list[str]) -> float:
    times = []
    for text in texts:
        started = time.perf_counter()
        with embedder._lock:
            embedder._encode_locked([text])
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def cpu() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")),
                platform.processor())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="8 questions, one round")
    args = parser.parse_args()
    texts = questions()
    if args.smoke:
        texts, args.rounds = texts[:8], 1
    bf16, fp32 = get_embedder("all-MiniLM-L6-v2", "bf16", 3), get_embedder("all-MiniLM-L6-v2", "fp32", 3)
    pool = ThreadPoolExecutor(1)
    print(f"{cpu()}, {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}; {len(texts)} questions")
    pool.submit(median_ms, bf16, texts[:8]).result(), pool.submit(median_ms, fp32, texts[:8]).result()  # warm
    for n in range(args.rounds):
        b, f = pool.submit(median_ms, bf16, texts).result(), pool.submit(median_ms, fp32, texts).result()
        print(f"round {n + 1}: bf16 {b:.1f} ms, fp32 {f:.1f} ms per question; fp32 / bf16 = {f / b:.2f}")
    print(f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
