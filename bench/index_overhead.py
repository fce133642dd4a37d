"""Indexing overhead: the whole index flow vs bare ``model.encode()`` of the same chunk texts.

Both sides run in this process, on the same loaded model, backend and batch size, so
the ratio holds on a noisy shared machine even when absolute times move. The bare
encode runs once before and once after the flow and its mean is the baseline, so a
change of load during the run weighs on both sides.

    .venv/bin/python bench/index_overhead.py [CORPUS_DOCS] [--strategy E] [--precision auto]
        [--batch-size N] [--smoke]

``--smoke`` (what ``make check`` runs, tests/flows/test_bench_smoke.py): examples/docs on the
tests' fake embedder, seconds, no figure meant; every line of the report is still computed
from the flow's events, so a change that breaks how the bench reads them fails there.

Where the time goes comes from what the pipeline measures anyway: the per-stage seconds
each ``document.indexed`` event carries (read, extract, chunk, embed, write), the
``run.finished`` event's plan / documents / finish seconds, and the embedder's counters
(tokenise and encode seconds, counted under its lock so nothing is counted twice).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from citeline.runtime import env, log

env.apply()
log.configure()  # as the entry points do: the citeline logger at INFO, or its events never reach a handler
# Prefect waits 20 s for its temporary server; on this loaded machine that once ran out.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

from citeline.flows.ingest import index_folder  # noqa: E402
from citeline.index.store import Store  # noqa: E402
from citeline.pipeline.chunk import chunk_document  # noqa: E402
from citeline.pipeline.embed import get_embedder  # noqa: E402
from citeline.pipeline.prepare import doc_id_for, extract_bytes  # noqa: E402
from citeline.pipeline.walk import list_files  # noqa: E402
from citeline.schemas.options import ExtractOptions  # noqa: E402
from citeline.schemas.settings import IndexSettings  # noqa: E402
from citeline.runtime.log import LOGGER  # noqa: E402

DEFAULT_DOCS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev" / "docs"
SMOKE_DOCS = Path(__file__).resolve().parents[1] / "examples" / "docs"


def smoke_embedder():
    """The tests' fake embedder (tests/fixtures/fakes.py) with what this bench asks of the real one,
    registered under its name: ``--smoke`` measures the plumbing, not a model."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))
    from fakes import FAKE, HashEmbedder

    from citeline.pipeline import embed

    class SmokeEmbedder(HashEmbedder):
        batch_size = IndexSettings.batch_size

        def encode_bare(self, texts):
            return self.embed_documents(texts)

    return FAKE, embed.registered(FAKE, lambda precision, batch_size: SmokeEmbedder())


class Events(logging.Handler):
    """Keeps the citeline JSON events of the run, with the time each was logged."""

    def __init__(self):
        super().__init__()
        self.events: list[tuple[float, dict]] = []

    def emit(self, record):
        try:
            self.events.append((record.created, json.loads(record.getMessage())))
        except ValueError:
            pass

    def named(self, name: str) -> list[tuple[float, dict]]:
        return [(t, e) for t, e in self.events if e.get("event") == name]


def timed(fn, *args):
    started, cpu = time.perf_counter(), time.process_time()
    result = fn(*args)
    return time.perf_counter() - started, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", nargs="?", default=None)
    parser.add_argument("--strategy", default="E")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--batch-size", type=int, default=IndexSettings.batch_size)
    parser.add_argument("--smoke", action="store_true", help="examples/docs on the fake embedder: seconds, no figure")
    args = parser.parse_args()
    args.docs = args.docs or str(SMOKE_DOCS if args.smoke else DEFAULT_DOCS)
    if args.smoke:
        model, registered = smoke_embedder()
        with registered:
            run(args, model)
    else:
        run(args, IndexSettings.model)


def run(args, model: str) -> None:

    load_start = os.getloadavg()
    events = Events()
    logging.getLogger(LOGGER).addHandler(events)
    with tempfile.TemporaryDirectory() as tmp:
        settings = IndexSettings(db=f"{tmp}/index", model=model, strategy=args.strategy, precision=args.precision,
                                 batch_size=args.batch_size)
        embedder = get_embedder(settings.model, settings.precision, settings.batch_size)
        embedder.embed_documents(["warm-up"])  # load the weights outside every timing

        # The same texts the flow embeds, chunked here without Prefect, for the first baseline.
        texts = []
        for f in list_files(args.docs):
            canonical = extract_bytes(Path(f.source).read_bytes(), Path(f.path).name, ExtractOptions())
            texts += [c.text for c in chunk_document(canonical.text, canonical.title, doc_id_for(f.source),
                                                     args.strategy, settings.budget, settings.overlap)]

        bare1_s, bare1_cpu, _ = timed(embedder.encode_bare, texts)
        stats0 = dict(embedder.stats.__dict__)
        call_start = time.time()
        flow_s, flow_cpu, summary = timed(index_folder, args.docs, settings)
        call_end = time.time()
        stats1 = dict(embedder.stats.__dict__)
        stored = [r["text"] for r in Store(settings.db).chunk_rows(["text"])]
        bare2_s, bare2_cpu, _ = timed(embedder.encode_bare, texts)
        sorted_s, sorted_cpu, _ = timed(embedder.embed_documents, texts)
    load_end = os.getloadavg()
    assert sorted(stored) == sorted(texts), "the baseline must encode exactly the chunks the flow wrote"

    encode_s = (bare1_s + bare2_s) / 2
    encode_cpu = (bare1_cpu + bare2_cpu) / 2
    delta = {k: stats1[k] - stats0[k] for k in stats1}
    stages = defaultdict(float)
    for _, e in events.named("document.indexed"):
        for stage, s in e.get("seconds", {}).items():
            stages[stage] += s
    (planned_at, _), = events.named("run.planned")
    (finished_at, finished), = events.named("run.finished")
    run = finished["seconds"]
    body_start = planned_at - run["plan"]
    prefect_start = body_start - call_start
    prefect_end = call_end - finished_at
    documents = run["documents"]
    busy = delta["encode_s"] + delta["tokenise_s"]
    idle = documents - busy  # the documents phase with no encode running: its overhead

    def row(label, seconds, note=""):
        print(f"  {label:<34} {seconds:8.2f} s  {100 * seconds / flow_s:5.1f}%  {note}")

    print(f"corpus        {args.docs}")
    print(f"machine       {os.cpu_count()} cpus; load average {load_start[0]:.2f} at start, {load_end[0]:.2f} at end")
    print(f"strategy      {args.strategy}; encoder {embedder.name} {embedder.precision}, batch {embedder.batch_size}")
    print(f"chunks        {summary.chunks} ({summary.truncated} truncated), documents {summary.indexed}")
    print(f"bare encode   {encode_s:8.2f} s  cpu {encode_cpu:7.2f} s  (model.encode() of all texts at once; "
          f"before {bare1_s:.2f} s, after {bare2_s:.2f} s)")
    print(f"index flow    {flow_s:8.2f} s  cpu {flow_cpu:7.2f} s  ({summary.chunks / flow_s:6.1f} chunks/s; "
          f"Prefect's temporary server started inside this timing, as in `citeline index`)")
    print(f"RATIO         {flow_s / encode_s:8.2f}x wall, {flow_cpu / encode_cpu:.2f}x cpu  (index flow / bare encode)")
    print(f"our encode    {sorted_s:8.2f} s  cpu {sorted_cpu:7.2f} s  (Embedder.embed_documents of all texts: "
          f"word-piece sorted batches; {sorted_s / encode_s:.2f}x bare)")
    print(f"padding       flow fed {delta['tokens']:,} word-pieces as {delta['padded']:,} padded positions "
          f"({delta['padded'] / max(delta['tokens'], 1):.3f}x) in {delta['batches']} batches")
    print("where the flow's time went:")
    row("prefect: flow start (+ server)", prefect_start, "flow-run creation, temporary API server")
    row("plan (walk, hash, compare)", run["plan"])
    row("encode (model forward)", delta["encode_s"], "one document at a time, under the embedder lock")
    row("tokenise (count + sort)", delta["tokenise_s"], "once per chunk; encode() tokenises again inside")
    row("documents phase, encoder idle", idle,
        "Prefect task runs, hand-offs, anything the encoder waited for")
    row("finish (FTS index + optimize)", run["finish"])
    row("prefect: flow end + report", prefect_end, "token-vector check, artifacts, final state")
    print("  hidden behind the encoder (other threads, while it ran; the idle row above is what they cost):")
    row("  write (LanceDB merge_insert + record)", stages["write"], "flow thread, one document at a time")
    for stage in ("read", "extract", "chunk"):
        row(f"  {stage}", stages[stage], "worker threads")
    row("  embed stage wall (incl. lock wait)", stages["embed"], "two worker threads, summed")


if __name__ == "__main__":
    main()
