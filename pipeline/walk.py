"""Which files of a folder are documents."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SourceFile:
    source: str  # absolute, resolved
    root: str
    path: str  # relative to root, with forward slashes


def list_files(root: str | Path) -> list[SourceFile]:
    """Every regular file under ``root`` (or ``root`` itself if it is a file), sorted.

    Hidden files and folders (a leading dot: .git, .citeline) are skipped, and so is a
    symlink whose target leaves the root (indexing a folder must not read the machine),
    dangles, or loops; so are FIFOs, sockets and devices.

    Raises:
        FileNotFoundError: ``root`` does not exist.
    """
    base = Path(root).expanduser().resolve(strict=True)
    if base.is_file():
        return [SourceFile(str(base), str(base.parent), base.name)]
    found = []
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            candidate = Path(folder) / name
            if not _inside_and_regular(candidate, base):
                continue
            found.append(SourceFile(str(candidate), str(base), candidate.relative_to(base).as_posix()))
    return found


def _inside_and_regular(candidate: Path, base: Path) -> bool:
    """Whether ``candidate`` resolves to a regular file under ``base``."""
    try:
        real = candidate.resolve()
        return real.is_relative_to(base) and real.is_file()
    except (OSError, RuntimeError):  # a symlink loop: RuntimeError up to Python 3.12, OSError after
        return False
