"""``citeline status`` without opening LanceDB when nothing changed since the last one.

``import lancedb`` alone costs 0.7-1.0 s here, most of a cold ``status``. The report is a
function of the index's tables, so it is kept beside them in ``.citeline-status.json``
under a key that any commit changes: every table folder's ``_versions`` listing (LanceDB
writes one manifest per commit and never rewrites one; name, size, mtime and inode of
each, so a table dropped and re-created with the same version numbers still differs),
plus whatever else the report is computed from (the extractors' versions, the report's
format). A key computed *before* the tables are read and stored with what was read can
only be older than the data, never newer: a commit in between makes the next status miss.

Local indexes only: listing an object store's manifests would cost what it saves. The
file is a cache: unreadable, corrupt or unwritable means computed again, never an error.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from citeline.schemas.health import HEALTH

CACHE_FILE = ".citeline-status.json"
# Bumped whenever the report's fields or their meaning change, so an upgrade never shows
# a report an older citeline computed.
REPORT_FORMAT = 1


def local_dir(uri: str) -> Path | None:
    """The folder of a local index URI; None for object storage.

    >>> local_dir("s3://bucket/index") is None
    True
    >>> local_dir("file:///srv/index")
    PosixPath('/srv/index')
    """
    if "://" in uri and not uri.startswith("file://"):
        return None
    return Path(uri.removeprefix("file://")).expanduser()


def cache_key(index_dir: Path, inputs: dict) -> str | None:
    """A digest of every table's commits and of ``inputs``; None when the folder cannot be listed."""
    digest = hashlib.sha256(json.dumps([REPORT_FORMAT, inputs], sort_keys=True).encode())
    try:
        # not the health notes, which every sync writes and the report does not read
        tables = sorted(entry.name for entry in os.scandir(index_dir)
                        if entry.name.endswith(".lance") and entry.is_dir() and entry.name != f"{HEALTH}.lance")
        for table in tables:
            with os.scandir(index_dir / table / "_versions") as listing:
                for entry in sorted(listing, key=lambda e: e.name):
                    st = entry.stat()
                    digest.update(f"{table}/{entry.name}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}\n".encode())
    except OSError:
        return None
    return digest.hexdigest() if tables else None


def load(index_dir: Path, key: str) -> dict | None:
    """The report stored under ``key``, or None (no file, another key, unreadable)."""
    try:
        stored = json.loads((index_dir / CACHE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("key") != key or not isinstance(stored.get("report"), dict):
        return None
    return stored["report"]


def save(index_dir: Path, key: str, report: dict) -> None:
    """Store ``report`` under ``key``: whole or not at all (a temporary file renamed over
    the old one), and silently not when the folder is read-only or full. Temporary files a
    killed ``status`` left behind go first (one still being written by another ``status``
    makes that one's rename fail: it stores nothing, as if the disk were full)."""
    for leftover in index_dir.glob(f"{CACHE_FILE}*.tmp"):
        try:
            leftover.unlink()
        except OSError:
            pass
    try:
        handle, temporary = tempfile.mkstemp(dir=index_dir, prefix=CACHE_FILE, suffix=".tmp")
    except OSError:
        return
    try:
        os.fchmod(handle, 0o644)  # readable by whoever may read the tables (mkstemp makes it 0600)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({"key": key, "report": report}, out)
        os.replace(temporary, index_dir / CACHE_FILE)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
