"""Whose fault an exception of extraction is: the file's (its parser library choked on it) or citeline's.

An extractor hands the file's bytes to a parser library (python-pptx, PyMuPDF, openpyxl,
lxml, Pillow, PyAV, calamine); whatever that library raises on a file — the ``KeyError`` of a
missing part, python-pptx's ``NotImplementedError: Shape instance of unrecognized shape
type``, Pillow's ``SyntaxError: broken PNG file``, a Rust panic in calamine — says the library
cannot read *this file*, so the document fails alone (``ParserFailed``, kind ``parser-error``,
the library's own message) and the folder goes on. An exception raised by citeline's own code
stays a bug: it is raised unchanged and stops the run with its traceback.

How the two are told apart, from the traceback (walked in the process that raised it, the
extractor's worker, since a traceback does not cross to the parent):

- the frames after the last one of citeline's code (the extractor module included) are the
  calls citeline made that raised; the first of them that is not the standard library's names
  the library citeline called. When that is one of the extractor's libraries, the library raised
  it, however deep (python-docx into lxml into zipfile).
- an exception raised from compiled code leaves no Python frame below citeline's call (lxml's
  Cython parser, calamine's Rust, MuPDF's C); then its class says whose it is: an exception
  *type* defined by one of the extractor's libraries (``lxml.etree.XMLSyntaxError``,
  ``pyo3_runtime.PanicException``) was raised by that library.
- anything else — raised in a citeline frame (a ``KeyError`` of a dict of ours, a ``TypeError``
  of a call with the wrong arguments, which Python raises before entering the callee), in the
  standard library called straight from citeline with no library of the extractor's between,
  or in an undeclared package (numpy, pydantic) — is citeline's.

An extractor's libraries are the top-level packages named in ``LIBRARIES`` below for its
NAME (or its module's own ``LIBRARIES`` tuple, for a plugin); an extractor that declares none
has every installed package outside the standard library as its library. A standard-library
module the extractor reads the file's bytes with directly (``zipfile``, ``xml``) is listed
there too: a zip member stored with a compression method ``zipfile`` does not support
(``NotImplementedError``) is the file's, not citeline's.
"""
from __future__ import annotations

import functools
import importlib.metadata
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePath
from types import FrameType, ModuleType

from citeline.schemas.errors import CitelineError, ParserFailed, TooLarge, Unexpected

# Per extractor NAME: the top-level packages it hands the file's bytes to.
LIBRARIES: dict[str, tuple[str, ...]] = {
    "pdf": ("pymupdf", "fitz", "pymupdf4llm", "PIL", "pytesseract"),
    "image-ocr": ("PIL", "pytesseract", "pillow_heif"),
    "docx": ("docx", "lxml", "zipfile"),
    "pptx": ("pptx", "lxml", "zipfile"),
    "xlsx": ("openpyxl", "et_xmlfile", "lxml", "zipfile", "xml"),
    "calamine": ("python_calamine", "pyo3_runtime", "olefile", "zipfile", "xml"),
    "html": ("lxml", "html5lib", "charset_normalizer"),
    "odt": ("lxml", "zipfile"),
    "epub": ("ebooklib", "lxml", "html5lib", "charset_normalizer", "zipfile"),
    "media": ("av", "faster_whisper", "ctranslate2"),
    "csv": ("csv",),
    "text": (),
    "markup": (),  # Org and reST read with Python alone
    "eml": ("email",),
    "msg": ("olefile", "email"),
    "rtf": ("striprtf",),
    "json": ("json",),
    "yaml": ("yaml",),
    "xml": ("lxml",),
    "legacy-office": ("docx", "pptx", "lxml", "zipfile"),
}
_STDLIB = frozenset(sys.stdlib_module_names)
# Never a document's failure: the process is being stopped or torn down.
_PASS = (KeyboardInterrupt, SystemExit, GeneratorExit, CitelineError)
_MESSAGE_CHARS = 500


@contextmanager
def library_errors(module: ModuleType) -> Iterator[None]:
    """Around ``module.extract(...)``: an exception its library raised becomes the document's
    ``ParserFailed``; citeline's own errors and bugs pass unchanged.

    Raises:
        ParserFailed: the library raised (kind ``parser-error``, or ``too-large`` for a
            ``MemoryError``), with its type, message and where it was raised.
    """
    try:
        yield
    except _PASS:
        raise
    except BaseException as exc:  # safe: re-raised unless a library of the extractor raised it (pyo3 panics are BaseException)
        failure = as_failure(exc, module)
        if failure is None:
            raise
        raise failure from None


@contextmanager
def contained(what: str) -> Iterator[None]:
    """Around the work one file drives (sniffing, extraction, chunking): whatever escapes it is
    that file's failure, so no file can stop a run. A bug of citeline's that a file reveals is
    still a bug, but the promise is that a broken document fails alone: it fails as
    ``Unexpected``, naming the exception and where it rose, for an operator to report.

    Args:
        what: the code that ran, for the reason ("the calamine extractor", "the chunker").

    Raises:
        Unexpected: anything but citeline's own errors and the process being stopped.
        TooLarge: a MemoryError.
    """
    try:
        yield
    except _PASS:
        raise
    except MemoryError:
        raise TooLarge(f"{what} ran out of memory on this file (MemoryError)") from None
    except BaseException as exc:  # safe: only the stop signals and citeline's own errors pass (_PASS)
        raise unexpected(exc, what) from None


def unexpected(exc: BaseException, what: str) -> Unexpected:
    """``exc`` as the file's ``Unexpected`` failure: its type, message and innermost frame."""
    frames = list(traceback.walk_tb(exc.__traceback__))
    where = ""
    if frames:
        frame, line = frames[-1]
        where = f" (raised in {module_of(frame) or frame.f_code.co_filename}:{line})"
    message = " ".join(str(exc).split())[:_MESSAGE_CHARS] or "(no message)"
    return Unexpected(f"{what} failed on this file: {type(exc).__name__}: {message}{where}; "
                      "a citeline bug this file reveals: please report it")


def as_failure(exc: BaseException, module: ModuleType) -> CitelineError | None:
    """The document's failure for ``exc`` raised out of ``module.extract``, or None when it is citeline's."""
    library, where = blamed(exc, module)
    if library is None:
        return None
    if isinstance(exc, MemoryError):
        return TooLarge(f"{distribution(library)} ran out of memory on this file (MemoryError, raised in {where})")
    message = " ".join(str(exc).split())[:_MESSAGE_CHARS] or "(no message)"
    # the library's name as installed ("python-pptx", not "pptx"), its exception, and where it rose
    return ParserFailed(f"{distribution(library)} failed on this file: {type(exc).__name__}: {message} "
                        f"(raised in {where})")


def blamed(exc: BaseException, module: ModuleType) -> tuple[str | None, str]:
    """The library that raised ``exc`` (a top-level package of ``module``'s) and where, or (None, '')."""
    libraries = libraries_of(module)
    ours = module.__name__
    frames = [(module_of(frame), frame, line) for frame, line in traceback.walk_tb(exc.__traceback__)]
    last_ours = max((i for i, (name, _, _) in enumerate(frames) if _is_ours(name, ours)), default=-1)
    below = frames[last_ours + 1:]
    called = next((name for name, _, _ in below if _top(name) not in _STDLIB), None)
    if called is None and below:
        called = below[0][0]  # only the standard library below: it counts when the extractor lists it
    if called is not None:
        if _counts(_top(called), libraries):
            name, frame, line = below[-1]
            return _top(called), f"{name or frame.f_code.co_filename}:{line}"
        return None, ""
    # Raised from compiled code called straight from citeline's frame: the exception's class says whose.
    owner = _top(type(exc).__module__)
    if owner not in ("builtins", "") and owner not in _STDLIB and _counts(owner, libraries):
        return owner, type(exc).__module__
    return None, ""


def module_of(frame: FrameType) -> str:
    """The dotted name of the module a frame runs in.

    Compiled code (Cython: lxml, PyAV) may give its frames globals without ``__name__``; their
    file name is then the source's path within the package (``av/container/core.py``,
    ``src/lxml/parser.pxi``), or an installed file's path (``…/site-packages/pptx/util.py``).
    """
    name = frame.f_globals.get("__name__")
    if isinstance(name, str) and name:
        return name
    path = PurePath(frame.f_code.co_filename)
    parts = path.parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            parts = parts[len(parts) - parts[::-1].index(marker):]
            break
    else:
        if path.is_absolute():
            return ""
        if parts[:1] == ("src",):
            parts = parts[1:]
    if not parts:
        return ""
    return ".".join([*parts[:-1], PurePath(parts[-1]).stem])


def libraries_of(module: ModuleType) -> tuple[str, ...] | None:
    """The extractor's libraries (top-level package names), or None: every non-standard package."""
    declared = getattr(module, "LIBRARIES", None)
    if declared is not None:
        return tuple(declared)
    return LIBRARIES.get(getattr(module, "NAME", ""))


def _counts(top: str, libraries: tuple[str, ...] | None) -> bool:
    if libraries is None:
        return top not in _STDLIB and not top.startswith("citeline")
    return top in libraries


def _is_ours(name: str, extractor: str) -> bool:
    return name == "citeline" or name.startswith("citeline.") or name == extractor


def _top(name: str) -> str:
    return name.partition(".")[0]


@functools.cache
def distribution(package: str) -> str:
    """The installed distribution that provides a top-level package (``pptx`` -> ``python-pptx``),
    or the standard library's module as such (``Python's zipfile``)."""
    if package in _STDLIB:
        return f"Python's {package}"
    names = importlib.metadata.packages_distributions().get(package)
    return names[0] if names else package
