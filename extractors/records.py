"""Data files (JSON, NDJSON, YAML, XML) as text a person reads: one block per record, its key
path as a ``## `` heading (the chunker's section path), each value on a ``key: value`` line.

A record is a container reached through an array (an item of a list of objects) or the
document's root; the objects nested in it are flattened into its block with dotted keys
(``metadata.filename: simple.docx``), so a record and its details stay in one chunk. A list of
scalars is one line, its items joined by ", ". A list of containers makes each item a record of
its own. Each block's segment holds the locator the format builds from the record's path
(a JSON Pointer, an XML element path).

Hostile input: the walk is iterative over records, nesting past ``MAX_DEPTH`` is written as one
compact line, and a value count past the file's size (YAML aliases can make a few bytes name
millions of values) and the writer's text limit stop an amplification.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from citeline.schemas.errors import TooLarge
from citeline.schemas.locator import Locator

from citeline.extractors.blocks import Writer
from citeline.extractors.clean import Deadline, clean

MAX_DEPTH = 64
# Without aliases a value takes at least one byte of its file: more values than bytes is an amplification.
MIN_NODES = 10_000


@dataclass
class Tree:
    """A container: its (key, child) pairs in order; ``array`` when the keys are positions."""

    items: list[tuple[str, object]] = field(default_factory=list)
    array: bool = False


Step = tuple[str, bool]  # a key, and whether it is an array position
Path = tuple[Step, ...]


def node_limit(size: int) -> int:
    """The most values a ``size``-byte file may hold."""
    return max(MIN_NODES, size)


def from_data(value: object, limit: int) -> object:
    """A parsed JSON/YAML value as Trees and scalars (keys as text: YAML allows numbers, dates).

    Raises:
        TooLarge: more than ``limit`` values (YAML aliases name a shared value many times).

    >>> from_data({"a": [1, {"b": None}]}, 10).items[0][1].items[1][1].items
    [('b', None)]
    """
    seen = [0]

    def convert(node: object, depth: int) -> object:
        seen[0] += 1
        if seen[0] > limit:
            raise TooLarge(f"more than {limit:,} values (aliases or repetition): refused as an amplification")
        if isinstance(node, (dict, list, tuple)) and depth >= MAX_DEPTH:
            return flat(node)
        if isinstance(node, dict):
            return Tree([(str(k), convert(v, depth + 1)) for k, v in node.items()])
        if isinstance(node, (list, tuple)):
            return Tree([(str(k), convert(v, depth + 1)) for k, v in enumerate(node)], array=True)
        return node

    return convert(value, 0)


def flat(node: object, budget: int = 2000) -> str:
    """What lies past the depth bound, as one line of its scalars (bounded, without recursion).

    >>> flat({"a": [1, {"b": "two"}]})
    '1 two'
    """
    out: list[str] = []
    stack = [node]
    size = 0
    while stack and size < budget:
        current = stack.pop()
        if isinstance(current, dict):
            stack.extend(reversed(list(current.values())))
        elif isinstance(current, (list, tuple)):
            stack.extend(reversed(current))
        elif isinstance(current, Tree):
            stack.extend(reversed([v for _, v in current.items]))
        else:
            text = scalar_text(current)
            out.append(text)
            size += len(text) + 1
    return " ".join(out)[:budget]


def scalar_text(value: object) -> str:
    """A scalar as the file wrote it: JSON's literals for true/false/null.

    >>> scalar_text(True), scalar_text(None), scalar_text(2.5), scalar_text("a\\r\\nb")
    ('true', 'null', '2.5', 'a\\nb')
    """
    if value is True or value is False or value is None:
        return json.dumps(value)
    return clean(str(value))


def heading(path: Path) -> str:
    """A record's path as a heading: keys joined by " > ", a position joined to its key.

    >>> heading((("items", False), ("2", True), ("tags", False))), heading((("0", True),))
    ('items[2] > tags', '[0]')
    """
    parts: list[str] = []
    for key, index in path:
        if index and parts:
            parts[-1] += f"[{key}]"
        else:
            parts.append(f"[{key}]" if index else " ".join(key.split()))
    return " > ".join(parts)


class _Counter:
    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        self.nodes = 0

    def tick(self) -> None:
        self.nodes += 1
        if self.nodes % 10_000 == 0:
            self.deadline.check(f"value {self.nodes:,}")


def write_records(writer: Writer, root: object, locate: Callable[[Path], Locator], deadline: Deadline) -> None:
    """Append the records of ``root`` to ``writer``, in document order, each block's segment
    located by ``locate(path)``."""
    counter = _Counter(deadline)
    pending: list[tuple[Path, object]] = [((), root)]
    while pending:
        path, node = pending.pop()
        lines: list[str] = []
        nested: list[tuple[Path, object]] = []
        if isinstance(node, Tree):
            _flatten(node, path, (), lines, nested, counter)
        else:
            counter.tick()
            lines.append(scalar_text(node))
        body = "\n".join(line for line in lines if line.strip())
        if body:
            title = heading(path)
            writer.add(f"## {title}\n{body}" if title else body, locate(path))
        pending.extend(reversed(nested))  # a stack: the first nested record is written next


def _flatten(node: Tree, path: Path, prefix: tuple[str, ...], lines: list[str],
             nested: list[tuple[Path, object]], counter: _Counter) -> None:
    """``node``'s scalars as lines of the record at ``path``; its records to ``nested``. ``prefix``
    holds the keys (as written: a pointer must find them) of the objects flattened so far."""
    for key, child in node.items:
        counter.tick()
        if not isinstance(child, Tree):
            value = scalar_text(child)
            if value:  # "" says nothing a reader can find
                label = _label(prefix if node.array else (*prefix, key))
                lines.append(f"{label}: {value}" if label else value)
        elif child.items and child.array and all(not isinstance(v, Tree) for _, v in child.items):
            for _ in child.items:
                counter.tick()
            lines.append(f"{_label((*prefix, key))}: {', '.join(scalar_text(v) for _, v in child.items)}")
        elif node.array or child.array:
            nested.append(((*path, *((p, False) for p in prefix), (key, node.array)), child))
        else:
            _flatten(child, path, (*prefix, key), lines, nested, counter)


def _label(keys: tuple[str, ...]) -> str:
    """Dotted keys on one line: a key holding a line break cannot start a heading of its own.

    >>> _label(("metadata", "a\\n## b"))
    'metadata.a ## b'
    """
    return ".".join(" ".join(k.split()) for k in keys if k)
