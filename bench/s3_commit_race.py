"""What LanceDB's own commits do when two processes upsert the same keys into one S3 table at once.

    .venv/bin/python bench/s3_commit_race.py [ROUNDS]      # default 8
    .venv/bin/python bench/s3_commit_race.py --smoke       # one round: runs, no figure

Each round, two processes open the table, meet at a barrier, and ``merge_insert`` the
same 20 new keys (the upsert citeline's writes use). Prints how many commits succeeded
or were refused, and the rows in the table against the distinct keys. This is why an
index on S3 needs citeline's lock object (index/lease.py): if LanceDB refused or retried
the second commit, rows would equal keys. Against a moto server on loopback; local
folders are measured too, for comparison.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import socket
import sys
import tempfile
from collections import Counter


def writer(uri: str, round_: int, tag: int, barrier, results) -> None:
    import lancedb
    import pyarrow as pa

    from citeline.index.store import storage_options

    table = lancedb.connect(uri, storage_options=storage_options(uri)).open_table("t")
    rows = pa.Table.from_pylist([{"k": f"r{round_}-{i}", "v": tag} for i in range(20)])
    barrier.wait()
    try:
        table.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(rows)
        results.put("committed")
    except Exception as exc:  # safe: the point is to count what LanceDB refuses, and how
        results.put(f"refused: {type(exc).__name__}")


def race(uri: str, rounds: int) -> None:
    import lancedb

    from citeline.index.store import storage_options

    lancedb.connect(uri, storage_options=storage_options(uri)).create_table("t", data=[{"k": "seed", "v": 0}])
    ctx = mp.get_context("spawn")
    outcomes: Counter = Counter()
    for round_ in range(rounds):
        barrier, results = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=writer, args=(uri, round_, tag, barrier, results)) for tag in (1, 2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        outcomes.update([results.get(), results.get()])
    keys = lancedb.connect(uri, storage_options=storage_options(uri)).open_table("t").to_arrow()["k"].to_pylist()
    print(f"{uri}: {rounds} rounds, {dict(outcomes)}; rows {len(keys)}, distinct keys {len(set(keys))}")


def main() -> None:
    rounds = 1 if sys.argv[1:2] == ["--smoke"] else int(sys.argv[1]) if len(sys.argv) > 1 else 8
    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    os.environ.update(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="bench",
                      AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1")
    from citeline.index.lease import s3_client

    s3_client().create_bucket(Bucket="race")
    race("s3://race/index", rounds)
    with tempfile.TemporaryDirectory() as tmp:
        race(os.path.join(tmp, "index"), rounds)
    import lancedb

    print(f"lancedb {lancedb.__version__}")
    server.stop()


if __name__ == "__main__":
    main()
