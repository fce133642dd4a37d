"""Why citeline sets ``OMP_WAIT_POLICY=PASSIVE``: query and batch encoding under each OpenMP wait policy.

PyTorch's CPU kernels run on OpenMP threads that, by default, spin between parallel regions.
On a machine whose cores are busy with other work (extraction children, Prefect, another
job) a spinning thread holds a core its sibling needs, and the call waits for a thread the
scheduler took away. Each policy runs in its own interpreter (OpenMP reads the variable once,
when torch loads), in alternating rounds so both see the same load:

- query: one ``embed_query`` on the main thread, median over 40 short questions (``ask``);
- batch: ``embed_documents`` of 160 dev-corpus passages of 500 characters (what indexing does),
  wall and CPU seconds.

    .venv/bin/python bench/omp_wait_policy.py [--rounds 2]
    .venv/bin/python bench/omp_wait_policy.py --smoke   # one round of 4 questions and 8 passages (marked model in
                                                        # tests/flows/test_bench_smoke.py: the real model in each child)

Prints a Markdown table with the ratio PASSIVE / default per round; quote the CPU and load.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev" / "docs"
POLICIES = ("default", "PASSIVE")


def measure(passages: int = 160, queries: int = 40) -> dict:
    """Run in the child: the numbers for the policy this interpreter started with."""
    from citeline.pipeline.embed import get_embedder

    embedder = get_embedder("all-MiniLM-L6-v2", "fp32")
    texts = [p.read_text()[i:i + 500] for p in sorted(CORPUS.glob("*.md")) for i in range(0, 8000, 500)][:passages]
    embedder.embed_documents(texts[:8])  # weights loaded, kernels warm
    times = []
    for n in range(queries):
        started = time.perf_counter()
        embedder.embed_query(f"What does dropout zero out during training step {n}?")
        times.append(time.perf_counter() - started)
    cpu, wall = time.process_time(), time.perf_counter()
    embedder.embed_documents(texts)
    return {"query_ms": 1000 * statistics.median(times), "batch_wall_s": time.perf_counter() - wall,
            "batch_cpu_s": time.process_time() - cpu}


def child(policy: str, smoke: bool = False) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["HF_HUB_OFFLINE"] = "1"
    if policy != "default":
        env["OMP_WAIT_POLICY"] = policy
    done = subprocess.run([sys.executable, __file__, "--child", *["--smoke"][:smoke]], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="one round of 4 questions and 8 passages")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(8, 4) if args.smoke else measure()))
        return
    if args.smoke:
        args.rounds = 1
    print("| round | load (1 min) | policy | query p50 ms | batch wall s | batch CPU s |")
    print("|---|---:|---|---:|---:|---:|")
    for round_ in range(1, args.rounds + 1):
        found = {}
        for policy in (POLICIES if round_ % 2 else POLICIES[::-1]):
            load = os.getloadavg()[0]
            found[policy] = child(policy, args.smoke)
            r = found[policy]
            print(f"| {round_} | {load:.1f} | {policy} | {r['query_ms']:.1f} | {r['batch_wall_s']:.1f} "
                  f"| {r['batch_cpu_s']:.1f} |", flush=True)
        a, b = found["default"], found["PASSIVE"]
        print(f"| {round_} | | **PASSIVE / default** | **{b['query_ms'] / a['query_ms']:.2f}×** "
              f"| **{b['batch_wall_s'] / a['batch_wall_s']:.2f}×** | **{b['batch_cpu_s'] / a['batch_cpu_s']:.2f}×** |",
              flush=True)


if __name__ == "__main__":
    main()
