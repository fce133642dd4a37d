"""Which files of a folder are documents."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from citeline.schemas.paths import escape


@dataclass(frozen=True)
class SourceFile:
    """A file to index; names are stored escaped (``escape``): read it through ``os_path``."""

    source: str  # absolute, resolved
    root: str
    path: str  # relative to root, with forward slashes


def list_files(root: str | Path) -> list[SourceFile]:
    """Every regular file under ``root`` (or ``root`` itself if it is a file), sorted.

    Names that are not UTF-8 are ``escape``d, so one such file cannot stop a sync.
    Hidden files and folders (a leading dot: .git, .citeline) are skipped, and so is
    every symlink: one can lead out of the root (indexing a folder must not read the
    machine), dangle or loop, and one inside the root only repeats its target; so are
    FIFOs, sockets and devices. Sources are read the same way (pipeline/beneath.py).

    Raises:
        FileNotFoundError: ``root`` does not exist.
    """
    base = Path(root).expanduser().resolve(strict=True)
    if base.is_file():
        return [SourceFile(escape(str(base)), escape(str(base.parent)), escape(base.name))]
    found = []
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            candidate = Path(folder) / name
            if not _inside_and_regular(candidate, base):
                continue
            found.append(SourceFile(escape(str(candidate)), escape(str(base)),
                                    escape(candidate.relative_to(base).as_posix())))
    return found


def _inside_and_regular(candidate: Path, base: Path) -> bool:
    """Whether ``candidate`` is itself a regular file (not a link to one); os.walk stays under ``base``."""
    try:
        return stat.S_ISREG(candidate.lstat().st_mode)
    except OSError:  # gone since the folder was listed
        return False
