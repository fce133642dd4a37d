"""Dense and hybrid search at 100k-1M chunks: the HNSW index citeline builds vs exact search, in one run.

The dev corpus is indexed (strategy E, ~1k chunks), then grown to --rows synthetic
chunks: each is a mix of two real chunk vectors plus a little noise (so the space
keeps the corpus's clusters) carrying one source chunk's text. The table is written
and finished through ``Store`` like any index, so the vector index is the one a real
run builds automatically (``Store.ann_min_rows``). Queries are the real dev questions
(64 in-domain + 30 out-of-domain) embedded by the real model.

Reported, medians over all queries, with the exact numpy scan as the baseline:
- exact: numpy dot product over every vector + top-k (the recall reference);
- LanceDB flat search (the vector index bypassed);
- ``ChunkReader.dense`` over the HNSW index at several refine factors and ``ef`` sizes: latency and
  recall@10 against exact;
- BM25 and hybrid end to end (``Searcher``, query embedding included).

With ``--rerank`` each synthetic chunk also gets the stored word-piece vectors of the chunk
whose text it carries (int8, as ``citeline index`` stores them), and the default retriever is
measured too: MaxSim over the candidates, from a fresh ``Searcher`` (its first question included,
as right after a start), before and after a BTREE index on the token table's ``chunk_id``.

With ``--service`` the grown index is also served by ``citeline api`` in its own process:
``GET /search`` latency (dense and hybrid, over HTTP, embedding included; with ``--rerank`` the
default retriever and ``POST /ask`` too) and the
service's resident memory (VmRSS after the queries, VmHWM its peak) are reported.
``--keep DIR`` keeps the grown index (its size on disk is reported either way); run again
with the same ``--db`` and ``--keep``, the kept index is measured again without being
rewritten (its synthetic vectors are regenerated from the same seed for the exact baseline).
``--smoke`` (tests/flows/test_bench_smoke.py): corpora/cargo-reference on the fake
embedder grown to 3,000 rows, the vector index built from 1,000: plumbing, no figure.

    .venv/bin/python bench/ann_scaling.py [--rows 100000] [--db DEV_INDEX] [--threads 1]
        [--rerank] [--service] [--keep DIR] [--smoke]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citeline.runtime import env  # noqa: E402

env.apply()

import numpy as np  # noqa: E402

from citeline.index.store import Store, chunk_table  # noqa: E402
from citeline.pipeline.embed import get_embedder  # noqa: E402
from citeline.query.search import Searcher  # noqa: E402

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from query_latency import DEFAULT_CORPUS, build_index, load_queries  # noqa: E402

ROOT = BENCH.parent
SMOKE_CORPUS = ROOT / "corpora" / "cargo-reference"
FAKE_CLI = ROOT / "tests" / "fixtures" / "fake_cli.py"

K = 10
PER_DOC = 5_000  # rows per synthetic document (one commit each)
REFINES = [None, 2, 5, 10]  # at the default ef
EFS = [400, 800, 1600, 3200]  # at the default refine factor


def synthetic_rows(source: list[dict], n: int, seed: int = 0):
    """``n`` rows as documents of PER_DOC rows, vectors mixed from two source chunks."""
    rng = np.random.default_rng(seed)
    vectors = np.asarray([r["vector"] for r in source], dtype=np.float32)
    for doc_start in range(0, n, PER_DOC):
        size = min(PER_DOC, n - doc_start)
        i, j = rng.integers(0, len(source), size), rng.integers(0, len(source), size)
        w = rng.uniform(0.6, 1.0, (size, 1))
        mixed = w * vectors[i] + (1 - w) * vectors[j] + rng.normal(0, 0.02, (size, vectors.shape[1]))
        mixed = (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)
        doc = f"synthetic-{doc_start // PER_DOC:03d}"
        rows = []
        for offset, (src, vec) in enumerate(zip(i, mixed)):
            row = dict(source[src])
            row.update(chunk_id=f"{doc}-{offset}", doc_id=doc, path=f"{doc}.md", ordinal=offset, vector=vec.tolist())
            rows.append(row)
        yield doc, rows, mixed, [source[s]["chunk_id"] for s in i]


def first_and_median_ms(fn, inputs) -> tuple[float, float]:
    """The first call's milliseconds (nothing warmed) and the median over all of them."""
    times = []
    for x in inputs:
        started = time.perf_counter()
        fn(x)
        times.append((time.perf_counter() - started) * 1000)
    return times[0], statistics.median(times)


def grow_tokens(dev: Store, big: Store, stamp, parts, seed: int = 0) -> None:
    """Each synthetic chunk's stored word-piece vectors: those of the chunk whose text it carries,
    each int8 value moved by -2..2.

    Copied byte for byte, a grown table is a thousand copies of the same thousand chunks: Lance
    compresses its pages several times over and decompresses a whole page to read one chunk,
    which made a reranked question at 1M chunks take seconds and gigabytes that a real table
    (unique vectors, ~0.92 of their raw size on disk) never costs (docs/benchmarks.md, section 28).
    """
    import numpy as np
    import pyarrow as pa

    from citeline.index.tokens import TokenVectors
    from citeline.schemas.tables import TOKENS_SCHEMA

    stored = {r["chunk_id"]: r for r in TokenVectors(dev, stamp)._table().search().limit(None).to_list()}
    values = {cid: np.frombuffer(r["vectors"], dtype=np.int8).astype(np.int16) for cid, r in stored.items()}
    rng = np.random.default_rng(seed)
    table = TokenVectors(big, stamp)._table()
    for doc, sources in parts:
        rows = [{**stored[src], "chunk_id": f"{doc}-{i}",
                 "vectors": np.clip(values[src] + rng.integers(-2, 3, values[src].size, dtype=np.int16),
                                    -127, 127).astype(np.int8).tobytes()}
                for i, src in enumerate(sources)]
        table.add(pa.Table.from_pylist(rows, schema=TOKENS_SCHEMA))


def median_ms(fn, inputs) -> tuple[float, list]:
    fn(inputs[0])  # warm-up
    times, outs = [], []
    for x in inputs:
        started = time.perf_counter()
        outs.append(fn(x))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), outs


def disk_bytes(folder: str) -> int:
    return sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, in bytes (Linux)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields


def service_figures(db: str, questions: list[str], smoke: bool, rerank: bool = False) -> dict:
    """``citeline api`` on the grown index in its own process: /search latency and memory."""
    port = free_port()
    command = [sys.executable, str(FAKE_CLI)] if smoke else [sys.executable, "-m", "citeline"]
    server = subprocess.Popen([*command, "api", "--db", db, "--port", str(port), "--quiet"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                if json.loads(urllib.request.urlopen(f"{base}/health", timeout=5).read()).get("ready"):
                    break  # the index open, the model and indexes loaded
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"citeline api did not start: {server.stderr.read().decode()[-2000:]}")
            time.sleep(0.5)
        figures = {"after start": proc_memory(server.pid)}
        for retriever in (*(("rerank",) if rerank else ()), "dense", "hybrid"):
            def call(q, retriever=retriever):
                query = urllib.parse.urlencode({"q": q, "k": K, "retriever": retriever})
                return json.loads(urllib.request.urlopen(f"{base}/search?{query}", timeout=120).read())
            # the first question right after start included: a service warms up before it answers
            figures[f"{retriever} first"], figures[retriever] = first_and_median_ms(call, questions)
        if rerank and not smoke:  # the gated answer's sources, as the ask page asks for them (the fake
            # embedder's smoke index has no calibrated gate: /ask refuses to answer there)
            def ask(q):
                body = json.dumps({"query": q, "k": K}).encode()
                request = urllib.request.Request(f"{base}/ask", data=body, headers={"Content-Type": "application/json"})
                try:
                    return json.loads(urllib.request.urlopen(request, timeout=120).read())
                except urllib.error.HTTPError as exc:
                    raise RuntimeError(f"POST /ask answered {exc.code}: {exc.read()[:500]!r}") from None
            figures["ask first"], figures["ask"] = first_and_median_ms(ask, questions)
        figures["after queries"] = proc_memory(server.pid)
        return figures
    finally:
        server.terminate()
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--db", help="an existing dev-corpus index (default: build one)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (as bench/query_latency.py)")
    parser.add_argument("--rerank", action="store_true", help="also store word-piece vectors and measure MaxSim")
    parser.add_argument("--service", action="store_true", help="also serve the grown index with citeline api")
    parser.add_argument("--keep", help="keep the grown index in this folder (default: a temporary one)")
    parser.add_argument("--smoke", action="store_true", help="cargo-reference on the fake embedder, 3,000 rows")
    args = parser.parse_args()
    ann_min_rows = None
    if args.smoke:
        sys.path.insert(0, str(FAKE_CLI.parent))
        import fake_cli  # noqa: F401  registers the fake embedder under its name

        args.corpus, args.rows, args.threads, ann_min_rows = SMOKE_CORPUS, 3_000, 0, 1_000
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        dev = args.db or f"{tmp}/dev"
        if not args.db:
            if args.smoke:
                from citeline.flows.ingest import index_folder
                from citeline.schemas.settings import IndexSettings
                from fakes import FAKE

                index_folder(str(args.corpus / "docs"), IndexSettings(db=dev, model=FAKE))
            else:
                build_index(args.corpus / "docs", dev)
        stamp = Store(dev).stamp()
        source = Store(dev).chunk_rows()
        embedder = get_embedder(stamp.embed_model)
        in_domain, ood = load_queries(args.corpus)
        questions = [q for q, _ in in_domain] + ood
        queries = [embedder.embed_query(q) for q in questions]

        big = args.keep or f"{tmp}/big"
        store = Store(big) if ann_min_rows is None else Store(big, ann_min_rows=ann_min_rows)
        kept = args.keep and Path(args.keep).exists() and store.stamp() is not None \
            and store.chunks(stamp).count_rows() == args.rows
        started = time.perf_counter()
        parts = []
        grown = []
        for doc, rows, vectors, sources in synthetic_rows(source, args.rows):
            if not kept:
                store.replace_chunks(stamp, doc, chunk_table(rows, stamp))
                # its record, as a sync writes one: a citation reads its source there (once per
                # document and snapshot), and without one every question looked it up again
                store.upsert_document({"doc_id": doc, "source": f"/synthetic/{doc}.md", "root": "/synthetic",
                                       "path": f"{doc}.md", "status": "indexed", "attempts": 1,
                                       "chunk_count": len(rows), "truncated": 0})
            parts.append((doc, vectors))
            grown.append((doc, sources))
        if args.rerank and not kept:
            grow_tokens(Store(dev), store, stamp, grown)
        write_s = time.perf_counter() - started
        started = time.perf_counter()
        if not kept:
            store.finish_run(stamp)  # builds the full-text and, past ann_min_rows, the HNSW index
        finish_s = time.perf_counter() - started

        matrix = np.concatenate([v for _, v in parts])
        ids = [f"{doc}-{i}" for doc, v in parts for i in range(len(v))]

        def exact(q):
            scores = matrix @ q
            top = np.argpartition(-scores, K)[:K]
            return {ids[t] for t in top[np.argsort(-scores[top])]}

        base, truth = median_ms(exact, queries)
        table = store.chunks(stamp)

        def flat(q):
            return (table.search(q).distance_type("cosine").bypass_vector_index().limit(K)
                    .select(["chunk_id", "_distance"]).to_list())

        flat_ms, _ = median_ms(flat, queries)
        searcher = Searcher(store, embedder, stamp)
        reader = searcher.reader
        results = []
        default_ef, default_refine = reader.ef, reader.refine
        settings = [(default_ef, refine) for refine in REFINES] + \
            [(ef, default_refine) for ef in EFS if ef != default_ef]
        for ef, refine in settings:
            reader.ef, reader.refine = ef, refine
            took, found = median_ms(lambda q: reader.dense(q, K), queries)
            recall = statistics.mean(len({r["chunk_id"] for r in f} & t) / K for f, t in zip(found, truth))
            results.append((ef, refine, took, recall))
        reader.ef, reader.refine = default_ef, default_refine
        bm25_ms, _ = median_ms(lambda q: searcher.bm25(q, K), questions)

        def hybrid(q):
            searcher._last_query = None  # pay for the query embedding each time
            return searcher.hybrid(q, K)

        hybrid_ms, _ = median_ms(hybrid, questions)
        embed_ms, _ = median_ms(embedder.embed_query, questions)
        reranked = {}
        if args.rerank:
            from citeline.index.tokens import TokenVectors

            tokens = TokenVectors(store, stamp)._table()
            indexed = any("chunk_id" in i.columns for i in tokens.list_indices())
            for label in (() if indexed else ("no index on chunk_id",)) + ("BTREE on chunk_id",):
                if not indexed and label.startswith("BTREE"):
                    tokens.create_scalar_index("chunk_id", index_type="BTREE")
                fresh = Searcher(Store(big), embedder, stamp)  # nothing cached: as right after a start
                reranked[label] = first_and_median_ms(lambda q: fresh.search(q, "rerank", K), questions)
        size = disk_bytes(big)
        service = service_figures(big, questions, args.smoke, args.rerank) if args.service else None

    built = "kept from an earlier run" if kept else f"write {write_s:.0f} s, finish (FTS + HNSW) {finish_s:.0f} s"
    print(f"\nANN  {args.rows:,} synthetic chunks x {matrix.shape[1]}-d, {len(queries)} queries of "
          f"{args.corpus.name}, k={K}; vector index built automatically: {not reader.exact}; {built}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"  {'exact numpy scan (baseline, recall reference)':<48} {base:8.2f} ms   x{1:6.2f}")
    print(f"  {'LanceDB flat search (index bypassed)':<48} {flat_ms:8.2f} ms   x{flat_ms / base:6.2f}")
    for ef, refine, took, recall in results:
        label = f"HNSW (ChunkReader.dense), ef {ef}, refine {refine}"
        print(f"  {label:<48} {took:8.2f} ms   x{took / base:6.2f}   recall@{K} {recall:.3f}")
    print(f"  {'query embedding':<48} {embed_ms:8.2f} ms")
    print(f"  {'bm25 (Searcher.bm25)':<48} {bm25_ms:8.2f} ms")
    print(f"  {'hybrid (Searcher.hybrid, incl. embedding)':<48} {hybrid_ms:8.2f} ms")
    for label, (first, median) in reranked.items():
        print(f"  {'rerank (Searcher.search), ' + label:<48} {median:8.2f} ms   first question {first:,.1f} ms")
    print(f"  index on disk: {size / 2**20:,.0f} MiB ({size / args.rows:,.0f} bytes a chunk)")
    if service:
        mib = {k: {f: v / 2**20 for f, v in m.items()} for k, m in service.items() if isinstance(m, dict)}
        also = (f", rerank {service['rerank']:.2f} ms (its first question, the service's first: "
                f"{service['rerank first']:.1f} ms)" if "rerank" in service else "")
        if "ask" in service:
            also += f", POST /ask {service['ask']:.2f} ms (its first {service['ask first']:.1f} ms)"
        print(f"  citeline api GET /search over HTTP: dense {service['dense']:.2f} ms, hybrid {service['hybrid']:.2f} ms{also} "
              f"(medians); RSS after start {mib['after start']['VmRSS']:,.0f} MiB, after the queries "
              f"{mib['after queries']['VmRSS']:,.0f} MiB, peak {mib['after queries']['VmHWM']:,.0f} MiB")


if __name__ == "__main__":
    main()
