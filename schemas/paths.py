"""How file names are stored: as UTF-8 text, with the bytes of a name that is not UTF-8 escaped.

A path column is text, but a POSIX file name is bytes; the index stores ``escape(name)``
and finds the file again with ``os_path(stored)``.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

# The \xNN that ``escape`` writes for a byte of a name that is not UTF-8 (0x80-0xFF).
_ESCAPED_BYTE = re.compile(r"\\x([89a-f][0-9a-f])")


def escape(name: str) -> str:
    r"""``name`` as text the index can store: each byte that is not UTF-8 becomes ``\xNN``.

    File names are bytes; Python hands the undecodable ones over as lone surrogates,
    which no UTF-8 column (nor ``str.encode``) accepts.

    >>> escape("caf\udce9.md")
    'caf\\xe9.md'
    """
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def os_path(stored: str) -> str:
    r"""The file system's name for a stored (``escape``d) path.

    The stored text itself when such a file exists (a name may hold a literal
    ``\xe9``), else the name with its escaped bytes restored.

    >>> os_path(r"/no/such/caf\xe9.md") == "/no/such/caf\udce9.md"
    True
    """
    if "\\x" not in stored or os.path.lexists(stored):
        return stored
    return _ESCAPED_BYTE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), stored)


def is_under(source: str, folder: str) -> bool:
    """Whether the path ``source`` is ``folder`` or lies inside it (whole components only).

    >>> is_under("/docs/2024/q1.md", "/docs"), is_under("/docs2/q1.md", "/docs")
    (True, False)
    """
    return source == folder or source.startswith(folder.rstrip("/") + "/")


def is_remote(path: str) -> bool:
    """Whether ``path`` is a URL on object storage (``s3://bucket/key``), not a local path.

    >>> is_remote("s3://bucket/docs"), is_remote("/docs"), is_remote("file:///docs")
    (True, False, False)
    """
    return "://" in path and not path.startswith("file://")


def absolute(path: str) -> str:
    """A local path made absolute (``~`` expanded, links resolved); an object-storage URL as
    given, less a trailing slash. Every command that names a synced file or folder uses it,
    so ``rm``, ``retry`` and ``serve`` find what ``index`` stored.

    >>> absolute("s3://bucket/docs/"), absolute("/docs/../docs/a.md")
    ('s3://bucket/docs', '/docs/a.md')
    """
    if is_remote(path):
        return path.rstrip("/")
    return str(Path(path).expanduser().resolve())
