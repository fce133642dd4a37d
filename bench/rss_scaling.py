"""Peak memory and time per chunk of a fresh index at 1x, 4x and 16x the dev corpus.

    .venv/bin/python bench/rss_scaling.py [CORPUS_DOCS] [--scales 1 4 16] [--work DIR] [--smoke]

``--smoke`` (tests/flows/test_bench_smoke.py): examples/docs at 2x on the tests' fake embedder, in a
temporary --work: runs, no figure.

Copy c of a document is named ``<stem>-c<c>.md`` and has one word changed in every
paragraph (the first word of five letters or more becomes a word picked by copy and
paragraph), so no two copies hash or chunk alike. Each scale is indexed in its own
fresh Python process, so ``ru_maxrss`` is that run's peak alone; the model is loaded
and warmed before the clock starts in every process alike. CPU seconds (user + system
of the indexing process) are printed beside wall seconds: on a shared machine wall time
per chunk moves with the neighbours' load, CPU time much less.
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DOCS = ROOT.parent / "shared" / "corpora" / "dev" / "docs"
WORDS = ("river", "garden", "window", "silver", "market", "winter", "planet", "forest", "bridge", "castle",
         "harbor", "meadow", "candle", "pocket", "ladder", "mirror", "violin", "rocket", "saddle", "tunnel")
LONG_WORD = re.compile(r"\b[A-Za-z]{5,}\b")


def vary(text: str, copy: int) -> str:
    """One word changed per paragraph, chosen by copy and paragraph so copies differ."""
    paragraphs = text.split("\n\n")
    return "\n\n".join(
        LONG_WORD.sub(WORDS[(copy * 7 + i) % len(WORDS)], p, count=1) if copy else p
        for i, p in enumerate(paragraphs))


def make_corpus(docs: Path, scale: int, out: Path) -> Path:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for source in sorted(docs.iterdir()):
        text = source.read_text(encoding="utf-8")
        for copy in range(scale):
            name = source.name if copy == 0 else f"{source.stem}-c{copy}{source.suffix}"
            (out / name).write_text(vary(text, copy), encoding="utf-8")
    return out


class Sampler(threading.Thread):
    """Resident memory every 0.2 s, and the time of every citeline event, so the peak can be
    placed in a phase (documents being prepared and written, or the run's final optimize)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float]] = []
        self.events: list[tuple[float, dict]] = []
        self.page_mb = os.sysconf("SC_PAGE_SIZE") / 2**20

    def run(self):
        while True:
            with open("/proc/self/statm") as statm:
                self.samples.append((time.time(), int(statm.read().split()[1]) * self.page_mb))
            time.sleep(0.2)

    def handler(self):
        import logging

        sampler = self

        class Events(logging.Handler):
            def emit(self, record):
                try:
                    sampler.events.append((record.created, json.loads(record.getMessage())))
                except ValueError:
                    pass

        return Events()

    def peak(self, start: float, end: float) -> float:
        return max((mb for t, mb in self.samples if start <= t <= end), default=0.0)

    def phases(self) -> dict:
        written = [t for t, e in self.events if e.get("event") == "document.indexed"]
        (finished_at, finished), = [(t, e) for t, e in self.events if e.get("event") == "run.finished"]
        finish_start = finished_at - finished["seconds"]["finish"]
        quarter = {f"after_{q}pct_docs": self.peak(0, written[max(0, len(written) * q // 100 - 1)])
                   for q in (25, 50, 100)}
        return {**quarter, "finish_phase": self.peak(finish_start, finished_at),
                "seconds": finished["seconds"]}


def child(folder: str, db: str, smoke: bool = False) -> None:
    """Index ``folder`` into a fresh ``db`` in this process and print one JSON line."""
    sys.path.insert(0, str(ROOT))
    from citeline.runtime import env, log

    env.apply()
    log.configure()  # as the entry points do, or the sampler's handler never sees the flow's events
    import logging

    from citeline.flows.ingest import index_folder
    from citeline.pipeline.embed import get_embedder
    from citeline.schemas.settings import IndexSettings
    from citeline.runtime.log import LOGGER

    sampler = Sampler()
    logging.getLogger(LOGGER).addHandler(sampler.handler())
    sampler.start()

    if smoke:
        sys.path.insert(0, str(ROOT / "bench"))
        import smokekit

        smokekit.register_fakes()  # for this process's life
    settings = IndexSettings(db=db, model="fake/hashed-bag-of-words") if smoke else IndexSettings(db=db)
    embedder = get_embedder(settings.model, settings.precision, settings.batch_size)
    embedder.embed_documents(["warm-up"])
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    before = resource.getrusage(resource.RUSAGE_SELF)
    encode_before = embedder.stats.encode_s
    started = time.perf_counter()
    summary = index_folder(folder, settings)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    print("RESULT " + json.dumps({
        "chunks": summary.chunks, "documents": summary.indexed, "failed": summary.failed, "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "encode_s": embedder.stats.encode_s - encode_before,
        "rss_loaded_mb": rss_loaded / 1024, "rss_peak_mb": after.ru_maxrss / 1024,
        "rss_peak_by_phase_mb": sampler.phases(),
    }), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", nargs="?", default=str(DEFAULT_DOCS))
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--work", default="/tmp/citeline-rss")
    parser.add_argument("--child", nargs=2, metavar=("FOLDER", "DB"), help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="examples/docs at 2x on the fake embedder")
    args = parser.parse_args()
    if args.child:
        child(*args.child, smoke=args.smoke)
        return
    if args.smoke:
        import tempfile

        args.docs, args.scales, args.work = str(ROOT / "examples" / "docs"), [2], tempfile.mkdtemp(prefix="rss-smoke-")
        atexit.register(shutil.rmtree, args.work, True)

    work = Path(args.work)
    print(f"machine: {os.cpu_count()} cpus, load average at start {os.getloadavg()}", flush=True)
    results = {}
    for scale in args.scales:
        folder = make_corpus(Path(args.docs), scale, work / f"x{scale}")
        db = work / f"x{scale}.index"
        shutil.rmtree(db, ignore_errors=True)
        load = os.getloadavg()[0]
        # Prefect gives its temporary server 20 s to start; on a loaded 2-core machine that
        # failed once (the run dies before indexing anything), so the child waits longer.
        child_env = {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120", **os.environ}
        proc = subprocess.run([sys.executable, __file__, "--child", str(folder), str(db), *["--smoke"][:args.smoke]],
                              cwd=ROOT, capture_output=True, text=True, env=child_env)
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if proc.returncode or line is None:
            print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
            raise SystemExit(f"scale {scale}: the indexing process failed (exit {proc.returncode})")
        r = results[scale] = json.loads(line[len("RESULT "):])
        r["load"] = (load, os.getloadavg()[0])
        base = results[min(results)]
        per = lambda d, key: d[key] / d["chunks"] * 1000  # noqa: E731 - ms per chunk
        print(f"{scale:>3}x  {r['documents']:>4} docs {r['chunks']:>6} chunks  "
              f"peak RSS {r['rss_peak_mb']:7.1f} MB (model loaded: {r['rss_loaded_mb']:6.1f}; "
              f"x{r['rss_peak_mb'] / base['rss_peak_mb']:.3f} of {min(results)}x)  "
              f"wall {per(r, 'wall_s'):6.1f} ms/chunk (x{per(r, 'wall_s') / per(base, 'wall_s'):.3f})  "
              f"cpu {per(r, 'cpu_s'):6.1f} ms/chunk (x{per(r, 'cpu_s') / per(base, 'cpu_s'):.3f})  "
              f"encode {per(r, 'encode_s'):6.1f} ms/chunk  "
              f"non-encode {per(r, 'wall_s') - per(r, 'encode_s'):5.1f} ms/chunk  "
              f"load {r['load'][0]:.2f}->{r['load'][1]:.2f}", flush=True)
        print(f"      peak RSS by phase (MB, sampled every 0.2 s): {r['rss_peak_by_phase_mb']}", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
