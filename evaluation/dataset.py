"""Load and validate a retrieval-evaluation corpus (corpora/README.md).

A corpus folder holds ``docs/`` (the documents), ``ground_truth.jsonl`` (one needle per
line, asked in two phrasings: ``course`` and ``ticket``) and ``out_of_domain.jsonl``
(queries that should get no answer). Every problem is reported with its file and line,
because a harness that silently skips a bad line measures something else.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from citeline.pipeline.walk import list_files
from citeline.schemas.errors import CitelineError

PHRASINGS = ("course", "ticket")
OOD_KINDS = ("adjacent", "absurd")
GROUND_TRUTH = "ground_truth.jsonl"
OUT_OF_DOMAIN = "out_of_domain.jsonl"
DOCS = "docs"


class DatasetError(CitelineError, ValueError):
    """The corpus folder does not have the documented layout or content."""


@dataclass(frozen=True)
class Needle:
    """A verbatim answer sentence that occurs exactly once in the corpus."""

    id: str
    doc: str
    needle: str
    course: str
    ticket: str
    char_start: int


@dataclass(frozen=True)
class Query:
    """One in-domain question: a needle asked in one phrasing."""

    id: str  # "<needle id>:<phrasing>"
    needle_id: str
    phrasing: str
    text: str
    needle: str


@dataclass(frozen=True)
class OutOfDomain:
    id: str
    query: str
    kind: str


@dataclass(frozen=True)
class Corpus:
    """A validated corpus: documents (name -> raw text), needles and out-of-domain queries."""

    root: Path
    documents: tuple[tuple[str, str], ...]
    needles: tuple[Needle, ...]
    out_of_domain: tuple[OutOfDomain, ...]

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def docs_dir(self) -> Path:
        return self.root / DOCS

    @property
    def queries(self) -> tuple[Query, ...]:
        """Two queries per needle, in needle order, course before ticket."""
        return tuple(
            Query(f"{n.id}:{p}", n.id, p, getattr(n, p), n.needle) for n in self.needles for p in PHRASINGS
        )

    def only(self, names: Sequence[str]) -> "Corpus":
        """This corpus restricted to the documents ``names`` and their needles; the
        out-of-domain queries stay (they are about no document). Speech takes minutes per
        document, so it is measured on a few, with Markdown's baseline on the same few.

        Raises:
            DatasetError: a name that is not a document, or documents without a needle.
        """
        known = [name for name, _ in self.documents]
        unknown = [name for name in names if name not in known]
        if unknown:
            raise DatasetError(f"no document named {', '.join(map(repr, unknown))} in {self.docs_dir}; "
                               f"its documents are {', '.join(known)}")
        needles = tuple(n for n in self.needles if n.doc in names)
        if not needles:
            raise DatasetError(f"no needle is in {', '.join(names)}: there would be nothing to measure")
        return replace(self, documents=tuple(d for d in self.documents if d[0] in names), needles=needles)

    def counts(self) -> dict:
        kinds = Counter(q.kind for q in self.out_of_domain)
        return {
            "name": self.name,
            "documents": len(self.documents),
            "characters": sum(len(text) for _, text in self.documents),
            "needles": len(self.needles),
            "queries": len(self.needles) * len(PHRASINGS),
            "ood": len(self.out_of_domain),
            "ood_kinds": {k: kinds[k] for k in OOD_KINDS},
        }


def load_corpus(root: str | Path) -> Corpus:
    """Read and check a corpus folder.

    Args:
        root: a folder with ``docs/``, ``ground_truth.jsonl`` and ``out_of_domain.jsonl``.

    Returns:
        The corpus, documents sorted by file name.

    Raises:
        DatasetError: a missing file, a bad JSON line, a missing or mistyped field, a
            duplicate id, a needle not found where ``char_start`` says, or not unique.
    """
    base = Path(root).expanduser().resolve()
    if not base.is_dir():
        raise DatasetError(f"corpus folder {base} does not exist or is not a folder")
    documents = _read_documents(base / DOCS)
    needles = tuple(_needle(line, where) for line, where in _jsonl(base / GROUND_TRUTH))
    ood = tuple(_ood(line, where) for line, where in _jsonl(base / OUT_OF_DOMAIN))
    _unique([n.id for n in needles], GROUND_TRUTH)
    _unique([q.id for q in ood], OUT_OF_DOMAIN)
    _check_needles(needles, dict(documents))
    if not needles:
        raise DatasetError(f"{base / GROUND_TRUTH} holds no needles: there is nothing to measure")
    return Corpus(base, documents, needles, ood)


def _read_documents(folder: Path) -> tuple[tuple[str, str], ...]:
    if not folder.is_dir():
        raise DatasetError(f"missing folder {folder}: a corpus keeps its documents in docs/")
    # The same listing the index flow uses, so that both see the same documents.
    files = list_files(folder)
    if not files:
        raise DatasetError(f"{folder} holds no documents")
    docs = []
    for file in files:
        try:
            # newline="" keeps "\r\n" so that char_start means what the corpus author meant.
            with open(file.source, encoding="utf-8", newline="") as handle:
                docs.append((file.path, handle.read()))
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{file.source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return tuple(docs)


def _jsonl(path: Path):
    """Yield ``(object, "file:line")`` for every non-blank line."""
    if not path.is_file():
        raise DatasetError(f"missing file {path}")
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(value, dict):
            raise DatasetError(f"{where}: expected a JSON object, got {type(value).__name__}")
        yield value, where


def _field(obj: dict, key: str, kind: type, where: str):
    if key not in obj:
        raise DatasetError(f"{where}: missing field {key!r} (has {sorted(obj)})")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DatasetError(f"{where}: field {key!r} must be {kind.__name__}, got {value!r}")
    if kind is str and not value.strip():
        raise DatasetError(f"{where}: field {key!r} is empty")
    return value


def _needle(obj: dict, where: str) -> Needle:
    values = {k: _field(obj, k, str, where) for k in ("id", "doc", "needle", "course", "ticket")}
    start = _field(obj, "char_start", int, where)
    if start < 0:
        raise DatasetError(f"{where}: char_start must be >= 0, got {start}")
    return Needle(char_start=start, **values)


def _ood(obj: dict, where: str) -> OutOfDomain:
    values = {k: _field(obj, k, str, where) for k in ("id", "query", "kind")}
    if values["kind"] not in OOD_KINDS:
        raise DatasetError(f"{where}: kind must be one of {list(OOD_KINDS)}, got {values['kind']!r}")
    return OutOfDomain(**values)


def _unique(ids: list[str], name: str) -> None:
    repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
    if repeated:
        raise DatasetError(f"{name}: duplicate ids {repeated}")


def _check_needles(needles: tuple[Needle, ...], docs: dict[str, str]) -> None:
    for n in needles:
        where = f"{GROUND_TRUTH} id {n.id}"
        if n.doc not in docs:
            raise DatasetError(f"{where}: doc {n.doc!r} is not in docs/ (have {sorted(docs)[:5]}...)")
        text = docs[n.doc]
        if text[n.char_start : n.char_start + len(n.needle)] != n.needle:
            found = text.find(n.needle)
            hint = f"it occurs at {found}" if found >= 0 else "it does not occur in the document"
            raise DatasetError(f"{where}: needle is not at char_start {n.char_start} of {n.doc}; {hint}")
        count = sum(t.count(n.needle) for t in docs.values())
        if count != 1:
            raise DatasetError(f"{where}: needle occurs {count} times in the corpus; it must occur once")
