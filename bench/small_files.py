"""A first index of many tiny Markdown files: is the per-document cost flat as the table grows?

    .venv/bin/python bench/small_files.py [N] [PDFS]   # N files (default 2000), PDFS large PDFs (default 0)

Each file is one or two chunks of text. The fake embedder of the tests (a hashed bag of
words, tests/fixtures/fakes.py) stands in for the model, so what is measured is the fixed
cost per document — Prefect task runs, LanceDB commits, record upserts — not encoding.
Prints documents per minute over each tenth of the run (from the time each
``document.finished`` event was logged), the first tenth against the last as a ratio, the
write seconds per document (first and last tenth: does a write cost more as the table
grows?), the LanceDB versions of the chunks and documents tables, and the load average: on a shared
machine the ratio holds, absolute rates do not. Then the same folder is synced again, nothing
changed: the no-op re-sync's seconds, against the first index's (≤ 1 % and ≤ 5 s for
10,000 files), once in this process and once in a fresh one (as a scheduled ``citeline index``
runs), each as the whole call and as citeline's flow body (``run.started`` to ``run.finished``).

With PDFS > 0 the folder also holds that many text PDFs of 50 to 300 pages (the case
"10,000 small files + 50 large PDFs"), each a distinct document: its own cover page, then a
slice of one generated 300-page PDF (rendering text pages is slow; copying them is not).
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from citeline.runtime import env

env.apply()
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))

from fakes import FAKE, HashEmbedder  # noqa: E402

from citeline.flows.ingest import index_folder  # noqa: E402
from citeline.index.store import Store  # noqa: E402
from citeline.pipeline import embed  # noqa: E402
from citeline.schemas.settings import IndexSettings  # noqa: E402
from citeline.runtime.log import LOGGER, Events, configure  # noqa: E402

WORDS = ("dropout regularises networks by zeroing activations at random during training while the "
         "learning rate schedule warms up then decays and the optimiser keeps moments per weight").split()


class Finished(logging.Handler):
    """The time each document finished (indexed or failed)."""

    def __init__(self):
        super().__init__()
        self.times: list[float] = []
        self.writes: list[float] = []  # each indexed document's write seconds (its share of its batch's)
        self.runs: list[float] = []  # when each flow body started and finished

    def last_body_s(self) -> float:
        """Seconds of the last run's flow body, from its ``run.started`` to its ``run.finished``."""
        return self.runs[-1] - self.runs[-2]

    def emit(self, record):
        try:
            event = json.loads(record.getMessage())
        except ValueError:
            return
        if event.get("event") in (Events.RUN_STARTED, Events.RUN_FINISHED):
            self.runs.append(record.created)
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


def write_pdfs(folder: Path, count: int) -> int:
    """``count`` distinct text PDFs of 50 to 300 pages; the pages written."""
    import pymupdf
    from make import text_pdf

    base = pymupdf.open(stream=text_pdf(300), filetype="pdf")
    pages = 0
    for i in range(count):
        n = 50 + (250 * i) // max(count - 1, 1)
        doc = pymupdf.open()
        cover = doc.new_page()
        cover.insert_text((72, 144), f"Annual report {i}: volume {i * 7 + 3}", fontsize=18)
        start = (i * 37) % (300 - n + 1)
        doc.insert_pdf(base, from_page=start, to_page=start + n - 2)
        (folder / f"report-{i:03}.pdf").write_bytes(doc.tobytes(deflate=True))
        pages += doc.page_count
    return pages


def rates(times: list[float], start: float, parts: int = 10) -> list[float]:
    """Documents per minute over each of ``parts`` equal slices of the documents, in order."""
    size = max(len(times) // parts, 1)
    out, previous = [], start
    for k in range(0, len(times) - size + 1, size):
        end = times[k + size - 1]
        out.append(60 * size / max(end - previous, 1e-9))
        previous = end
    return out


def main(n: int, pdfs: int = 0) -> None:
    configure()
    handler = Finished()
    logging.getLogger(LOGGER).addHandler(handler)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, embed.registered(FAKE, lambda precision, batch_size: HashEmbedder()):
        folder = Path(tmp) / "docs"
        write_corpus(folder, n)
        pages = write_pdfs(folder, pdfs)
        settings = IndexSettings(db=f"{tmp}/index", model=FAKE)
        started, cpu = time.perf_counter(), time.process_time()
        wall_start = time.time()
        summary = index_folder(str(folder), settings)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        store = Store(settings.db)
        versions = {name: store.db.open_table(name).version for name in store.table_names()}
        started = time.perf_counter()
        again = index_folder(str(folder), settings)
        noop, noop_body = time.perf_counter() - started, handler.last_body_s()
        fresh, fresh_body, fresh_line = resync_in_fresh_process(folder, settings.db)
    times = sorted(handler.times)
    per_tenth = rates(times, times[0] if times else wall_start)
    print(f"machine     {os.cpu_count()} cpus ({cpu_model()}); load average {load:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end")
    print(f"folder      {n} notes + {pdfs} PDFs ({pages} pages)")
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
    print(f"no-op re-sync, same process  {noop:.1f} s ({again.skipped} skipped, {again.indexed} indexed): "
          f"{noop / wall:.4f} of the first index; flow body {noop_body:.2f} s ({noop_body / wall:.4f})")
    print(f"no-op re-sync, fresh process {fresh:.1f} s whole call ({fresh_line}): {fresh / wall:.4f} of the "
          f"first index; flow body {fresh_body:.2f} s ({fresh_body / wall:.4f})")


def resync_in_fresh_process(folder: Path, db: str) -> tuple[float, float, str]:
    """(whole call s, flow body s, summary) of a no-op sync in a new interpreter, as a scheduled run."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--resync", str(folder), db], check=True,
                         capture_output=True, text=True).stdout
    whole = time.perf_counter() - started
    body, line = out.strip().splitlines()[-1].split(" ", 1)
    return whole, float(body), line


def resync(folder: str, db: str) -> None:
    """The child of ``resync_in_fresh_process``: prints the flow body's seconds and the summary."""
    configure()
    handler = Finished()
    logging.getLogger(LOGGER).addHandler(handler)
    with embed.registered(FAKE, lambda precision, batch_size: HashEmbedder()):
        summary = index_folder(folder, IndexSettings(db=db, model=FAKE))
    print(f"{handler.last_body_s():.3f} {summary.skipped} skipped, {summary.indexed} indexed")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown cpu"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--resync"]:
        resync(*sys.argv[2:4])
    else:
        main(*(int(a) for a in sys.argv[1:3])) if len(sys.argv) > 1 else main(2000)
