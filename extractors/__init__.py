"""Extractor registry: magic bytes first, file suffix second.

An extractor is a module with ``NAME``, ``VERSION`` (bump when its output for the
same bytes changes), ``SUFFIXES``, ``MAGIC`` (byte prefixes it claims, may be
empty) and ``extract(data, name, options) -> Canonical``.
"""
from __future__ import annotations

from pathlib import PurePath
from types import ModuleType

from citeline.schemas.errors import UnsupportedType

from citeline.extractors import calc, delimited, docx, epub, html, media, ocr, odt, pdf, pptx, sheet, text
from citeline.extractors.sniff import describe, has_no_real_suffix, looks_like_text

_REGISTRY: dict[str, ModuleType] = {}


def register(module: ModuleType) -> None:
    """Add an extractor; its NAME must be new."""
    for attr in ("NAME", "VERSION", "SUFFIXES", "MAGIC", "extract"):
        if not hasattr(module, attr):
            raise TypeError(f"extractor {module.__name__} lacks {attr}")
    if module.NAME in _REGISTRY:
        raise ValueError(f"an extractor named {module.NAME!r} is already registered")
    _REGISTRY[module.NAME] = module


def unregister(name: str) -> None:
    """Remove an extractor by NAME (plugins and tests)."""
    _REGISTRY.pop(name, None)


def registered() -> dict[str, ModuleType]:
    return dict(_REGISTRY)


def sniff(head: bytes) -> ModuleType | None:
    """The extractor whose magic bytes open ``head``, if any."""
    for module in _REGISTRY.values():
        if any(head.startswith(magic) for magic in module.MAGIC):
            return module
        claims = getattr(module, "claims", None)
        if claims is not None and claims(head):
            return module
    return None


def for_bytes(head: bytes, name: str) -> ModuleType:
    """Choose the extractor for a file from its first bytes, then its suffix.

    A file with no real suffix (``LICENSE``, ``Apache-2.0``) whose bytes read as text is
    text.

    Raises:
        UnsupportedType: nothing claims the bytes or the suffix; the reason is one line
            naming what the bytes look like.
    """
    by_magic = sniff(head)
    if by_magic is not None:
        return by_magic
    suffix = PurePath(name).suffix.lower()
    for module in _REGISTRY.values():
        if suffix in module.SUFFIXES:
            return module
    # LICENSE, README, Apache-2.0: plain text under a name without a real suffix.
    if has_no_real_suffix(name) and looks_like_text(head):
        return text
    raise UnsupportedType(describe(head, name))  # the kind, unsupported-type, says the rest


# Magic-sniffed binary formats first; text (no magic) last, reached by suffix only.
register(pdf)
register(ocr)
register(sheet)
register(calc)
register(odt)
register(epub)
register(docx)
register(pptx)
register(media)
register(html)
register(delimited)
register(text)
