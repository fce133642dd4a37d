"""Which files of a folder are documents."""
from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

from citeline.pipeline import objects
from citeline.schemas.errors import Unlistable
from citeline.schemas.paths import escape, is_remote

IGNORE_FILE = ".citelineignore"
# Folders no one means to index: version control, dependencies, caches. Hidden folders
# (.git, .venv) are skipped anyway; these catch the visible ones, and a ``!node_modules/``
# line in .citelineignore (or --include) brings one back.
DEFAULT_EXCLUDE = ("node_modules/", "__pycache__/", "venv/", "site-packages/", "bower_components/",
                   ".git/", ".hg/", ".svn/", ".venv/", ".tox/")


@dataclass(frozen=True)
class FileStat:
    """What a listing saw of a file, enough to tell it unchanged without reading it."""

    size: int
    mtime_ns: int
    inode: int
    device: int

    @classmethod
    def of(cls, st: os.stat_result) -> "FileStat":
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)

    @classmethod
    def of_object(cls, info: dict) -> "FileStat":
        """An object's stat: it has no inode, so its ETag (which changes with every new
        version of its bytes) fills that column, as a number; device 0 marks an object."""
        modified = info.get("LastModified")
        mtime_ns = int(modified.timestamp()) * 10**9 + modified.microsecond * 1000 if modified is not None else 0
        return cls(int(info["size"]), mtime_ns, etag_number(info.get("ETag", "")), 0)


def etag_number(etag: str) -> int:
    """An ETag as a non-negative int64 (60 bits of its sha256), to store where an inode goes."""
    return int(hashlib.sha256(etag.strip('"').encode()).hexdigest()[:15], 16)


@dataclass(frozen=True)
class SourceFile:
    """A file to index; names are stored escaped (``escape``): read it through ``os_path``."""

    source: str  # absolute, resolved
    root: str
    path: str  # relative to root, with forward slashes
    stat: FileStat | None = None  # as listed; None when the file was named by a record


@dataclass(frozen=True)
class Selection:
    """Which files of a folder to index: gitignore-style patterns, relative to the folder.

    ``exclude`` lines follow the defaults and the folder's ``.citelineignore``, so later
    lines win as in a .gitignore (``!pattern`` re-includes). With ``include`` given, only
    files matching one of its patterns are indexed.
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


def check_patterns(selection: Selection) -> None:
    """Raise ValueError, naming the pattern, when one of ``selection`` cannot be parsed."""
    for pattern in (*selection.include, *selection.exclude):
        try:
            pathspec.GitIgnoreSpec.from_lines([pattern])
        except ValueError as exc:
            raise ValueError(f"{pattern!r} is not a gitignore-style pattern: {exc}") from None


@dataclass(frozen=True)
class Unlisted:
    """A folder (or a file) the listing could not read: its documents are not known to be gone."""

    path: str  # absolute, escaped, as the index stores sources
    reason: str  # the OS's words: "Permission denied", "Input/output error"


@dataclass(frozen=True)
class Listing:
    """What a listing found, and where it could not look (``list_folder``)."""

    files: list[SourceFile]
    unlisted: tuple[Unlisted, ...] = ()
    left_out: tuple[str, ...] = ()  # folders of ``leave_out`` found under the root, not walked


def list_files(root: str | Path, selection: Selection = Selection()) -> list[SourceFile]:
    """The files of ``list_folder``, for readers that forget nothing (what could not be listed is left out)."""
    return list_folder(root, selection).files


def list_folder(root: str | Path, selection: Selection = Selection(), leave_out: Iterable[str] = ()) -> Listing:
    """Every regular file under ``root`` (or ``root`` itself if it is a file) that ``selection`` keeps, sorted,
    and every folder or file under it that could not be read.

    Names that are not UTF-8 are ``escape``d, so one such file cannot stop a sync.
    Hidden files and folders (a leading dot: .git, .citeline) are skipped, and so is
    every symlink: one can lead out of the root (indexing a folder must not read the
    machine), dangle or loop, and one inside the root only repeats its target; so are
    FIFOs, sockets and devices. Sources are read the same way (pipeline/beneath.py).
    Excluded folders are not walked at all, and no file is opened here: each is
    ``lstat``ed once, and that stat is kept to skip unchanged files (pipeline/plan.py).

    A folder that cannot be listed (no permission, an I/O error, a share gone or a folder
    removed mid-walk) is not empty: it is returned in ``unlisted``, so a sync forgets
    nothing under it (pipeline/plan.py); so is a file whose ``lstat`` fails for another
    reason than being gone.

    The folders of ``leave_out`` (absolute paths: the index being written, Prefect's home)
    are never walked, whatever the patterns say, and are returned in ``left_out`` when met.

    Raises:
        FileNotFoundError: ``root`` does not exist.
        ValueError: a pattern of ``selection`` or of ``.citelineignore`` is malformed.
        Unlistable: ``root``'s ``.citelineignore`` cannot be read.
    """
    if is_remote(str(root)):
        return Listing(list_remote(str(root), selection))
    base = Path(root).expanduser().resolve(strict=True)
    if base.is_file():  # named on its own: indexed whatever the patterns say
        st = base.lstat()
        return Listing([SourceFile(escape(str(base)), escape(str(base.parent)), escape(base.name), FileStat.of(st))])
    excluded, included = _specs(base, selection)
    found, unlisted, met = [], [], []
    never = {os.path.realpath(os.path.expanduser(p)) for p in leave_out}

    def failed(exc: OSError) -> None:  # os.walk's onerror: it then leaves that folder out
        unlisted.append(Unlisted(escape(str(exc.filename or base)), exc.strerror or type(exc).__name__))

    for folder, dirs, files in os.walk(base, onerror=failed, followlinks=False):
        rel = Path(folder).relative_to(base).as_posix()
        prefix = "" if rel == "." else rel + "/"
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not excluded.match_file(f"{prefix}{d}/"))
        if never:
            met += [escape(os.path.join(folder, d)) for d in dirs if os.path.join(folder, d) in never]
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in never]
        for name in sorted(files):
            if name.startswith(".") or excluded.match_file(prefix + name):
                continue
            if included is not None and not included.match_file(prefix + name):
                continue
            candidate = Path(folder) / name
            try:
                st = _regular_stat(candidate)
            except OSError as exc:
                failed(exc)
                continue
            if st is None:
                continue
            found.append(SourceFile(escape(str(candidate)), escape(str(base)), escape(prefix + name), FileStat.of(st)))
    return Listing(found, tuple(unlisted), tuple(met))


def list_remote(root: str, selection: Selection = Selection()) -> list[SourceFile]:
    """``list_files`` for a prefix on object storage (``s3://bucket/docs``), or one object.

    Objects have no symlinks or devices, and no folders: a key's parents play the
    folders' part, so a hidden or excluded parent hides every key under it, as
    ``os.walk`` pruning does locally. The listing's own stat (size, LastModified,
    ETag) is kept, so no object is read here either.

    Raises:
        FileNotFoundError: nothing is stored at ``root``.
        ValueError: a pattern of ``selection`` or of ``.citelineignore`` is malformed.
    """
    root = root.rstrip("/")
    info = objects.object_info(root)
    if info is not None:  # named on its own, as a single local file is
        parent, _, name = root.rpartition("/")
        return [SourceFile(escape(root), escape(parent), escape(name), FileStat.of_object(info))]
    excluded, included = _object_specs(root, selection)
    found = []
    for relative, info in objects.list_objects(root):
        if not _object_kept(relative, excluded, included):
            continue
        found.append(SourceFile(escape(f"{root}/{relative}"), escape(root), escape(relative), FileStat.of_object(info)))
    return found


def _object_kept(relative: str, excluded: pathspec.PathSpec, included: pathspec.PathSpec | None) -> bool:
    """Whether an object's key (relative to the synced prefix) survives hiding and the patterns."""
    parts = PurePosixPath(relative).parts
    if any(part.startswith(".") for part in parts):
        return False
    parents = ["/".join(parts[:i]) + "/" for i in range(1, len(parts))]
    if any(excluded.match_file(parent) for parent in parents) or excluded.match_file(relative):
        return False
    return included is None or included.match_file(relative)


def _object_specs(root: str, selection: Selection) -> tuple[pathspec.PathSpec, pathspec.PathSpec | None]:
    text = objects.read_text(f"{root}/{IGNORE_FILE}")
    lines = _checked_lines(f"{root}/{IGNORE_FILE}", text.splitlines()) if text is not None else []
    return _spec_pair(lines, selection)


def _specs(base: Path, selection: Selection) -> tuple[pathspec.PathSpec, pathspec.PathSpec | None]:
    """The exclude spec (defaults, then ``.citelineignore``, then ``--exclude``) and the include spec."""
    return _spec_pair(_ignore_file_lines(base), selection)


def _spec_pair(ignore_lines: list[str], selection: Selection) -> tuple[pathspec.PathSpec, pathspec.PathSpec | None]:
    lines = [*DEFAULT_EXCLUDE, *ignore_lines, *selection.exclude]
    included = pathspec.GitIgnoreSpec.from_lines(selection.include) if selection.include else None
    return pathspec.GitIgnoreSpec.from_lines(lines), included


def _ignore_file_lines(base: Path) -> list[str]:
    """The lines of ``base/.citelineignore``; none when it is missing or not a regular file."""
    path = base / IGNORE_FILE
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return []
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:  # read with the wrong patterns, the sync would forget what they keep
        raise Unlistable(f"{escape(str(path))}: cannot be read ({exc.strerror or exc}); nothing was "
                         "indexed or forgotten") from None
    return _checked_lines(str(path), lines)


def _checked_lines(where: str, lines: list[str]) -> list[str]:
    """``lines`` of an ignore file, each checked to be a pattern.

    Raises:
        ValueError: naming the file, line and pattern that is malformed.
    """
    for number, line in enumerate(lines, 1):
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except ValueError as exc:
            raise ValueError(f"{where}, line {number}: {line!r} is not a gitignore-style pattern: {exc}") from None
    return lines


def _regular_stat(candidate: Path) -> os.stat_result | None:
    """``candidate``'s own stat if it is a regular file (not a link to one); os.walk stays under ``base``.

    Raises:
        OSError: the file is there but cannot be stat'ed (EACCES, EIO): not gone.
    """
    try:
        st = candidate.lstat()
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):  # gone since the folder was listed
            return None
        raise
    return st if stat.S_ISREG(st.st_mode) else None
