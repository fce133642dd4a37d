"""MaxSim's word-piece vectors stored at index time (int8), measured on the dev corpus.

Three measurements, each alternating its two sides in one run so their ratio holds on a busy machine:

- ``index``: a fresh ``citeline index`` of the corpus with ``--no-token-vectors`` and with
  ``--token-vectors`` (whole process, wall and CPU), and the disk each index takes: the chunks
  and tokens tables (``du``), per chunk.
- ``first``: a fresh process per side opens an index (``Index.open``) and asks each of the
  corpus' course questions once, none asked before in that process: ``search`` (rerank) and
  ``ask`` (no LLM) in separate processes; first query, p50, p90 and peak RSS. Run it on the
  indexes ``index --keep`` left.
- ``codec``: the evaluation harness (strategy E, rerank) with passages' vectors scored as float16
  (table version 1) and as int8 (version 2): R@k/MRR per phrasing, the paired sign test on each
  query's reciprocal rank, the largest rerank-score difference and how many reranked lists agree.

    .venv/bin/python bench/token_storage.py index --rounds 2 --keep /tmp/ts
    .venv/bin/python bench/token_storage.py first --db /tmp/ts/with --db /tmp/ts/without --rounds 2
    .venv/bin/python bench/token_storage.py service --db /tmp/ts/with --db /tmp/ts/without --rounds 2
    .venv/bin/python bench/token_storage.py second-pass --db /tmp/ts/without
    .venv/bin/python bench/token_storage.py codec
    .venv/bin/python bench/token_storage.py index --smoke   # tests/flows/test_bench_smoke.py

``service``: ``citeline api`` started fresh on each index, the course questions POSTed to ``/ask``
from the first request after it is ready. ``second-pass``: what storing token vectors cost before
(a second forward pass over every chunk after the run), on a copy of an index without them.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev"
ROOT = Path(__file__).resolve().parents[1]


def du(path: Path) -> int:
    """Bytes on disk under ``path`` (``du -sb``)."""
    return int(subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout.split()[0])


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in subprocess.run(
        ["lscpu"], capture_output=True, text=True).stdout.splitlines() if line.startswith("Model name")), "?")
    return f"{model}, {os.cpu_count()} CPUs, load {' '.join(f'{x:.1f}' for x in os.getloadavg())}"


def index_once(docs: Path, db: Path, flag: str, cli: tuple[str, ...] = (sys.executable, "-m", "citeline"),
               extra: tuple[str, ...] = ()) -> dict:
    if db.exists():
        shutil.rmtree(db)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([*cli, "index", str(docs), "--db", str(db), "--no-progress", flag, *extra],
                   check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    from citeline.index.store import Store

    store = Store(str(db))
    chunks = store.count_chunks()
    tables = {p.name.split("_")[0]: du(p) for p in db.iterdir() if p.name.startswith(("chunks_", "tokens_"))}
    return {"flag": flag, "wall_s": round(wall, 1), "cpu_s": round(after.ru_utime + after.ru_stime
                                                                  - before.ru_utime - before.ru_stime, 1),
            "chunks": chunks, "db_bytes": du(db), "chunks_table": tables.get("chunks", 0),
            "tokens_table": tables.get("tokens", 0)}


def cmd_index(args) -> None:
    cli: tuple[str, ...] = (sys.executable, "-m", "citeline")
    extra: tuple[str, ...] = ()
    if args.smoke:  # the tiny corpus through the fake embedder's CLI, one round
        import smokekit

        args.corpus, args.rounds = smokekit.tiny_corpus(), 1
        cli, extra = (sys.executable, str(smokekit.FAKE_CLI)), ("--model", smokekit.FAKE)
    docs = Path(args.corpus) / "docs"
    keep = Path(args.keep) if args.keep else Path(tempfile.mkdtemp())
    keep.mkdir(parents=True, exist_ok=True)
    print(machine())
    rows = []
    for r in range(args.rounds):
        order = [("--no-token-vectors", "without"), ("--token-vectors", "with")]
        for flag, name in (order if r % 2 == 0 else order[::-1]):
            row = index_once(docs, keep / name, flag, cli, extra)
            rows.append(row)
            print(json.dumps(row), flush=True)
    for flag in ("--no-token-vectors", "--token-vectors"):
        mine = [r for r in rows if r["flag"] == flag]
        print(f"{flag:20} wall {statistics.median(r['wall_s'] for r in mine):6.1f} s  cpu "
              f"{statistics.median(r['cpu_s'] for r in mine):6.1f} s  db {mine[-1]['db_bytes'] / 2**20:6.1f} MiB  "
              f"tokens {mine[-1]['tokens_table'] / max(mine[-1]['chunks'], 1) / 1024:5.1f} KiB/chunk  "
              f"chunks {mine[-1]['chunks_table'] / max(mine[-1]['chunks'], 1) / 1024:5.1f} KiB/chunk")
    print(machine())


def course_questions(corpus: Path) -> list[str]:
    return [json.loads(line)["course"] for line in (corpus / "ground_truth.jsonl").read_text().splitlines()
            if line.strip()]


def cmd_first_one(args) -> None:
    """In this fresh process: open the index, ask each question once, print the timings as JSON."""
    from citeline.library import Index

    questions = course_questions(Path(args.corpus))
    started = time.perf_counter()
    index = Index.open(args.db[0])
    opened = time.perf_counter() - started
    times = []
    call = index.search if args.what == "search" else index.ask
    # from a worker thread, as the service's endpoints run (bench/http_latency.py says why)
    with ThreadPoolExecutor(1) as worker:
        for q in questions:
            t = time.perf_counter()
            worker.submit(call, q).result()
            times.append((time.perf_counter() - t) * 1000)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"open_s": round(opened, 2), "ms": [round(t, 1) for t in times], "rss_mb": round(rss)}))


def cmd_first(args) -> None:
    print(machine())
    results: dict[tuple[str, str], list[dict]] = {}
    for r in range(args.rounds):
        for what in ("search", "ask"):
            for db in (args.db if r % 2 == 0 else args.db[::-1]):
                out = subprocess.run([sys.executable, __file__, "first-one", "--db", db, "--what", what,
                                      "--corpus", args.corpus], check=True, capture_output=True, text=True, cwd=ROOT)
                row = json.loads(out.stdout.strip().splitlines()[-1])
                results.setdefault((db, what), []).append(row)
                print(db, what, f"first {row['ms'][0]:.0f} ms, p50 {statistics.median(row['ms']):.1f} ms, "
                                f"rss {row['rss_mb']} MB", flush=True)
    print("| index | call | first query | p50 | p90 | peak RSS |")
    print("|---|---|---:|---:|---:|---:|")
    for (db, what), rows in results.items():
        ms = [t for row in rows for t in row["ms"]]
        firsts = [row["ms"][0] for row in rows]
        p90 = statistics.quantiles(ms, n=10)[-1]
        print(f"| {db} | {what} | {statistics.median(firsts):.0f} ms | {statistics.median(ms):.1f} ms | "
              f"{p90:.1f} ms | {max(row['rss_mb'] for row in rows)} MB |")
    print(machine())


def cmd_service(args) -> None:
    """``citeline api`` started fresh per round and index; the course questions POSTed to /ask once
    each, one keep-alive client, from the first request after /health says ready."""
    import http.client

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from http_latency import request, rss_mb, start_service

    print(machine())
    questions = course_questions(Path(args.corpus))
    results: dict[str, list[dict]] = {}
    for r in range(args.rounds):
        for db in (args.db if r % 2 == 0 else args.db[::-1]):
            started = time.perf_counter()
            proc, port = start_service(db)
            ready = time.perf_counter() - started
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                rss_ready = rss_mb(proc.pid)
                ms, inside = [], []
                for q in questions:
                    t = time.perf_counter()
                    inside.append(request(conn, "ask", q) * 1000)
                    ms.append((time.perf_counter() - t) * 1000)
                row = {"ready_s": round(ready, 1), "ms": ms, "service_ms": inside, "rss_ready_mb": rss_ready,
                       "rss_mb": rss_mb(proc.pid)}
            finally:
                proc.terminate()
                proc.wait(30)
            results.setdefault(db, []).append(row)
            print(db, f"ready {row['ready_s']} s, first {ms[0]:.0f} ms, p50 {statistics.median(ms):.1f} ms, "
                      f"rss {rss_ready} -> {row['rss_mb']} MB", flush=True)
    print("| index | first /ask | p50 | p90 | service's own p50 | RSS ready → after |")
    print("|---|---:|---:|---:|---:|---|")
    for db, rows in results.items():
        ms = [t for row in rows for t in row["ms"]]
        inside = [t for row in rows for t in row["service_ms"]]
        print(f"| {db} | {statistics.median(row['ms'][0] for row in rows):.0f} ms | {statistics.median(ms):.1f} ms | "
              f"{statistics.quantiles(ms, n=10)[-1]:.1f} ms | {statistics.median(inside):.1f} ms | "
              f"{max(row['rss_ready_mb'] for row in rows)} → {max(row['rss_mb'] for row in rows)} MB |")
    print(machine())


def second_pass(args) -> None:
    """The old way's extra cost: a copy of an index without token vectors filled by the second pass."""
    from citeline.index.store import Store
    from citeline.pipeline.embed import get_embedder
    from citeline.tasks.tokens import fill_token_vectors

    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "copy"
        shutil.copytree(args.db[0], db)
        store = Store(str(db))
        cpu, started = time.process_time(), time.perf_counter()
        added, _ = fill_token_vectors(store, store.stamp(), lambda: get_embedder(store.stamp().embed_model, "fp32"))
        print(f"second pass: {added} chunks, wall {time.perf_counter() - started:.1f} s, "
              f"cpu {time.process_time() - cpu:.1f} s (model load included)")
    print(machine())


def cmd_codec(args) -> None:
    import numpy as np

    from citeline.evaluation.dataset import load_corpus
    from citeline.evaluation.harness import EvalConfig, Harness, load_embedder
    from citeline.evaluation.metrics import mrr
    from citeline.evaluation.stats import paired
    from citeline.schemas.tokens import CODECS
    from citeline.query.rerank import TokenCache, rerank
    from citeline.query.search import Searcher

    print(machine())
    corpus = load_corpus(args.corpus)
    config = EvalConfig(strategies=("E",), retrievers=("rerank",), precision=args.precision)
    with tempfile.TemporaryDirectory() as root:
        harness = Harness(corpus, config, Path(root), load_embedder(config))
        harness.index("E")
        runs = {}
        for name in args.codecs:
            harness.token_codec = CODECS[name]
            runs[name] = harness.query("E")[0]
        a, b = args.codecs
        print(f"\nrerank (E, {config.precision}), {a} vs {b}, reciprocal rank paired per query (exact sign test):")
        print(f"| phrasing | queries | R@1 {a} → {b} | R@4 | R@20 | MRR {a} → {b} | RR wins/losses | p |")
        print("|---|---:|---|---|---|---|---|---:|")
        for phrasing in sorted({q.phrasing for q in runs[a].queries}):
            ra = [q.rank for q in runs[a].queries if q.phrasing == phrasing]
            rb = [q.rank for q in runs[b].queries if q.phrasing == phrasing]
            rr = lambda ranks: [1.0 / r if r else 0.0 for r in ranks]  # noqa: E731
            at = lambda ranks, k: sum(1 for r in ranks if r and r <= k)  # noqa: E731
            test = paired(rr(rb), rr(ra))
            print(f"| {phrasing} | {len(ra)} | {at(ra, 1)} → {at(rb, 1)} | {at(ra, 4)} → {at(rb, 4)} | "
                  f"{at(ra, 20)} → {at(rb, 20)} | {mrr(ra):.3f} → {mrr(rb):.3f} | +{test.wins}/−{test.losses} | "
                  f"{test.p:.2g} |")
        # The scores themselves: every query's reranked candidate list under each codec.
        searcher = Searcher.open(harness.uri("E"), harness.embedder)
        base = searcher.default_reranker()
        docs, queries = harness.embedder.passage_tokens, {}
        scorers = {n: TokenCache(base, queries, docs, codec=CODECS[n]) for n in ("float32", *args.codecs)}
        diffs, same_order, same_top8, lists = {n: 0.0 for n in scorers}, 0, 0, 0
        for q in [q.text for q in corpus.queries] + [q.query for q in corpus.out_of_domain]:
            pool = searcher.candidates(q, searcher.rerank_config)
            out = {n: rerank(q, pool, s, None, searcher.passages(pool, base)) for n, s in scorers.items()}
            score = {n: {h.chunk_id: h.rerank_score for h in hits} for n, hits in out.items()}
            for n in scorers:
                diffs[n] = max(diffs[n], max(abs(score[n][c] - score["float32"][c]) for c in score[n]))
            lists += 1
            same_order += [h.chunk_id for h in out[a]] == [h.chunk_id for h in out[b]]
            same_top8 += [h.chunk_id for h in out[a]][:8] == [h.chunk_id for h in out[b]][:8]
        print(f"\nrerank scores, largest |difference| to float32 over {lists} queries' candidate lists: "
              + ", ".join(f"{n} {d:.2e}" for n, d in diffs.items() if n != "float32"))
        print(f"reranked lists identical {a} vs {b}: whole list {same_order}/{lists}, top 8 {same_top8}/{lists}")
        _ = np  # numpy is what the scorers run on
    print(machine())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("index")
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--keep", help="leave the two indexes here (<KEEP>/with, <KEEP>/without)")
    p.add_argument("--smoke", action="store_true", help="bench/smokekit.py's tiny corpus on the fake embedder")
    p = sub.add_parser("first")
    p.add_argument("--db", action="append", required=True)
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    p.add_argument("--rounds", type=int, default=1)
    p = sub.add_parser("first-one")
    p.add_argument("--db", action="append", required=True)
    p.add_argument("--what", choices=("search", "ask"), required=True)
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    p = sub.add_parser("service")
    p.add_argument("--db", action="append", required=True)
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    p.add_argument("--rounds", type=int, default=1)
    p = sub.add_parser("second-pass")
    p.add_argument("--db", action="append", required=True)
    p = sub.add_parser("codec")
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    p.add_argument("--codecs", nargs=2, default=["float16", "int8"])
    p.add_argument("--precision", default="fp32")
    args = parser.parse_args()
    {"index": cmd_index, "first": cmd_first, "first-one": cmd_first_one, "service": cmd_service,
     "second-pass": second_pass, "codec": cmd_codec}[args.cmd](args)


if __name__ == "__main__":
    main()
