"""Which exceptions mean the storage under the index failed (disk full, I/O), not citeline;
and the failpoints where a test makes it fail, or kills the writer, at a chosen instant."""
from __future__ import annotations

import errno
import os
import re
import signal
from contextlib import contextmanager
from typing import Iterator

from citeline.schemas.errors import StorageRefused

# LanceDB's Rust core reports file-system failures as RuntimeError("lance error:
# LanceError(IO): No space left on device (os error 28), …"), not as OSError; observed
# on a full tmpfs (tests/flows/test_disk_full.py).
_LANCE_IO = "LanceError(IO)"

# Failpoints (as etcd and TiKV have them): ``CITELINE_FAILPOINT="name:action[,name:action]"``,
# read once at import. ``kill`` ends the process with SIGKILL at that point (nothing after it
# runs, as with kill -9 or a power cut); ``enospc`` raises the OSError a full disk raises;
# ``lance-enospc`` raises LanceDB's wording of it; ``crash`` raises ``Crashed``, which nothing
# catches, so a run in a test's own process stops there as a killed one would. Unset, a failpoint is one dict lookup on
# an empty dict. The points and what a re-sync does after each: docs/reliability.md.
FAILPOINT_ENV = "CITELINE_FAILPOINT"
ACTIONS = ("kill", "enospc", "lance-enospc", "crash")


def _armed(spec: str | None) -> dict[str, str]:
    """The failpoints an environment value arms: name -> action.

    >>> _armed("write.between:kill, rm.between:enospc")
    {'write.between': 'kill', 'rm.between': 'enospc'}
    >>> _armed(None)
    {}
    """
    points = {}
    for item in filter(None, (part.strip() for part in (spec or "").split(","))):
        name, _, action = item.partition(":")
        if action not in ACTIONS:
            raise ValueError(f"{FAILPOINT_ENV}: {item!r} names no action among {', '.join(ACTIONS)}")
        points[name] = action
    return points


class Crashed(Exception):
    """A failpoint's ``crash``: no storage error, so no handler keeps it and the run stops here."""


_ARMED = _armed(os.environ.get(FAILPOINT_ENV))


def failpoint(name: str) -> None:
    """Fail here if ``CITELINE_FAILPOINT`` arms ``name`` (see above); otherwise nothing."""
    if _ARMED and name in _ARMED:
        _fire(name, _ARMED[name])


def _fire(name: str, action: str) -> None:
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "crash":
        raise Crashed(f"failpoint {name}")
    if action == "enospc":
        raise OSError(errno.ENOSPC, f"No space left on device (failpoint {name})")
    raise RuntimeError(f"lance error: LanceError(IO): No space left on device (os error 28), "
                       f"/root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/lance-file-0.0.0/src/"
                       f"structural.rs:191:9 (failpoint {name})")


# LanceDB's wording around the OS error: its prefix, and the Rust source it was raised in.
_LANCE_PREFIX = re.compile(r"^lance error: (LanceError\(IO\): )?")
_RUST_SOURCE = re.compile(r",?\s*[^\s,]*\.rs:\d+:\d+")


def storage_reason(exc: BaseException) -> str:
    """A storage error as a person reads it: the cause (and the path an OSError names), without
    LanceDB's prefix or the Rust source file it was raised in.

    >>> storage_reason(RuntimeError("lance error: LanceError(IO): No space left on device (os error 28), "
    ...                             "/root/.cargo/registry/src/x/lance-file/src/structural.rs:191:9"))
    'No space left on device (os error 28)'
    >>> storage_reason(OSError(28, "No space left on device", "/idx/documents.lance"))
    'No space left on device: /idx/documents.lance'
    """
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return _RUST_SOURCE.sub("", _LANCE_PREFIX.sub("", str(exc))).strip()


def is_storage_error(exc: BaseException) -> bool:
    """True for an OSError, or LanceDB's wrapping of one.

    >>> is_storage_error(OSError(28, "No space left on device"))
    True
    >>> is_storage_error(RuntimeError("lance error: LanceError(IO): No space left on device (os error 28)"))
    True
    >>> is_storage_error(RuntimeError("lance error: Invalid user input: no column named x"))
    False
    """
    return isinstance(exc, OSError) or (isinstance(exc, RuntimeError) and _LANCE_IO in str(exc))


def refused(db: str, exc: BaseException, kept: str = "") -> StorageRefused:
    """The one line a command says when the storage under the index at ``db`` refused a write:
    the cause and path, what was kept (``kept``), and what to do.

    >>> print(refused("/idx", PermissionError(13, "Permission denied", "/idx/meta.lance")))
    the index at /idx could not be written: Permission denied: /idx/meta.lance. Give this user write access there and run it again
    >>> print(refused("/idx", OSError(28, "No space left on device"), "; nothing was removed"))
    the index at /idx could not be written: No space left on device; nothing was removed. Free the space and run it again
    """
    reason = storage_reason(exc)
    access = isinstance(exc, PermissionError) or "Permission denied" in reason or "Read-only file system" in reason
    remedy = "Give this user write access there and run it again" if access else "Free the space and run it again"
    return StorageRefused(f"the index at {db} could not be written: {reason}{kept}. {remedy}")


@contextmanager
def set_up_writes(db: str, kept: str = "; nothing was indexed or forgotten") -> Iterator[None]:
    """A run's writes before its documents (the table created, migrations, the sweep, the
    synced root): a storage error becomes ``StorageRefused``, one line naming the cause and
    the index, instead of a traceback through Prefect's engine.

    >>> with set_up_writes("/idx"):
    ...     raise OSError(28, "No space left on device", "/idx/meta.lance")
    Traceback (most recent call last):
    citeline.schemas.errors.StorageRefused: the index at /idx could not be written: No space left on device: /idx/meta.lance; nothing was indexed or forgotten. Free the space and run it again
    """
    try:
        yield
    except Exception as exc:
        if not is_storage_error(exc):
            raise
        raise refused(db, exc, kept) from None
