"""Each registered extractor's NAME and VERSION, without importing the extractors.

``citeline status`` says whether a document's rows are current: made by today's version of
the extractor that made them. Asking ``citeline.extractors``' registry loads every extractor
and its library (PyMuPDF, lxml, Pillow, pytesseract …): a second of a command that reads one
table. So until the registry has been used, the built-in extractors' ``NAME`` and
``VERSION`` are read from their source (the modules its ``BUILTINS`` names), the very
constants an import would give; once it has (a library user, a plugin registered with
``extractors.register``), the registry is asked instead.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
import sys
from pathlib import Path

PACKAGE = "citeline.extractors"


def extractor_versions() -> dict[str, str]:
    """``{NAME: VERSION}`` of every registered extractor.

    >>> versions = extractor_versions()
    >>> from citeline.extractors import pdf  # what the import would give
    >>> versions["pdf"] == pdf.VERSION, "text" in versions
    (True, True)
    """
    if PACKAGE not in sys.modules or not sys.modules[PACKAGE].builtins_loaded():
        try:
            return dict(_read_from_source())
        except (OSError, SyntaxError, ValueError):
            pass  # a layout this reader does not know: ask the package itself
    from citeline import extractors

    return {name: module.VERSION for name, module in extractors.registered().items()}


@functools.cache  # a sync's plan asks once per stored document
def _read_from_source() -> dict[str, str]:
    """The versions the package's ``BUILTINS`` would register, read with ``ast``.

    Raises:
        ValueError: the package or a registered module is not laid out as expected (no
            ``BUILTINS`` tuple of string literals, a ``NAME`` or ``VERSION`` that is not a
            string literal, a module not found).
    """
    spec = importlib.util.find_spec(PACKAGE)  # imports citeline only, not the package
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{PACKAGE} not found")
    folder = Path(next(iter(spec.submodule_search_locations)))
    init = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
    names = [element.value for node in init.body if isinstance(node, ast.Assign) and len(node.targets) == 1
             and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "BUILTINS"
             and isinstance(node.value, ast.Tuple)
             for element in node.value.elts if isinstance(element, ast.Constant) and isinstance(element.value, str)]
    if not names:
        raise ValueError(f"no BUILTINS tuple in {folder / '__init__.py'}")
    versions = {}
    for module in names:
        constants = _constants(folder / f"{module}.py")
        if "NAME" not in constants or "VERSION" not in constants:
            raise ValueError(f"{module}.py: NAME or VERSION is not a string literal")
        versions[constants["NAME"]] = constants["VERSION"]
    return versions


def _constants(path: Path) -> dict[str, str]:
    """The module's top-level ``NAME = "…"`` and ``VERSION = "…"``."""
    found = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target = value = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if (isinstance(target, ast.Name) and target.id in ("NAME", "VERSION")
                and isinstance(value, ast.Constant) and isinstance(value.value, str)):
            found[target.id] = value.value
    return found
