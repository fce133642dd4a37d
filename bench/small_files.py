"""A first index of many tiny Markdown files: is the per-document cost flat as the table grows?

    .venv/bin/python bench/small_files.py [N]          # N files, default 2000

Each file is one or two chunks of text. The fake embedder of the tests (a hashed bag of
words, tests/fixtures/fakes.py) stands in for the model, so what is measured is the fixed
cost per document — Prefect task runs, LanceDB commits, record upserts — not encoding.
Prints documents per minute over each tenth of the run (from the time each
``document.finished`` event was logged), the first tenth against the last as a ratio, the
write seconds per document (first and last tenth: does a write cost more as the table
grows?), the LanceDB versions of the chunks and documents tables, and the load average: on a shared
machine the ratio holds, absolute rates do not. Then the same folder is synced again, nothing
changed: the no-op re-sync's seconds, against the first index's (issue 15: ≤ 1 % and ≤ 5 s for
10,000 files).
"""
from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from citeline.tasks import env

env.apply()
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))

from fakes import FAKE, HashEmbedder  # noqa: E402

from citeline.flows.ingest import index_folder  # noqa: E402
from citeline.index.store import Store  # noqa: E402
from citeline.pipeline import embed  # noqa: E402
from citeline.schemas.settings import IndexSettings  # noqa: E402
from citeline.tasks.log import LOGGER, configure  # noqa: E402

WORDS = ("dropout regularises networks by zeroing activations at random during training while the "
         "learning rate schedule warms up then decays and the optimiser keeps moments per weight").split()


class Finished(logging.Handler):
    """The time each document finished (indexed or failed)."""

    def __init__(self):
        super().__init__()
        self.times: list[float] = []
        self.writes: list[float] = []  # each indexed document's write seconds (its share of its batch's)

    def emit(self, record):
        try:
            event = json.loads(record.getMessage())
        except ValueError:
            return
        if event.get("event") == "document.indexed":
            self.writes.append(event["seconds"]["write"])
        if event.get("event") == "document.finished":
            self.times.append(record.created)
            if len(self.times) % 100 == 0:  # progress, for a run watched or cut short
                print(f"{len(self.times)} documents at {time.strftime('%H:%M:%S')}", file=sys.stderr, flush=True)


def write_corpus(folder: Path, n: int) -> None:
    """``n`` notes of 40-160 words: one or two chunks each, all different."""
    folder.mkdir()
    for i in range(n):
        words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(40 + (i % 4) * 40)]
        (folder / f"note-{i:05}.md").write_text(f"# Note {i}\n\n{' '.join(words)} {i}.\n")


def rates(times: list[float], start: float, parts: int = 10) -> list[float]:
    """Documents per minute over each of ``parts`` equal slices of the documents, in order."""
    size = max(len(times) // parts, 1)
    out, previous = [], start
    for k in range(0, len(times) - size + 1, size):
        end = times[k + size - 1]
        out.append(60 * size / max(end - previous, 1e-9))
        previous = end
    return out


def main(n: int) -> None:
    configure()
    handler = Finished()
    logging.getLogger(LOGGER).addHandler(handler)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, embed.registered(FAKE, lambda precision, batch_size: HashEmbedder()):
        folder = Path(tmp) / "docs"
        write_corpus(folder, n)
        settings = IndexSettings(db=f"{tmp}/index", model=FAKE)
        started, cpu = time.perf_counter(), time.process_time()
        wall_start = time.time()
        summary = index_folder(str(folder), settings)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        store = Store(settings.db)
        versions = {name: store.db.open_table(name).version for name in store.table_names()}
        started = time.perf_counter()
        again = index_folder(str(folder), settings)
        noop = time.perf_counter() - started
    times = sorted(handler.times)
    per_tenth = rates(times, times[0] if times else wall_start)
    print(f"machine     {os.cpu_count()} cpus ({cpu_model()}); load average {load:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end")
    print(f"documents   {summary.indexed} indexed, {summary.failed} failed, {summary.chunks} chunks")
    print(f"run         {wall:.1f} s wall, {cpu:.1f} s cpu, {60 * summary.indexed / wall:.0f} docs/min overall")
    print("docs/min per tenth of the documents: " + " ".join(f"{r:.0f}" for r in per_tenth))
    if per_tenth:
        print(f"last tenth / first tenth: {per_tenth[-1] / per_tenth[0]:.2f}")
    tenth = max(len(handler.writes) // 10, 1)
    first, last = handler.writes[:tenth], handler.writes[-tenth:]
    if first:
        print(f"write ms per document: first tenth {1000 * sum(first) / len(first):.1f}, "
              f"last tenth {1000 * sum(last) / len(last):.1f}")
    print("table versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    print(f"no-op re-sync {noop:.1f} s ({again.skipped} skipped, {again.indexed} indexed): "
          f"{noop / wall:.4f} of the first index")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown cpu"


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
