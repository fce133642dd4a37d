"""The process's handles on the index and the model, and the lock that keeps writes single."""
from __future__ import annotations

import threading
from functools import lru_cache

from index.store import Store
from pipeline.embed import Embedder, get_embedder
from schemas.settings import IndexSettings
from schemas.stamp import PIPELINE_VERSION, IndexStamp

# Task threads of one run write one at a time; other processes are kept out by index.lock.
WRITE_LOCK = threading.Lock()


@lru_cache(maxsize=8)
def store_for(uri: str) -> Store:
    return Store(uri)


def embedder_for(settings: IndexSettings) -> Embedder:
    return get_embedder(settings.model, settings.precision, settings.batch_size)


def stamp_for(settings: IndexSettings) -> IndexStamp:
    embedder = embedder_for(settings)
    return IndexStamp(embedder.name, embedder.dim, PIPELINE_VERSION, settings.strategy.upper())
