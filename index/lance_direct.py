"""The Lance dataset under a LanceDB table, for the reads a question makes many of.

LanceDB's synchronous queries hand every call to its event-loop thread and back; reading the
dataset itself saved ~5 ms of a reranked question at 100k chunks (docs/benchmarks.md section 27).
pylance is not fork-safe (its runtime's threads do not survive a fork): a forked child reads
through LanceDB, which is, whatever its parent opened.
"""
from __future__ import annotations

import os

_forked = False


def _in_child() -> None:
    global _forked
    _forked = True


os.register_at_fork(after_in_child=_in_child)


def usable() -> bool:
    """Whether this process may read through a dataset (not a forked child)."""
    return not _forked


def dataset(table):
    """``table``'s Lance dataset at the version the table object holds, or None: a table with no
    local dataset (a remote one), or a forked child."""
    if _forked or not hasattr(table, "to_lance"):
        return None
    return table.to_lance()
