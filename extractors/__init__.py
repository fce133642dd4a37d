"""Extractor registry: magic bytes first, file suffix second.

An extractor is a module with ``NAME``, ``VERSION`` (bump when its output for the
same bytes changes), ``SUFFIXES``, ``MAGIC`` (byte prefixes it claims, may be
empty) and ``extract(data, name, options) -> Canonical``.

The built-in extractors are imported on the registry's first use, not with the package:
their libraries (PyMuPDF, lxml, python-docx ...) cost a second, and code that needs only
a pure helper of a submodule (``query.table_cell`` reads quotes with
``extractors.tables``) must not pay it (~0.9 s of every cold ``ask``).
"""
from __future__ import annotations

import importlib
import threading
from pathlib import PurePath
from types import ModuleType

from citeline.schemas.errors import NotADocument

from citeline.extractors.sniff import has_no_real_suffix, looks_like_text, what_it_is

# The built-in extractor modules in registry order: magic-sniffed binary formats first;
# text (no magic) last, reached by suffix only. pipeline/extractor_versions.py reads this
# literal from source.
BUILTINS = ("pdf", "ocr", "sheet", "msg", "legacy", "calc", "odt", "epub", "docx", "pptx", "media", "html", "delimited",
            "eml", "rtf", "jsondata", "yamldata", "xmldata", "markup", "text")

_REGISTRY: dict[str, ModuleType] = {}
_BUILTINS_LOCK = threading.Lock()
_builtins_loaded = False


def _load_builtins() -> None:
    """Register the built-in extractors, once, before anything else is registered or asked."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    with _BUILTINS_LOCK:
        if _builtins_loaded:
            return
        # All imported before any is added: an import that fails registers none, as the
        # package's import failing did, and the next use tries again.
        modules = [importlib.import_module(f"{__name__}.{name}") for name in BUILTINS]
        for module in modules:
            _add(module)
        _builtins_loaded = True


def register(module: ModuleType) -> None:
    """Add an extractor; its NAME must be new."""
    _load_builtins()
    _add(module)


def _add(module: ModuleType) -> None:
    for attr in ("NAME", "VERSION", "SUFFIXES", "MAGIC", "extract"):
        if not hasattr(module, attr):
            raise TypeError(f"extractor {module.__name__} lacks {attr}")
    if module.NAME in _REGISTRY:
        raise ValueError(f"an extractor named {module.NAME!r} is already registered")
    _REGISTRY[module.NAME] = module


def unregister(name: str) -> None:
    """Remove an extractor by NAME (plugins and tests)."""
    _load_builtins()
    _REGISTRY.pop(name, None)


def builtins_loaded() -> bool:
    """Whether the registry has been used (and so may hold plugins beside the built-ins)."""
    return _builtins_loaded


def registered() -> dict[str, ModuleType]:
    _load_builtins()
    return dict(_REGISTRY)


def sniff(head: bytes) -> ModuleType | None:
    """The extractor whose magic bytes open ``head``, if any."""
    _load_builtins()
    for module in _REGISTRY.values():
        if any(head.startswith(magic) for magic in module.MAGIC):
            return module
        claims = getattr(module, "claims", None)
        if claims is not None and claims(head):
            return module
    return None


def runs_in_process(name: str) -> bool:
    """Whether the extractor ``name``'s suffix chooses runs in this process: text a parser reads
    in bounded time, not a binary format parsed in a killable worker (``ISOLATE``), whose hang
    lasts until its time-out. An unknown suffix: False. (The bytes may still choose another.)"""
    module = _by_suffix(name)
    return module is not None and not getattr(module, "ISOLATE", False)


def _by_suffix(name: str) -> ModuleType | None:
    """The extractor registered for ``name``'s suffix, if any."""
    _load_builtins()
    suffix = PurePath(name).suffix.lower()
    return next((module for module in _REGISTRY.values() if suffix in module.SUFFIXES), None)


def for_bytes(head: bytes, name: str) -> ModuleType:
    """Choose the extractor for a file from its first bytes, then its suffix.

    A file with no real suffix (``LICENSE``, ``Apache-2.0``) whose bytes read as text is
    text.

    Raises:
        NotADocument: nothing claims the bytes or the suffix: the file is no document citeline
            reads (an archive, source code, a file of no known type), and the reason says what
            it is (an UnsupportedType: callers that only ask "can it be read?" are unchanged).
    """
    by_magic = sniff(head)  # loads the built-ins
    by_suffix = _by_suffix(name)
    # A suffix may refine a magic that several kinds share (.msg is one kind of OLE2 file):
    # the container's directory that would tell them apart may lie past ``head``.
    refines = getattr(by_suffix, "REFINES", None)
    if refines and head.startswith(refines):
        return by_suffix
    if by_magic is not None:
        return by_magic
    if by_suffix is not None:
        return by_suffix
    # LICENSE, README, Apache-2.0: plain text under a name without a real suffix.
    if has_no_real_suffix(name) and looks_like_text(head):
        from citeline.extractors import text

        return text
    raise NotADocument(what_it_is(head, name))

