"""Readers' leases: the chunks table a live reader (``citeline api``) serves, so ``gc`` keeps it.

``gc`` dropped the retired table a running service still read: every ``/search`` was a 500.
A reader writes ``<index>/.citeline-readers/<id>.json`` naming its
table and rewrites it every ``RENEW_S``; ``gc`` keeps every table named by a lease
written in the last ``GRACE_S`` seconds (by the storage's clock: the file's modification
time against a marker ``gc`` writes itself, so a reader's clock never matters). A killed
reader's lease simply goes stale.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid

import fsspec

READERS = ".citeline-readers"
RENEW_S = 10.0
GRACE_S = 60.0  # several missed renewals before a reader is taken for dead


def _fs_and_root(uri: str) -> tuple[fsspec.AbstractFileSystem, str]:
    if "://" in uri and not uri.startswith("file://"):
        protocol = uri.split("://", 1)[0]
        return fsspec.filesystem(protocol, use_listings_cache=False), f"{uri.rstrip('/')}/{READERS}"
    return fsspec.filesystem("file"), os.path.join(os.path.expanduser(uri.removeprefix("file://")), READERS)


class ReaderLease:
    """This process's lease on the table it reads; :meth:`hold` is called as often as one likes."""

    def __init__(self, uri: str):
        self.uri = uri
        self.fs, root = _fs_and_root(uri)
        self.path = f"{root}/{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
        self._held: tuple[str, float] | None = None  # (table, time.monotonic() when written)

    def hold(self, table: str | None) -> None:
        """Name ``table`` as read by this process (rewritten when it changes or every RENEW_S);
        None releases the lease."""
        if table is None:
            self.release()
            return
        if self._held and self._held[0] == table and time.monotonic() - self._held[1] < RENEW_S:
            return
        body = json.dumps({"table": table, "holder": f"{os.getpid()} on {socket.gethostname()}"})
        self.fs.makedirs(self.path.rsplit("/", 1)[0], exist_ok=True)
        self.fs.pipe_file(self.path, body.encode())
        self._held = (table, time.monotonic())

    def release(self) -> None:
        if self._held is not None:
            self._held = None
            try:
                self.fs.rm_file(self.path)
            except FileNotFoundError:
                pass


def read_tables(uri: str, grace_s: float = GRACE_S) -> dict[str, str]:
    """The tables live readers hold: {table: holder}, from leases renewed in the last ``grace_s``."""
    fs, root = _fs_and_root(uri)
    try:
        entries = fs.ls(root, detail=True)
    except FileNotFoundError:
        return {}
    marker = f"{root}/.now"
    fs.pipe_file(marker, b"")  # the storage's own clock, as it stamps a lease
    now = _mtime(fs.info(marker))
    held: dict[str, str] = {}
    for entry in entries:
        name = entry["name"]
        if not name.endswith(".json") or now - _mtime(entry) > grace_s:
            continue
        try:
            body = json.loads(fs.cat_file(name))
        except (FileNotFoundError, ValueError):  # released in between, or not ours
            continue
        if isinstance(body, dict) and isinstance(body.get("table"), str):
            held[body["table"]] = str(body.get("holder", "a reader"))
    return held


def _mtime(info: dict) -> float:
    value = info.get("mtime", info.get("LastModified", info.get("last_modified")))
    return value.timestamp() if hasattr(value, "timestamp") else float(value or 0)
