"""Packages whose ``__init__`` costs every command a second it never uses.

``import lancedb`` imports ``lance_namespace``, which imports models from
``lance_namespace_urllib3_client``; that package's ``__init__`` first imports the REST
client for every namespace API (table, metadata, data, branch ... ~0.65 s of a cold
``citeline status``'s ~1.9 s here, ``python -X importtime``). A local or S3 index never
talks to a namespace server, and the models it needs live in a submodule.

``defer_init(name)`` puts the package in ``sys.modules`` with its ``__path__`` only, so its
submodules import as usual, and runs the real ``__init__`` on the first access to a name it
defines (PEP 562 ``__getattr__``): code that uses the REST client gets it unchanged. Nothing
is done when the package is missing, already imported, or not a package.
"""
from __future__ import annotations

import importlib.util
import sys
import types

DEFERRED = ("lance_namespace_urllib3_client",)


def defer_init(name: str) -> bool:
    """Defer ``name``'s ``__init__`` until a name of it is used; True when deferred.

    >>> defer_init("citeline_no_such_package")
    False
    """
    if name in sys.modules:
        return False
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return False
    module = types.ModuleType(name)
    module.__spec__ = spec
    module.__file__ = spec.origin
    module.__path__ = list(spec.submodule_search_locations)
    module.__package__ = name
    module.__loader__ = spec.loader

    def __getattr__(attribute: str):
        if attribute.startswith("__"):  # dunder probes (copy, pickle, doctest) must not load it
            raise AttributeError(attribute)
        del module.__getattr__
        spec.loader.exec_module(module)
        return getattr(module, attribute)

    module.__getattr__ = __getattr__
    sys.modules[name] = module
    return True


def defer_all() -> None:
    for name in DEFERRED:
        defer_init(name)
