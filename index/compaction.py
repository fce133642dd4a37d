"""Compaction that rewrites a table's small fragments and leaves its big ones alone.

LanceDB's ``Table.optimize`` compacts with Lance's defaults: every fragment under 1 Mi rows is a
candidate, and neighbouring candidates are rewritten together. The token table (index/tokens.py)
is one fragment of ~8-39 KiB rows after a first index, far under that, so each sync that changed
a chunk rewrote all of it beside its one new row: 0.46 s on the dev corpus (40 MiB) and 8-10 s at
100,000 chunks (830 MiB) for one edited file, and every rewrite stayed on disk for the seven days
old versions are kept (docs/benchmarks.md section 24). Here a fragment counts as small under
``FRAGMENT_BYTES`` of rows, and the small ones are compacted only once ``SMALL_FRAGMENTS`` of
them have piled up (a run adds one per commit), or when over a tenth of a fragment is deleted: the
rewrite is bounded by a fragment's size, and paid once per several runs. A run's end compacts the
chunks table the same way (index/store.py ``finish_run``): below the HNSW threshold LanceDB's
optimize rewrote it whole too; above it Lance compacts none of its fragments either way.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Sequence

FRAGMENT_BYTES = 256 * 2**20  # a compacted fragment's size: a few hundred files at a million chunks
SMALL_FRAGMENTS = 8  # compact once this many fragments are under the target
DELETED_SHARE = 0.1  # Lance's own threshold (exceeded) for rewriting a fragment without its deleted rows
KEEP_VERSIONS = timedelta(days=7)  # LanceDB's default: a reader open on an older version keeps working


@dataclass(frozen=True)
class Fragment:
    rows: int  # physical rows, deleted ones included
    deleted: int
    bytes: int


def target_rows(fragments: Sequence[Fragment], fragment_bytes: int | None = None) -> int:
    """Rows per compacted fragment for this table's row size (at least 1,024, Lance's row group).

    >>> target_rows([Fragment(rows=1024, deleted=0, bytes=40 * 2**20)])  # 40 KiB rows
    6553
    >>> target_rows([Fragment(rows=10, deleted=0, bytes=10 * 2**30)])
    1024
    """
    rows = sum(f.rows for f in fragments)
    size = sum(f.bytes for f in fragments)
    if not rows or not size:
        return 2**20
    return max(1024, int((fragment_bytes or FRAGMENT_BYTES) / (size / rows)))


def compaction_due(fragments: Sequence[Fragment], target: int) -> bool:
    """Whether compacting would merge enough small fragments, or drop a fragment's deleted rows.

    >>> big, one = Fragment(100_000, 0, 800 * 2**20), Fragment(1, 0, 8192)
    >>> compaction_due([big] + [one] * 7, target=32_000), compaction_due([big] + [one] * 8, target=32_000)
    (False, True)
    >>> [compaction_due([Fragment(100_000, gone, 800 * 2**20)], target=32_000) for gone in (10_000, 10_001)]
    [False, True]
    """
    if sum(f.rows < target for f in fragments) >= SMALL_FRAGMENTS:
        return True
    return any(f.rows and f.deleted / f.rows > DELETED_SHARE for f in fragments)


def optimize(table) -> bool:
    """Compact ``table``'s small fragments when due, bring its indexes up to its last row, and
    drop versions older than ``KEEP_VERSIONS``; True when it compacted."""
    dataset = table.to_lance()
    fragments = [Fragment(f.metadata.physical_rows, f.metadata.num_deletions,
                          sum(file.file_size_bytes or 0 for file in f.metadata.files))
                 for f in dataset.get_fragments()]
    target = target_rows(fragments)
    due = compaction_due(fragments, target)
    if due:
        dataset.optimize.compact_files(target_rows_per_fragment=target)
    dataset.optimize.optimize_indices()
    dataset.cleanup_old_versions(older_than=KEEP_VERSIONS)
    table.checkout_latest()
    return due
