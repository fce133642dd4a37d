"""Keep an index's stored word-piece vectors (index/tokens.py) in step with its chunks."""
from __future__ import annotations

from typing import Callable

from prefect import task
from prefect.cache_policies import NO_CACHE

from citeline.index.store import Store
from citeline.index.tokens import TokenVectors
from citeline.pipeline.embed import Embedder
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp
from citeline.tasks.log import get_logger
from citeline.tasks.store import embedder_for, store_for

BATCH = 64  # chunks encoded, then committed, at a time: a kill loses at most one batch of work


def fill_token_vectors(store: Store, stamp: IndexStamp, load: Callable[[], Embedder]) -> tuple[int, int]:
    """Encode and store the vectors of every chunk that lacks them; forget those of gone chunks.

    Args:
        load: returns the index's ``Embedder``; called only when there is something to
            encode, so a no-op re-sync never pays for loading the model.

    Returns:
        (chunks added, chunks pruned).
    """
    tokens = TokenVectors(store, stamp)
    pruned = tokens.prune()
    todo = tokens.missing()
    embedder = load() if todo else None
    for start in range(0, len(todo), BATCH):
        batch = todo[start:start + BATCH]
        tokens.write(zip([cid for cid, _ in batch], embedder.token_vectors([text for _, text in batch])))
    if todo or pruned:
        tokens.optimize()
    return len(todo), pruned


def keeps_token_vectors(settings: IndexSettings, stamp: IndexStamp) -> bool:
    """Whether a run must maintain ``stamp``'s token table: asked for, or already there.

    An index that keeps token vectors keeps them current on every run, whatever the run's
    options: a scheduled sync must not silently let MaxSim fall back to slow scoring.
    """
    return settings.token_vectors or TokenVectors(store_for(settings.db), stamp).exists()


@task(task_run_name="token vectors", cache_policy=NO_CACHE, persist_result=False)
def store_token_vectors(settings: IndexSettings, stamp: IndexStamp) -> int:
    """Bring the token table of ``stamp`` up to its chunks table; return chunks added."""
    store = store_for(settings.db)
    added, pruned = fill_token_vectors(store, stamp, lambda: embedder_for(settings))
    chunks, size = TokenVectors(store, stamp).size()
    get_logger(task="token-vectors").info("tokens.stored", added=added, pruned=pruned, chunks=chunks,
                                          mib=round(size / 2**20, 1))
    return added
