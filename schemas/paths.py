"""How file names are stored: as UTF-8 text, with the bytes of a name that is not UTF-8 escaped.

A path column is text, but a POSIX file name is bytes; the index stores ``escape(name)``
and finds the file again with ``os_path(stored)``. The escaping is one-to-one: a backslash
that would read as an escape is escaped itself, so ``caf\xe9.md`` written with a backslash and
``caf`` + byte 0xE9 + ``.md`` are two stored names (one replaced the other). A name
that is UTF-8 and holds no such backslash is stored as it is, as it always was.
"""
from __future__ import annotations

import re
from pathlib import Path

# The escapes ``escape`` writes: \xNN for a byte of a name that is not UTF-8 (0x80-0xFF), and
# \x5c for a backslash of the name that would otherwise read as one of them.
_ESCAPE = re.compile(r"\\x(5c|[89a-f][0-9a-f])")
_READS_AS_ESCAPE = re.compile(r"\\(?=x(?:5c|[89a-f][0-9a-f]))")


def escape(name: str) -> str:
    r"""``name`` as text the index can store: each byte that is not UTF-8 becomes ``\xNN``,
    and a backslash that would read as such an escape ``\x5c``.

    File names are bytes; Python hands the undecodable ones over as lone surrogates,
    which no UTF-8 column (nor ``str.encode``) accepts.

    >>> escape("caf\udce9.md"), escape(r"caf\xe9.md"), escape(r"a\b.md")
    ('caf\\xe9.md', 'caf\\x5cxe9.md', 'a\\b.md')
    """
    unambiguous = _READS_AS_ESCAPE.sub(r"\\x5c", name)
    return unambiguous.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def os_path(stored: str) -> str:
    r"""The file system's (or object store's) name for a stored (``escape``d) path.

    >>> os_path(r"/docs/caf\xe9.md") == "/docs/caf\udce9.md", os_path(r"/docs/caf\x5cxe9.md")
    (True, '/docs/caf\\xe9.md')
    """
    if "\\x" not in stored:
        return stored
    return _ESCAPE.sub(_unescaped, stored)


def _unescaped(escaped: re.Match[str]) -> str:
    value = int(escaped.group(1), 16)
    return "\\" if value == 0x5C else chr(0xDC00 + value)  # a lone surrogate: surrogateescape's byte


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
