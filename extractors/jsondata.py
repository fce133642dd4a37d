"""JSON and NDJSON (JSON Lines) documents read as records (extractors/records.py): each record
under its key path as a ``## `` heading, its values as ``key: value`` lines, located by a JSON
Pointer (``KeyPath``, RFC 6901). An NDJSON file is the array of its lines' records, so
``/2/name`` is the third record's name. Before this extractor a .json file failed as "not read"."""
from __future__ import annotations

import json
from pathlib import PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, NoText, TooLarge
from citeline.schemas.locator import KeyPath
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, text_limit
from citeline.extractors.clean import Deadline
from citeline.extractors.records import Path, Tree, from_data, node_limit, write_records
from citeline.extractors.text import decode, normalise

NAME = "json"
VERSION = "1"
SUFFIXES = (".json", ".ndjson", ".jsonl", ".geojson")
MAGIC: tuple[bytes, ...] = ()
_LINES = (".ndjson", ".jsonl")


def pointer(path: Path) -> str:
    """The JSON Pointer of a path, ``~`` and ``/`` escaped (RFC 6901).

    >>> pointer((("a/b", False), ("0", True), ("m~n", False)))
    '/a~1b/0/m~0n'
    """
    return "".join("/" + key.replace("~", "~0").replace("/", "~1") for key, _ in path)


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of a JSON or NDJSON document.

    Raises:
        Empty, Undecodable, Corrupt (not JSON, naming the line and column), TooLarge (nested
        too deep, or an amplification), NoText, Timeout.
    """
    options = options or ExtractOptions()
    if not data.strip():
        raise Empty("empty file" if not data else "the file holds only whitespace")
    text = normalise(decode(data))
    try:
        limit = node_limit(len(data))
        root = _lines(text, limit) if PurePath(name).suffix.lower() in _LINES else from_data(_load(text), limit)
    except RecursionError:
        raise TooLarge("JSON nested too deep to read (over ~900 levels)") from None
    writer = Writer(text_limit(options, len(data)))
    write_records(writer, root, lambda path: KeyPath(pointer(path)), Deadline(options.time_limit_s))
    if not writer.segments:
        raise NoText("the document holds no values (only empty objects and arrays)")
    return Canonical(text=writer.text, title=PurePath(name).stem, extractor=NAME, extractor_version=VERSION,
                     segments=writer.segments)


def _load(text: str, where: str = "") -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise Corrupt(f"not valid JSON{where}: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def _lines(text: str, limit: int) -> Tree:
    """An NDJSON file as the array of its records; blank lines are no records."""
    records = [line for line in text.split("\n") if line.strip()]
    tree = Tree(array=True)
    for number, line in enumerate(records):
        tree.items.append((str(number), from_data(_load(line, f" (record {number + 1})"), limit)))
    return tree
