"""Which exceptions mean the storage under the index failed (disk full, I/O), not citeline."""
from __future__ import annotations

# LanceDB's Rust core reports file-system failures as RuntimeError("lance error:
# LanceError(IO): No space left on device (os error 28), …"), not as OSError; observed
# on a full tmpfs (tests/flows/test_disk_full.py).
_LANCE_IO = "LanceError(IO)"


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
