"""Run an extractor in a child process that can be killed.

A soft deadline between pages cannot stop a parser stuck inside one C call (a
pathological PDF), and a parser that crashes the interpreter would take the whole run
with it. Extractors that parse binary formats therefore run in a worker process, one
per calling thread, kept alive between documents; on a time-out or a crash the worker
is killed and the next document gets a fresh one.

Each worker also has a memory ceiling (``ExtractOptions.max_memory_bytes``), so no document can
take the machine: a FLAC whose header claimed 1 s held 5 hours and was decoded into 6.8 GB.
It is ``RLIMIT_DATA``, the process's writable private memory (heap, numpy's
buffers, a C library's mallocs; inherited by Tesseract and LibreOffice), not ``RLIMIT_AS``:
address space that is only reserved (glibc's 64 MB per-thread arenas, more with every core; the
Whisper worker's 1.1 GB VmPeak holds 0.46 GB of data and 0.36 GB resident) would fail documents
that need little. Past it an allocation fails: a ``MemoryError`` anywhere in the extraction makes
the document ``too-large`` and the worker is replaced.
"""
from __future__ import annotations

import importlib
import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

from citeline.pipeline.blame import contained, library_errors
from citeline.schemas import interrupt
from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, OutOfMemory, Timeout
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
    any other exception is the document's ``Unexpected`` failure, named where it rose; a
    ``MemoryError`` is ``OutOfMemory``, whoever raised it."""
    ceiling = options.max_memory_bytes
    with contained(f"the extractor module {module_name}"), _memory(f"loading the extractor {module_name}", ceiling):
        module = importlib.import_module(module_name)
    what = f"the {getattr(module, 'NAME', module_name)} extractor"
    with contained(what), library_errors(module), _memory(what, ceiling):
        return module.extract(data, name, options)


@contextmanager
def _memory(what: str, ceiling: int | None):
    """A MemoryError as the document's ``OutOfMemory``, the ceiling named (innermost, so neither
    a library's nor citeline's code can be blamed for an allocation the ceiling refused)."""
    try:
        yield
    except MemoryError:
        limit = f"more than {gib(ceiling)} of memory, the ceiling of an extraction worker (max_memory_bytes)" \
            if ceiling else "more memory than the machine could give (MemoryError)"
        raise OutOfMemory(f"{what} needed {limit}") from None


def gib(size: int) -> str:
    """A byte count in GiB, as few digits as say it (6 GiB, 0.75 GiB)."""
    return f"{size / 1024 ** 3:.3g} GiB"


def _limit_memory(ceiling: int | None) -> None:
    """The worker's initializer: its writable memory capped at ``ceiling`` bytes, soft and hard (an
    extractor cannot raise it again). Where the system's hard limit is lower, that one stays."""
    if not ceiling:
        return
    try:
        import resource
    except ImportError:  # not a POSIX system: no ceiling to set
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    ceiling = ceiling if hard == resource.RLIM_INFINITY else min(ceiling, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (ceiling, ceiling))


def _pool(ceiling: int | None = None) -> ProcessPoolExecutor:
    pool = getattr(_local, "pool", None)
    if pool is not None and getattr(_local, "ceiling", None) != ceiling:
        _discard_pool()  # a worker's ceiling cannot be raised: another one is started
        pool = None
    if pool is None:
        with _pools_lock:  # a stop after this check kills the new pool's worker too
            interrupt.check()
            # spawn, not fork: the parent holds threads (Prefect, torch) that fork would copy mid-state.
            pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_limit_memory, initargs=(ceiling,))
            _pools.add(pool)
        _local.pool, _local.ceiling = pool, ceiling
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
        OutOfMemory: the extraction needed more than ``options.max_memory_bytes``; the worker is
            replaced.
        Corrupt: the worker died (the parser crashed on this input).
        Stopped: the run was told to stop (its worker is killed).
        DocumentError: whatever the extractor raised, unchanged; ParserFailed for an exception its
            library raised on the file (pipeline/blame.py). Any other exception is citeline's and
            comes back as raised, its worker traceback as its cause.
    """
    limit = options.time_limit_s
    future = _pool(options.max_memory_bytes).submit(_extract, module_name, data, name, options)
    if interrupt.requested():  # a stop that came while the worker was starting missed it
        _discard_pool()
        interrupt.check()
    try:
        return future.result(timeout=None if limit is None else limit + GRACE_S)
    except FutureTimeout:
        _discard_pool()
        raise Timeout(f"extraction ran past the {limit:.3g} s limit and was stopped") from None
    except OutOfMemory:
        _discard_pool()  # a library refused an allocation half-way: its state is not to be trusted
        raise
    except BrokenProcessPool:
        _discard_pool()
        interrupt.check()  # killed by stop_workers (or by the signal itself): not this file's fault
        # A C library that cannot allocate may abort rather than raise: the ceiling is said too.
        ceiling = options.max_memory_bytes
        also = f", or stopped at its {gib(ceiling)} memory ceiling (max_memory_bytes)" if ceiling else ""
        raise Corrupt(f"the extractor's process died on this file (the parser crashed{also})") from None
