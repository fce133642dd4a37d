"""Errors. A DocumentError fails one document; anything else is a bug and stops the run."""
from __future__ import annotations


class CitelineError(Exception):
    """Base of every error citeline raises on purpose."""


class DocumentError(CitelineError):
    """Bad input: this document fails with a reason, the others go on."""

    kind = "unreadable"
    transient = False


class Unreadable(DocumentError):
    kind = "unreadable"


class Undecodable(DocumentError):
    kind = "undecodable"


class Encrypted(DocumentError):
    kind = "encrypted"


class NoText(DocumentError):
    kind = "no-text"


class TooLarge(DocumentError):
    kind = "too-large"


class UnsupportedType(DocumentError):
    kind = "unsupported-type"


class Vanished(DocumentError):
    """The file disappeared or changed while it was being read; the next run picks it up."""

    kind = "vanished"
    transient = True


class IndexMismatch(CitelineError):
    """The index was built with another embedding model, dimension or strategy."""


class IndexBusy(CitelineError):
    """Another process holds the index's writer lock."""
