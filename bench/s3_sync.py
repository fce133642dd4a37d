"""The dev corpus synced from a local folder into a local index, against from S3 into an index on S3.

    .venv/bin/python bench/s3_sync.py [--fake] [--corpus DIR] [--repeat N] [--smoke]

S3 is a moto server on a loopback port (the tests' server): what is measured is
citeline's own cost on object storage (listing, one GET per document read, LanceDB's
manifest and fragment requests over HTTP), not a network. Each side runs a first sync
into an empty index, then a no-op re-sync (stat first: nothing is read). Prints seconds
per run (the median of ``--repeat`` runs, local and S3 alternating, each into a fresh
index) and S3 / local as a ratio, the CPU model and the load average. ``--fake`` uses
the tests' hashed bag-of-words embedder, leaving only the storage cost; the default is
the packaged model, as a user runs it. ``--smoke`` (tests/flows/test_bench_smoke.py): ``--fake``,
one document of examples/docs, one repeat: runs, no figure.
"""
from __future__ import annotations

import argparse
import atexit
import os
import shutil
import socket
import statistics
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

from citeline.schemas.settings import DEFAULT_MODEL  # noqa: E402
from citeline.flows.ingest import index_folder  # noqa: E402
from citeline.index.lease import s3_client  # noqa: E402
from citeline.index.store import Store  # noqa: E402
from citeline.pipeline import embed  # noqa: E402
from citeline.schemas.settings import IndexSettings  # noqa: E402

DEV = Path("/work/shared/corpora/dev/docs")


def start_s3() -> None:
    """A moto S3 server on a free loopback port; the AWS variables point at it."""
    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False).start()
    os.environ.update(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="bench",
                      AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1")


def upload(corpus: Path, bucket: str) -> str:
    client = s3_client()
    client.create_bucket(Bucket=bucket)
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        client.put_object(Bucket=bucket, Key=f"docs/{path.relative_to(corpus).as_posix()}", Body=path.read_bytes())
    return f"s3://{bucket}/docs"


def timed_sync(root: str, settings: IndexSettings) -> tuple[float, object]:
    started = time.perf_counter()
    state = index_folder(root, settings, return_state=True)
    seconds = time.perf_counter() - started
    assert state.is_completed(), state.message
    return seconds, state.result()


def run(label: str, root: str, db: str, model: str) -> dict:
    settings = IndexSettings(db=db, model=model)
    first, summary = timed_sync(root, settings)
    again, resync = timed_sync(root, settings)
    assert resync.skipped == summary.indexed, resync
    rows = Store(db).count_chunks()
    print(f"{label}: first sync {first:.2f} s ({summary.indexed} documents, {rows} chunks), "
          f"no-op re-sync {again:.2f} s", flush=True)
    return {"first": first, "again": again, "docs": summary.indexed, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fake", action="store_true", help="the tests' fake embedder instead of the model")
    parser.add_argument("--corpus", type=Path, default=DEV)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="--fake, one document, one repeat")
    args = parser.parse_args()
    if args.smoke:
        args.fake, args.corpus, args.repeat = True, Path(tempfile.mkdtemp(prefix="s3-sync-smoke-")), 1
        shutil.copy(Path(__file__).resolve().parents[1] / "examples" / "docs" / "04-dropout.md", args.corpus)
        atexit.register(shutil.rmtree, args.corpus, True)
    model = FAKE if args.fake else DEFAULT_MODEL
    if args.fake:
        embed.register(FAKE, lambda precision, batch_size: HashEmbedder())
    start_s3()
    s3_root = upload(args.corpus, "citeline-bench")
    with tempfile.TemporaryDirectory() as tmp:
        # A warm-up sync loads the model and starts Prefect's server, so neither side pays it.
        run("warm-up (local, discarded)", str(args.corpus), str(Path(tmp) / "warm"), model)
        runs = {"local": [], "s3": []}
        for n in range(args.repeat):
            runs["local"].append(run("local folder -> local index", str(args.corpus), str(Path(tmp) / f"index{n}"),
                                     model))
            runs["s3"].append(run("s3 prefix -> s3 index", s3_root, f"s3://citeline-bench/index{n}", model))
    local, remote = ({k: statistics.median(r[k] for r in side) for k in ("first", "again")}
                     for side in (runs["local"], runs["s3"]))
    print(f"model {model}; medians of {args.repeat}: local first {local['first']:.2f} s, re-sync "
          f"{local['again']:.2f} s; S3 first {remote['first']:.2f} s, re-sync {remote['again']:.2f} s")
    print(f"S3 / local: first sync {remote['first'] / local['first']:.2f}x, "
          f"no-op re-sync {remote['again'] / local['again']:.2f}x")
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    print(next((line.split(":", 1)[1].strip() for line in cpu.splitlines() if line.startswith("Model name")), "?"),
          f"({os.cpu_count()} CPUs);", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
