"""Encoder backends on the dev chunks: speed against fp32, agreement with fp32, dev R@20.

    .venv/bin/python bench/encoder_backends.py [CORPUS] [--sweep 4 8 16 32 64] [--sweep-texts 256] [--smoke]

``--smoke`` (tests/flows/test_bench_smoke.py, marked model: its subject is the real backends): the tiny
corpus of bench/smokekit.py, its first 16 chunks, 8 texts timed, sweep 4 and 16: runs, no figure.

For fp32, bf16 autocast and the int8 ONNX export (``minilm-int8``), every dev chunk
(strategy E, as indexed) is embedded with the pipeline's own path
(``embed_documents``: word-piece sorted batches of the default size). Quality: the mean
(and minimum) cosine of each chunk's vector to its fp32 vector, and dense R@20 over the
ground-truth queries (both phrasings) with the exact sign test paired against fp32
(``evaluation.stats.paired``). Speed: ``--speed-texts`` chunks spread over the corpus,
each backend timed in two rounds (fp32, int8, bf16, then the reverse), so load drift
during the run weighs on every backend alike; the ratio is fp32's mean time over the
backend's.

bf16 speed only means something on a CPU with native bf16 (avx512_bf16 / AMX); elsewhere
torch emulates it and it is slower than fp32 (the run says which case it is). Its quality
figures hold everywhere.

The batch-size sweep times the default backend on ``--sweep-texts`` chunks spread over
the corpus, in two rounds (sizes ascending, then descending) to spread load drift.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from citeline.runtime import env

env.apply()

from citeline.evaluation.dataset import load_corpus  # noqa: E402
from citeline.evaluation.metrics import first_relevant_rank, hits_at, recall_at  # noqa: E402
from citeline.evaluation.stats import paired  # noqa: E402
from citeline.pipeline.chunk import chunk_document  # noqa: E402
from citeline.pipeline.embed import resolve_model  # noqa: E402
from citeline.pipeline.embed_st import cpu_has_bf16  # noqa: E402
from citeline.pipeline.prepare import doc_id_for, extract_bytes  # noqa: E402
from citeline.pipeline.walk import list_files  # noqa: E402
from citeline.schemas.options import ExtractOptions  # noqa: E402
from citeline.schemas.settings import IndexSettings  # noqa: E402

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev"
K = 20


def dev_chunks(docs: Path, settings: IndexSettings) -> list:
    chunks = []
    for f in list_files(docs):
        canonical = extract_bytes(Path(f.source).read_bytes(), Path(f.path).name, ExtractOptions())
        chunks += chunk_document(canonical.text, canonical.title, doc_id_for(f.source), settings.strategy,
                                 settings.budget, settings.overlap)
    return chunks


def spread(texts: list[str], n: int) -> list[str]:
    """``n`` texts taken evenly over the corpus (every document, every length)."""
    return texts[::max(1, len(texts) // n)][:n]


def timed(fn, *args):
    started = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - started, result


def ranks(embedder, vectors: np.ndarray, contents: list[str], queries) -> list[int | None]:
    found = []
    for q in queries:
        order = np.argsort(-(vectors @ embedder.embed_query(q.text)))[:K]
        found.append(first_relevant_rank([contents[i] for i in order], q.needle, depth=K))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(DEFAULT_CORPUS))
    parser.add_argument("--sweep", type=int, nargs="*", default=[4, 8, 16, 32, 64])
    parser.add_argument("--sweep-texts", type=int, default=128)
    parser.add_argument("--speed-texts", type=int, default=128)
    parser.add_argument("--limit", type=int, default=None, help="only the first N chunks (a smoke test)")
    parser.add_argument("--smoke", action="store_true", help="a tiny corpus, 16 chunks, 8 texts timed")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        args.corpus, args.limit, args.speed_texts, args.sweep_texts, args.sweep = smokekit.tiny_corpus(), 16, 8, 8, [4, 16]

    settings = IndexSettings()
    corpus = load_corpus(args.corpus)
    chunks = dev_chunks(corpus.docs_dir, settings)[:args.limit]
    texts = [c.text for c in chunks]
    contents = [c.content for c in chunks]
    queries = corpus.queries
    load = [os.getloadavg()[0]]
    native = cpu_has_bf16()
    print(f"corpus        {args.corpus}: {len(texts)} chunks (strategy {settings.strategy}), {len(queries)} queries")
    print(f"machine       {os.cpu_count()} cpus; native bf16: {'yes' if native else 'NO (bf16 is emulated here)'}")

    backends = {
        "fp32": resolve_model(settings.model).load("fp32", settings.batch_size),
        "bf16": resolve_model(settings.model).load("bf16", settings.batch_size),
        "int8": resolve_model("minilm-int8").load("int8", settings.batch_size),
    }
    for embedder in backends.values():
        embedder.embed_documents(["warm-up", "a second, longer warm-up text"])

    vectors = {}
    for name, embedder in backends.items():
        full_s, vectors[name] = timed(embedder.embed_documents, texts)
        print(f"  all chunks with {name}: {full_s:7.2f} s", flush=True)
    reference = vectors["fp32"]
    sample = spread(texts, args.speed_texts)
    rounds: dict[str, list[float]] = {name: [] for name in backends}
    for order in (list(backends), list(reversed(backends))):
        for name in order:
            rounds[name].append(timed(backends[name].embed_documents, sample)[0])
    seconds = {name: sum(r) / len(r) for name, r in rounds.items()}
    base_s = seconds["fp32"]
    load.append(os.getloadavg()[0])

    found = {name: ranks(backends[name], vectors[name], contents, queries) for name in backends}
    base_hits = hits_at(found["fp32"], K)
    print(f"\n{'backend':<8} {'s/1k chunks':>11} {'speed vs fp32':>14} {'mean cos':>10} {'min cos':>9} "
          f"{'R@20':>6}  paired vs fp32 (wins/losses, sign-test p)")
    for name, embedder in backends.items():
        s = seconds[name]
        cos = (vectors[name] * reference).sum(axis=1)
        pair = paired(hits_at(found[name], K), base_hits)
        note = " (emulated: speed not meaningful here)" if name == "bf16" and not native else ""
        print(f"{name:<8} {1000 * s / len(sample):11.1f} {base_s / s:13.2f}x {cos.mean():10.6f} {cos.min():9.6f} "
              f"{recall_at(found[name], K):6.3f}  +{pair.wins}/-{pair.losses}, p={pair.p:.3f}{note}")
    print("speed rounds (s): " + "; ".join(f"{n} {', '.join(f'{r:.2f}' for r in rs)}" for n, rs in rounds.items()))

    if args.sweep:
        default = "bf16" if native else "fp32"
        sample = spread(texts, args.sweep_texts)
        runs: dict[int, list[float]] = {b: [] for b in args.sweep}
        for order in (sorted(args.sweep), sorted(args.sweep, reverse=True)):
            for size in order:
                embedder = resolve_model(settings.model).load(default, size)
                embedder.__dict__["model"] = backends[default].model  # same weights, no reload
                runs[size].append(timed(embedder.embed_documents, sample)[0])
        ref = sum(runs[settings.batch_size]) / 2 if settings.batch_size in runs else None
        print(f"\nbatch-size sweep, {default}, {len(sample)} chunks, two rounds (ascending, descending):")
        for size in args.sweep:
            mean = sum(runs[size]) / len(runs[size])
            vs = f"  {ref / mean:5.2f}x the speed of batch {settings.batch_size}" if ref else ""
            print(f"  batch {size:>3}: {len(sample) / mean:6.1f} chunks/s  "
                  f"(rounds {', '.join(f'{r:.2f}' for r in runs[size])} s){vs}")
    load.append(os.getloadavg()[0])
    print(f"\nload average (1 min) at start, after encoding, at end: {', '.join(f'{x:.2f}' for x in load)}")


if __name__ == "__main__":
    main()
