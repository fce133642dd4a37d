"""Keep an index's stored word-piece vectors (index/tokens.py) in step with its chunks."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from prefect import task
from prefect.cache_policies import NO_CACHE

from citeline.index.store import Store
from citeline.index.tokens import TokenVectors, keeps
from citeline.pipeline.embed import Embedder
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp
from citeline.schemas.tables import TOKENS_KEY
from citeline.runtime.log import get_logger
from citeline.runtime.handles import embedder_for, store_for

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
    if tokens.legacy():  # version 1 (float16): rebuilt as int8 from the chunks' texts
        tokens.drop()
        get_logger(task="token-vectors").info("tokens.rebuilt", reason="float16 table of version 1")
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
    """Whether a run must maintain ``stamp``'s token table.

    ``settings.token_vectors`` True or False says so; None (no flag: a scheduled sync, the
    API, a deployment) keeps the index's own choice: yes, unless ``index --no-token-vectors``
    turned them off (the meta row ``TOKENS_KEY``), so a sync never silently lets MaxSim fall
    back to slow scoring, nor grows back the disk an operator took back.
    """
    return keeps(store_for(settings.db), settings.token_vectors)


def resolve_token_vectors(settings: IndexSettings, stamp: IndexStamp) -> IndexSettings:
    """``settings`` with ``token_vectors`` decided (see ``keeps_token_vectors``), the choice of an
    explicit flag recorded in the index, and the table dropped when they are turned off.

    Run at the start of a flow, under the writer lock: the documents' tasks then compute the
    word-piece vectors in the pass that embeds each chunk exactly when they are kept.
    """
    keep = keeps_token_vectors(settings, stamp)
    store = store_for(settings.db)
    if settings.token_vectors is not None and store.meta_value(TOKENS_KEY) != ("on" if keep else "off"):
        store.set_meta_value(TOKENS_KEY, "on" if keep else "off")
    tokens = TokenVectors(store, stamp)
    if not keep and tokens.exists():
        _, size = tokens.size()
        tokens.drop()
        get_logger(task="token-vectors").info("tokens.dropped", mib=round(size / 2**20, 1))
    return replace(settings, token_vectors=keep)


@task(task_run_name="token vectors", cache_policy=NO_CACHE, persist_result=False)
def store_token_vectors(settings: IndexSettings, stamp: IndexStamp) -> int:
    """Bring the token table of ``stamp`` up to its chunks table; return chunks added."""
    store = store_for(settings.db)
    added, pruned = fill_token_vectors(store, stamp, lambda: embedder_for(settings))
    chunks, size = TokenVectors(store, stamp).size()
    get_logger(task="token-vectors").info("tokens.stored", added=added, pruned=pruned, chunks=chunks,
                                          mib=round(size / 2**20, 1))
    return added
