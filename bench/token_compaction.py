"""What a one-document sync costs the token table at scale: LanceDB's optimize against citeline's.

    .venv/bin/python bench/token_compaction.py [--rows 100000] [--pieces 24] [--chunks 100]
        [--edits 10] [--smoke]

Two copies of one token table (index/tokens.py's schema: int8 word-piece vectors, ``--pieces``
per chunk at 384 dimensions, ~9 KiB a row at 24) of ``--rows`` chunks in one fragment, as a
first index's last compaction leaves it. Then ``--edits`` times, each copy takes what a sync of
one edited document writes there (``--chunks`` new rows merged in, the document's old rows
deleted by the prune) and is optimized: copy A by LanceDB's ``Table.optimize()`` (what every
sync did), copy B by ``TokenVectors.optimize()`` (index/compaction.py). The two alternate edit
by edit. Printed: each copy's optimize time per edit (median and worst), the data files it
wrote, and its disk after the edits (old versions are kept seven days, so each rewrite stays).
``--smoke``: 3,000 rows of 4 pieces, 3 edits: runs, no figure (tests/flows/test_bench_smoke.py).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_commands import cpu_model  # noqa: E402

from citeline.index.store import Store  # noqa: E402
from citeline.index.tokens import TokenVectors  # noqa: E402
from citeline.schemas.stamp import IndexStamp  # noqa: E402
from citeline.schemas.tables import TOKENS_SCHEMA  # noqa: E402

DIM = 384
STAMP = IndexStamp(embed_model="bench/token-compaction", embed_dim=DIM)


def rows(ids: list[str], pieces: int, rng: np.random.Generator) -> pa.Table:
    """Token rows of random int8 vectors with float16 scales: the bytes a real row has."""
    return pa.Table.from_pydict({
        "chunk_id": ids,
        "count": [pieces] * len(ids),
        "scale": [rng.random(pieces, dtype=np.float32).astype(np.float16).tobytes() for _ in ids],
        "vectors": [rng.integers(-127, 128, pieces * DIM, dtype=np.int8).tobytes() for _ in ids],
    }, schema=TOKENS_SCHEMA)


def disk_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def data_files(folder: Path) -> set[str]:
    return {p.name for p in folder.rglob("*.lance") if p.parent.name == "data"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--pieces", type=int, default=24, help="word pieces a chunk (real dev chunks: ~104)")
    parser.add_argument("--chunks", type=int, default=100, help="chunks of the edited document")
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.pieces, args.chunks, args.edits = 3000, 4, 20, 3
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="citeline-compaction-") as tmp:
        first = TokenVectors(Store(f"{tmp}/a"), STAMP)
        started = time.perf_counter()
        for start in range(0, args.rows, 10_000):
            batch = rows([f"c{i:07d}" for i in range(start, min(args.rows, start + 10_000))], args.pieces, rng)
            first._table().add(batch)
        first._table().optimize()  # one fragment, as a first index leaves it
        shutil.copytree(f"{tmp}/a", f"{tmp}/b")
        print(f"token table: {args.rows:,} chunks x {args.pieces} pieces, {disk_mib(Path(tmp) / 'a'):,.0f} MiB, "
              f"written in {time.perf_counter() - started:.0f} s; {cpu_model()}")
        copies = {"LanceDB Table.optimize()": TokenVectors(Store(f"{tmp}/a"), STAMP),
                  "TokenVectors.optimize() ": TokenVectors(Store(f"{tmp}/b"), STAMP)}
        folders = dict(zip(copies, (Path(tmp) / "a", Path(tmp) / "b")))
        before = {label: (disk_mib(folders[label]), data_files(folders[label])) for label in copies}
        took: dict[str, list[float]] = {label: [] for label in copies}
        for edit in range(args.edits):
            old = [f"c{(edit * 7919 * args.chunks + j) % args.rows:07d}" for j in range(args.chunks)]
            new = rows([f"e{edit}-{j}" for j in range(args.chunks)], args.pieces, np.random.default_rng(edit))
            for label, tokens in copies.items():
                table = tokens._table()
                table.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all().execute(new)
                table.delete("chunk_id IN (" + ", ".join(f"'{c}'" for c in old) + ")")
                started = time.perf_counter()
                if label.startswith("LanceDB"):
                    table.optimize()
                else:
                    tokens.optimize()
                took[label].append(time.perf_counter() - started)
        for label, tokens in copies.items():
            mib, files = before[label]
            written = len(data_files(folders[label]) - files)
            print(f"{label}  optimize per edit: median {statistics.median(took[label]):.2f} s, worst "
                  f"{max(took[label]):.2f} s; {written} data files added (the edits' own included); disk {mib:,.0f} -> "
                  f"{disk_mib(folders[label]):,.0f} MiB after {args.edits} edits; rows {tokens.count():,}")


if __name__ == "__main__":
    main()
