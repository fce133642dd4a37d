"""One writer per index: LanceDB duplicates rows when two processes upsert the same keys."""
from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from citeline.index.lease import lease_lock
from citeline.schemas.errors import IndexBusy, IndexUnwritable, UnsupportedStore

LOCK_NAME = ".citeline-writer.lock"


def is_local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


def check_writable(uri: str) -> None:
    """Refuse, before anything is read or written, an index where no writer lock keeps
    writers single: an object store other than S3 (gs://, az://, s3+ddb:// …).

    Two writers of one LanceDB table both commit their ``merge_insert`` of the same keys,
    whatever the store (docs/benchmarks.md §10); the lock object that prevents it needs
    conditional writes, implemented here for S3 only.

    Raises:
        UnsupportedStore: ``uri`` is on another object store.

    >>> check_writable("s3://bucket/index"), check_writable("/data/index")
    (None, None)
    >>> check_writable("gs://bucket/index")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    citeline.schemas.errors.UnsupportedStore: citeline writes an index only on a local folder or on s3://...
    """
    # memory:// lives in one process, where the process's write lock (runtime/handles.py) suffices.
    if is_local(uri) or uri.startswith(("s3://", "memory://")):
        return
    scheme = uri.split("://", 1)[0]
    raise UnsupportedStore(f"citeline writes an index only on a local folder or on s3://bucket/prefix (AWS S3 or an "
                           f"S3-compatible server, AWS_ENDPOINT_URL): its one-writer lock needs S3's conditional "
                           f"writes, and on {scheme}:// two writers would duplicate rows (got {uri!r})")


def check_local_writable(uri: str) -> None:
    """Refuse at once, before a flow or a Prefect server starts, an existing local index
    whose folder cannot be written (a read-only mount; root too is refused by the kernel).

    Raises:
        IndexUnwritable: the folder exists and cannot be written.
    """
    if not is_local(uri):
        return
    folder = Path(uri.removeprefix("file://")).expanduser()
    if folder.is_dir() and not os.access(folder, os.W_OK):
        reason = "a read-only file system" if _read_only_mount(folder) else "no write permission"
        raise IndexUnwritable(f"the index at {folder} cannot be written ({reason}): index, retry, reindex, rm, gc, "
                              "calibrate and check --repair write to it; status, search, ask and check only read")


def _read_only_mount(folder: Path) -> bool:
    return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)


@contextmanager
def writer_lock(uri: str, wait_s: float = 0.0) -> Iterator[None]:
    """Hold the index's writer lock, waiting up to ``wait_s`` seconds for it.

    The lock is an advisory ``flock`` on a file inside a local index folder, released
    by the kernel when the holder dies (kill -9 included). An index on S3 is guarded by
    a lock object with a lease instead (index/lease.py). Other object stores have no
    lock and are refused (``check_writable``).

    Raises:
        IndexBusy: another process holds the lock after ``wait_s``.
        IndexUnwritable: the folder cannot be created or the lock file opened.
        UnsupportedStore: as ``check_writable``.
    """
    check_writable(uri)
    if uri.startswith("s3://"):
        with lease_lock(uri, wait_s):
            yield
        return
    if not is_local(uri):  # memory://
        yield
        return
    fd = _open_lock_file(Path(uri.removeprefix("file://")))
    try:
        _acquire(fd, uri, wait_s)
        try:  # who holds it, for the next writer's "being written by process N"
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as exc:  # a full disk refuses even these few bytes: one line, not a traceback
            lock = Path(uri.removeprefix("file://")) / LOCK_NAME
            raise IndexUnwritable(f"cannot write an index at {lock.parent}: {exc.strerror} ({lock})") from None
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _open_lock_file(folder: Path) -> int:
    """The lock file's descriptor, the index folder created first.

    Raises:
        IndexUnwritable: the folder cannot be created or the file opened (the user's --db, not a bug).
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise IndexUnwritable(f"cannot write an index at {folder}: {exc.strerror} ({exc.filename})") from None


def _acquire(fd: int, uri: str, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
                raise IndexBusy(
                    f"the index at {uri} is being written by process {holder}; "
                    "wait for it to finish (or pass --wait SECONDS)"
                ) from None
            time.sleep(0.2)
