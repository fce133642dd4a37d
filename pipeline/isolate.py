"""Run an extractor in a child process that can be killed.

A soft deadline between pages cannot stop a parser stuck inside one C call (a
pathological PDF), and a parser that crashes the interpreter would take the whole run
with it. Extractors that parse binary formats therefore run in a worker process, one
per calling thread, kept alive between documents; on a time-out or a crash the worker
is killed and the next document gets a fresh one.
"""
from __future__ import annotations

import importlib
import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Timeout
from citeline.schemas.options import ExtractOptions

_local = threading.local()
# A small grace beyond the extractor's own deadline, so its clean Timeout (which says
# how far it got) wins when it can; the kill is for when it cannot.
GRACE_S = 5.0


def _extract(module_name: str, data: bytes, name: str, options: ExtractOptions) -> Canonical:
    return importlib.import_module(module_name).extract(data, name, options)


def _pool() -> ProcessPoolExecutor:
    pool = getattr(_local, "pool", None)
    if pool is None:
        # spawn, not fork: the parent holds threads (Prefect, torch) that fork would copy mid-state.
        pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        _local.pool = pool
    return pool


def _discard_pool() -> None:
    pool = getattr(_local, "pool", None)
    _local.pool = None
    if pool is None:
        return
    for process in list(getattr(pool, "_processes", {}).values()):  # no public kill in the stdlib
        process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


def extract_isolated(module_name: str, data: bytes, name: str, options: ExtractOptions) -> Canonical:
    """``module.extract(data, name, options)`` in a worker, killed past the time limit.

    Raises:
        Timeout: past ``options.time_limit_s`` (plus a grace period).
        Corrupt: the worker died (the parser crashed on this input).
        DocumentError: whatever the extractor raised, unchanged.
    """
    limit = options.time_limit_s
    future = _pool().submit(_extract, module_name, data, name, options)
    try:
        return future.result(timeout=None if limit is None else limit + GRACE_S)
    except FutureTimeout:
        _discard_pool()
        raise Timeout(f"extraction ran past the {limit:.3g} s limit and was stopped") from None
    except BrokenProcessPool:
        _discard_pool()
        raise Corrupt("the extractor's process died on this file (the parser crashed)") from None
