"""The process's handles on the index and the model, and the lock that keeps writes single."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from citeline.index.lease import check_writer
from citeline.index.store import Store
from citeline.pipeline.embed import Embedder, get_embedder, resolve_model
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import PIPELINE_VERSION, IndexStamp

# Task threads of one run write one at a time; other processes are kept out by index.lock.
_WRITE_LOCK = threading.Lock()


@contextmanager
def write_lock(uri: str | None = None) -> Iterator[None]:
    """The process's write lock, reached through a function: Prefect pickles task and flow
    functions by value (to serve them or ship them to Dask), and a lock cannot be pickled.

    With ``uri``, the index's writer lease (S3) is checked once the lock is held, so a
    run that lost it stops before this write (index/lease.py ``check_writer``).
    """
    with _WRITE_LOCK:
        if uri is not None:
            check_writer(uri)
        yield


@lru_cache(maxsize=8)
def store_for(uri: str) -> Store:
    return Store(uri)


def embedder_for(settings: IndexSettings) -> Embedder:
    return get_embedder(settings.model, settings.precision, settings.batch_size)


def warm_embedder(settings: IndexSettings) -> None:
    """Load what a run's first few passages are encoded with, where the model says what that is
    (``warm_for_few``), while the command waits for Prefect's server anyway: an edited file's run
    spent 0.26 s creating an ONNX session. A model that cannot load fails the run later, with
    its reason, as it would have."""
    warm = getattr(embedder_for(settings), "warm_for_few", None)
    if warm is not None:
        try:
            warm()
        except Exception:  # noqa: BLE001 - the run meets it again and says why
            pass


def stamp_for(settings: IndexSettings) -> IndexStamp:
    """The stamp these settings produce, without loading the model when the index knows it.

    A run with nothing to embed (a no-op re-sync) then never pays for loading weights.
    """
    name = resolve_model(settings.model).name
    stored = store_for(settings.db).stamp()
    dim = stored.embed_dim if stored is not None and stored.embed_model == name else embedder_for(settings).dim
    return IndexStamp(name, dim, PIPELINE_VERSION, settings.strategy.upper())
