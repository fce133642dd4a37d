"""citeline: index folders into LanceDB and search them with exact citations.

``from citeline import Index`` is the library's door (citeline/library.py). It is looked up
on first use (PEP 562), so ``import citeline`` stays cheap and loads neither LanceDB
nor a model.
"""
from __future__ import annotations

from citeline.runtime.deferred_imports import defer_all

defer_all()  # before anything imports lancedb: its namespace REST client costs every command ~0.65 s

__all__ = ["Filters", "Index"]


def __getattr__(name: str):
    if name == "Index":
        from citeline.library import Index

        return Index
    if name == "Filters":
        from citeline.schemas.retrieval import Filters

        return Filters
    raise AttributeError(f"module 'citeline' has no attribute {name!r}")
