"""What renaming a synced folder costs against its first index.

    .venv/bin/python bench/rename_costs.py [FILES]           # default 2,000 Markdown notes
    .venv/bin/python bench/rename_costs.py FILES --real      # the first index encodes with the real model
    .venv/bin/python bench/rename_costs.py --smoke           # 20 notes: runs, no figure asserted

FILES notes (one or two chunks each) are indexed with the tests' fake embedder (encoding costs
microseconds, so what is measured is citeline's and Prefect's own work) or, with ``--real``, with
the default model (all-MiniLM-L6-v2, as ``citeline index`` runs: the first index the issue's
ratios were taken against, encoding and calibration included); then, each step in a fresh
process as cron would run ``citeline index``: a no-op re-sync, every file renamed (half of them
moved into a new subfolder) and synced, a no-op re-sync again, and last a no-op re-sync run as a
flow run (``citeline index --always-run``: the fixed cost of any sync that writes, which a rename
is). Logs and Prefect settings are set up as the CLI sets them (per-document lines not printed),
and the process ends as the CLI's does (``gc.freeze()``). Each step prints the seconds of its
sync (``tasks.folder_plan.unchanged``, which answers a sync that would write nothing without
Prefect as the CLI does, plus, when it does not, the ``index_folder`` call) and of its whole
process (start to exit, timed by the parent), its summary, and its share of the first index;
``check_index`` is ``[]`` after the last, checked in a process of its own, untimed.
"""
from __future__ import annotations

import gc
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("the report board region revenue harbour column meeting budget contractor inspection interval "
         "warranty delivery committee project archive pump bridge tender audit ledger survey").split()


def write_notes(folder: Path, files: int) -> None:
    folder.mkdir(parents=True)
    rng = random.Random(2)
    for i in range(files):
        body = " ".join(rng.choice(WORDS) for _ in range(40 + (i % 4) * 40))
        (folder / f"note-{i:05}.md").write_text(f"# Note {i}\n\n{body.capitalize()}.\n")


def step(mode: str, base: Path, files: int, real: bool = False, documents_s: float = 0.0) -> None:
    """One step in this process: ``first`` (index the notes), ``sync``, ``rename``, ``flowrun`` (a sync
    as a flow run, however little it has to do); or, untimed,
    ``encoder`` (the bare encoder on the index's chunks, against the first index's documents
    phase ``documents_s``) or ``check`` (the index's consistency). ``real``: the default model
    instead of the fake embedder."""
    if mode == "encoder":
        return bare_encoder(str(base / "index"), documents_s, files)
    if mode == "check":
        from citeline.index.check import check_index
        from citeline.index.store import Store

        assert check_index(Store(str(base / "index"))) == []
        return
    from citeline.cli import progress
    from citeline.runtime import env, log

    env.apply()
    sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
    from fakes import FAKE, HashEmbedder

    from citeline.pipeline import embed
    from citeline.schemas.settings import DEFAULT_MODEL, IndexSettings
    from citeline.flows.sync_plan import unchanged

    log.configure()
    progress.configure_terminal(progress.DEFAULT)
    folder = base / "notes"
    if mode == "rename":
        (folder / "moved").mkdir()
        for i, name in enumerate(sorted(p.name for p in folder.glob("note-*.md"))):
            (folder / name).rename((folder / "moved" if i % 2 else folder) / name.replace("note-", "renamed-"))
    settings = IndexSettings(db=str(base / "index"), model=DEFAULT_MODEL if real else FAKE)
    finished = {}
    with embed.registered(FAKE, lambda precision, batch_size: HashEmbedder()):  # FAKE unused if real
        called = time.perf_counter()
        # as `citeline index` does: a sync that would write nothing is answered before Prefect
        summary = None if mode == "flowrun" else unchanged(str(folder), settings)
        flow_s = time.perf_counter() - called
        if summary is None:
            summary, seconds = run_flow(folder, settings, finished)
            flow_s += seconds
    parts = ", ".join(f"{k} {v:.2f} s" for k, v in finished.items()) or "no flow run"
    print(f"RESULT {mode} {flow_s:.2f} {finished.get('documents', 0):.3f} {summary.line()} [{parts}]", flush=True)
    gc.freeze()  # as citeline/cli/main.py's main() ends


def run_flow(folder: Path, settings, finished: dict):
    """The index flow, with the Prefect settings `citeline index` runs it with: its summary and the
    seconds of the ``index_folder`` call (imports not counted); ``finished`` gets the run's own
    breakdown (plan, documents, finish)."""
    from citeline.flows.ingest import index_folder
    from citeline.flows.runners import command_run
    from citeline.runtime import log

    class Finished(logging.Handler):
        def emit(self, record):
            event = log.event_of(record) or {}
            if event.get("event") == log.Events.RUN_FINISHED:
                finished.update(event.get("seconds") or {})

    logging.getLogger(log.LOGGER).addHandler(Finished())
    with command_run():
        called = time.perf_counter()
        summary = index_folder(str(folder), settings)
        return summary, time.perf_counter() - called


def bare_encoder(db: str, documents_s: float, files: int) -> None:
    """The issue's other bound on a first index: the same model and precision, in the same run,
    encoding the chunks the index holds with nothing around it; against the documents phase."""
    from citeline.index.store import Store
    from citeline.pipeline.embed import get_embedder
    from citeline.schemas.settings import DEFAULT_MODEL, IndexSettings

    settings = IndexSettings(db=db, model=DEFAULT_MODEL)
    texts = [row["text"] for row in Store(settings.db).chunk_rows(["text"])]
    embedder = get_embedder(settings.model, settings.precision)
    embedder.embed_documents(texts[:32])  # loaded and warm, as in the run
    started = time.perf_counter()
    embedder.embed_documents(texts)
    bare = len(texts) / (time.perf_counter() - started)
    if documents_s:
        indexed = len(texts) / documents_s
        print(f"ENCODER bare {bare:.1f} chunks/s; first index {indexed:.1f} chunks/s, {files / documents_s:.1f} "
              f"documents/s in its documents phase ({indexed / bare:.2f} of the bare encoder)", flush=True)


def main(files: int, real: bool = False) -> None:
    load = os.getloadavg()[0]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        write_notes(Path(tmp) / "notes", files)
        documents_s = 0.0
        for mode in ("first", "sync", "rename", "sync", "flowrun", *(["encoder"] if real else []), "check"):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, __file__, "--step", mode, tmp, str(files),
                                   *(["--real"] if real else []), str(documents_s)],
                                  cwd=ROOT, capture_output=True, text=True)
            process_s = time.perf_counter() - started
            if done.returncode != 0:
                sys.exit(f"step {mode} exited {done.returncode}:\n{done.stderr[-3000:]}")
            for encoder_line in (ln for ln in done.stdout.splitlines() if ln.startswith("ENCODER ")):
                print(encoder_line)
            if mode in ("encoder", "check"):
                continue
            line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")][-1].split(" ", 4)
            results.append((mode, float(line[2]), process_s, line[4]))
            documents_s = documents_s or float(line[3])
    first, first_process = results[0][1], results[0][2]
    for mode, flow_s, process_s, summary in results:
        print(f"{mode:<7} flow {flow_s:7.2f} s ({flow_s / first:.3f} of the first index), process {process_s:7.2f} s "
              f"({process_s / first_process:.3f}); {summary}")
    process = {mode: process_s for mode, _, process_s, _ in results}
    print(f"the rename's process {process['rename'] - process['flowrun']:+.2f} s beside a flow run that writes nothing; "
          f"the goal (0.05 of the first index's process) allows {0.05 * first_process:.2f} s in all")
    print(f"first index with the {'real model' if real else 'fake embedder'}; machine {os.cpu_count()} cpus; "
          f"load average {load:.2f} at start, {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--real"]
    real = "--real" in sys.argv[1:]
    if args[:1] == ["--step"]:  # --step MODE DIR FILES DOCUMENTS_S
        step(args[1], Path(args[2]), int(args[3]), real, float(args[4]))
    else:
        main(20 if args[:1] == ["--smoke"] else int(args[0]) if args else 2000, real)
