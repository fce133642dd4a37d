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

from citeline.pipeline.blame import contained, library_errors
from citeline.schemas import interrupt
from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Timeout
from citeline.schemas.options import ExtractOptions

_local = threading.local()
# Every thread's pool, so a stop request can kill all their workers at once (``stop_workers``).
# Re-entrant: the signal handler that stops them runs on the main thread, which may hold it.
_pools: set[ProcessPoolExecutor] = set()
_pools_lock = threading.RLock()
# A small grace beyond the extractor's own deadline, so its clean Timeout (which says
# how far it got) wins when it can; the kill is for when it cannot.
GRACE_S = 5.0


def _extract(module_name: str, data: bytes, name: str, options: ExtractOptions) -> Canonical:
    """In the worker: the extractor's result, or its library's exception as the document's failure
    (judged here, where the traceback still holds the frames that raised it: pipeline/blame.py);
    any other exception is the document's ``Unexpected`` failure, named where it rose."""
    with contained(f"the extractor module {module_name}"):
        module = importlib.import_module(module_name)
    with contained(f"the {getattr(module, 'NAME', module_name)} extractor"), library_errors(module):
        return module.extract(data, name, options)


def _pool() -> ProcessPoolExecutor:
    pool = getattr(_local, "pool", None)
    if pool is None:
        with _pools_lock:  # a stop after this check kills the new pool's worker too
            interrupt.check()
            # spawn, not fork: the parent holds threads (Prefect, torch) that fork would copy mid-state.
            pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
            _pools.add(pool)
        _local.pool = pool
    return pool


def _discard_pool() -> None:
    pool = getattr(_local, "pool", None)
    _local.pool = None
    if pool is not None:
        _kill(pool)


def _kill(pool: ProcessPoolExecutor) -> None:
    with _pools_lock:
        _pools.discard(pool)
    for process in list((getattr(pool, "_processes", None) or {}).values()):  # no public kill in the stdlib
        process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


def stop_workers() -> None:
    """Kill every extractor worker of this process (the run was told to stop): a thread waiting
    on one gets ``Stopped`` at once instead of waiting out the time limit."""
    with _pools_lock:
        pools = list(_pools)
        for pool in pools:  # kill only: shutdown joins a thread, which a signal handler must not
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.kill()


def extract_isolated(module_name: str, data: bytes, name: str, options: ExtractOptions) -> Canonical:
    """``module.extract(data, name, options)`` in a worker, killed past the time limit.

    Raises:
        Timeout: past ``options.time_limit_s`` (plus a grace period).
        Corrupt: the worker died (the parser crashed on this input).
        Stopped: the run was told to stop (its worker is killed).
        DocumentError: whatever the extractor raised, unchanged; ParserFailed for an exception its
            library raised on the file (pipeline/blame.py). Any other exception is citeline's and
            comes back as raised, its worker traceback as its cause.
    """
    limit = options.time_limit_s
    future = _pool().submit(_extract, module_name, data, name, options)
    if interrupt.requested():  # a stop that came while the worker was starting missed it
        _discard_pool()
        interrupt.check()
    try:
        return future.result(timeout=None if limit is None else limit + GRACE_S)
    except FutureTimeout:
        _discard_pool()
        raise Timeout(f"extraction ran past the {limit:.3g} s limit and was stopped") from None
    except BrokenProcessPool:
        _discard_pool()
        interrupt.check()  # killed by stop_workers (or by the signal itself): not this file's fault
        raise Corrupt("the extractor's process died on this file (the parser crashed)") from None
