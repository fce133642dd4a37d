"""Open a file under a folder so that no component of its path can be a symlink.

The listing skips symlinks, but a file can be swapped for one between the listing and
the read (or between two runs: ``citeline retry`` and ``check --repair`` read paths
stored long ago). Following it would index whatever it points at, outside the folder.
So sources are opened relative to the root's directory descriptor, refusing every
symlink on the way: with Linux's ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)``
(one system call, checked by the kernel), else one ``O_NOFOLLOW`` open per component,
each relative to the descriptor of the folder above it.
"""
from __future__ import annotations

import ctypes
import errno
import os
import sys

# Linux gave syscalls added since 5.1 one number on every architecture: openat2 is 437.
_SYS_OPENAT2 = 437
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class Escapes(OSError):
    """The path leaves the folder or goes through a symlink."""


def _libc_syscall():
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    call.restype = ctypes.c_long
    return call


_syscall = _libc_syscall()
# None until the first call finds out; False once the kernel (or a seccomp filter) refused it.
_has_openat2: bool | None = None if _syscall is not None else False


def open_beneath(root: str, relative: str) -> int:
    """A read-only, non-blocking descriptor of ``root/relative``, never through a symlink.

    Args:
        root: the folder, resolved when it was listed: no component of it may be a symlink now
            (a root swapped for a link to another tree is refused, as a subfolder is).
        relative: the file's path under ``root``; ``..`` and absolute paths are refused.

    Returns:
        An open file descriptor (the caller closes it).

    Raises:
        Escapes: a component is a symlink or the path leaves ``root``.
        OSError: anything else the open met (FileNotFoundError, PermissionError, …).
    """
    parts = relative.split(os.sep)
    if os.path.isabs(relative) or any(p in ("", ".", "..") for p in parts):
        raise Escapes(errno.EXDEV, "the path leaves the indexed folder", relative)
    folder = _open_root(root)
    try:
        if _has_openat2 is not False:
            fd = _openat2(folder, relative)
            if fd is not None:
                return fd
        return _open_by_component(folder, parts)
    finally:
        os.close(folder)


def _open_root(root: str) -> int:
    """The root's descriptor, walked from ``/`` with ``O_NOFOLLOW`` at every component: `retry`
    followed a synced root swapped for a link to another tree."""
    parts = [p for p in os.path.abspath(root).split(os.sep) if p]
    return _open_by_component(os.open(os.sep, _DIR_FLAGS), parts, last=_DIR_FLAGS, close=True)


def _openat2(folder: int, relative: str) -> int | None:
    """The kernel's own check; None where openat2 is unavailable (before Linux 5.6, seccomp)."""
    global _has_openat2
    how = _OpenHow(_FILE_FLAGS, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS)
    fd = _syscall(_SYS_OPENAT2, folder, os.fsencode(relative), ctypes.byref(how), ctypes.sizeof(how))
    if fd >= 0:
        _has_openat2 = True
        return fd
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EPERM) and not _has_openat2:
        _has_openat2 = False
        return None
    raise _error(code, relative)


def _open_by_component(folder: int, parts: list[str], last: int = _FILE_FLAGS, close: bool = False) -> int:
    """One ``O_NOFOLLOW`` open per component, each relative to the folder above it (``close``:
    ``folder`` is this call's to close); no component: ``folder`` itself."""
    current = folder if close else os.dup(folder)
    if not parts:
        return current
    try:
        for part in parts[:-1]:
            opened = _open_at(part, _DIR_FLAGS, current)
            os.close(current)
            current = opened
        return _open_at(parts[-1], last, current)
    finally:
        os.close(current)


def _open_at(name: str, flags: int, folder: int) -> int:
    try:
        return os.open(name, flags, dir_fd=folder)
    except OSError as exc:
        # O_DIRECTORY|O_NOFOLLOW on a link to a folder says ENOTDIR: a folder swapped for a link.
        code = errno.ELOOP if exc.errno == errno.ENOTDIR and flags == _DIR_FLAGS else exc.errno
        raise _error(code, name) from None


def _error(code: int, path: str) -> OSError:
    # ELOOP: a symlink met under NO_SYMLINKS/O_NOFOLLOW; EXDEV: resolution left the root.
    if code in (errno.ELOOP, errno.EXDEV):
        return Escapes(code, "the path goes through a symbolic link or leaves the indexed folder", path)
    return OSError(code, os.strerror(code), path)
