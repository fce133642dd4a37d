"""Legacy Word (.doc) and PowerPoint (.ppt) files, converted by LibreOffice headless to .docx and
.pptx and read by those extractors (their ``Passage`` and ``Slide`` locators). Legacy Excel
(.xls) stays with calamine (extractors/calc.py), which reads it without a conversion.

The conversion runs ``soffice`` in a private temporary folder with its own user profile
(``-env:UserInstallation``), so concurrent conversions never share (and lock) one profile, in a
session of its own that is killed whole when the document's time limit passes; this module runs
in the killable worker (pipeline.isolate). LibreOffice comes from Debian's
``libreoffice-writer-nogui`` and ``libreoffice-impress-nogui`` (``make setup``); without it a
.doc fails ``unsupported-type`` saying so. Before this extractor a .doc or .ppt failed
"unsupported-type".
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path, PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, Encrypted, Timeout, UnsupportedType
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import one_line
from citeline.extractors.clean import Deadline
from citeline.extractors.ooxml import OLE2

NAME = "legacy-office"
VERSION = "1"
ISOLATE = True
SUFFIXES = (".doc", ".ppt", ".dot", ".pot", ".pps")
MAGIC: tuple[bytes, ...] = ()
# A file named .doc or .ppt whose bytes are OLE2 is converted here, not refused by the OLE2
# magic's extractor (calc): its directory may lie past the bytes the registry sniffs. Only the
# suffix decides: a .doc misnamed .docx still fails saying to save it as .docx.
REFINES = OLE2
_TARGETS = {"WordDocument": "docx", "PowerPoint Document": "pptx"}
_DEFAULT_S = 120.0  # a conversion with no document time limit still ends


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of a .doc or .ppt, through LibreOffice.

    Raises:
        Empty, Encrypted, UnsupportedType (no LibreOffice; an OLE2 file that is neither),
        Corrupt (LibreOffice cannot convert it), Timeout, and what the docx/pptx extractor raises.
    """
    from citeline.extractors import docx, pptx

    options = options or ExtractOptions()
    if not data:
        raise Empty("empty file (0 bytes)")
    target = _target(data, name)
    if "EncryptedPackage\0".encode("utf-16-le") in data:
        raise Encrypted("password-protected file: it cannot be read without the password")
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        raise UnsupportedType(f"a legacy Office file ({PurePath(name).suffix or 'OLE2'}): reading it needs "
                              "LibreOffice (soffice), which is not installed (make setup installs it)")
    deadline = Deadline(options.time_limit_s)
    converted = _convert(soffice, data, target, deadline.left() or _DEFAULT_S)
    module = docx if target == "docx" else pptx
    left = replace(options, time_limit_s=deadline.left() or options.time_limit_s)
    canonical = module.extract(converted, f"{PurePath(name).stem}.{target}", left)
    return replace(canonical, extractor=NAME, extractor_version=VERSION)


def _target(data: bytes, name: str) -> str:
    suffix = PurePath(name).suffix.lower()
    if not data.startswith(OLE2):
        raise Corrupt(f"not a legacy Office file: a {suffix or 'file'} that is not an OLE2 container")
    for stream, target in _TARGETS.items():
        if (stream + "\0").encode("utf-16-le") in data:
            return target
    raise UnsupportedType(f"an OLE2 file{f' named {suffix}' if suffix else ''} with neither a Word nor a PowerPoint stream")


def _convert(soffice: str, data: bytes, target: str, seconds: float) -> bytes:
    """``data`` converted to ``target`` by LibreOffice in a private folder and profile.

    Raises:
        Timeout: the conversion outlived ``seconds`` (its whole process group is killed).
        Corrupt: LibreOffice wrote no file.
    """
    with tempfile.TemporaryDirectory(prefix="citeline-soffice-") as folder:
        source = Path(folder) / f"in.{'doc' if target == 'docx' else 'ppt'}"
        source.write_bytes(data)
        command = [soffice, "--headless", "--norestore", "--nologo", "--nodefault", "--nolockcheck",
                   f"-env:UserInstallation=file://{folder}/profile", "--convert-to", target,
                   "--outdir", f"{folder}/out", str(source)]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=folder,
                                   start_new_session=True, env={**os.environ, "HOME": folder})
        try:
            said, _ = process.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise Timeout(f"LibreOffice took longer than {seconds:.3g} s to convert the file (--timeout)") from None
        out = Path(folder) / "out" / f"in.{target}"
        if not out.exists():
            last = one_line(said.decode("utf-8", errors="replace"))[-300:]
            raise Corrupt(f"LibreOffice could not convert the file (exit {process.returncode}): {last or 'no output'}")
        return out.read_bytes()
