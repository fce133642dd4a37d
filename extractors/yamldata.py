"""YAML documents read as records (extractors/records.py) with PyYAML's safe loader: no tags
that build objects, each record under its key path as a ``## `` heading, located by a JSON
Pointer (``KeyPath``). A stream of several documents is the array of its documents (``/1/name``
is the second document's ``name``). Aliases may make a few bytes name millions of values: the
walk counts values and the writer its text, so a "billion laughs" fails TooLarge, bounded."""
from __future__ import annotations

from pathlib import PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, NoText, TooLarge
from citeline.schemas.locator import KeyPath
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, text_limit
from citeline.extractors.clean import Deadline
from citeline.extractors.jsondata import pointer
from citeline.extractors.records import Tree, from_data, node_limit, write_records
from citeline.extractors.text import decode, normalise

NAME = "yaml"
VERSION = "1"
# PyYAML's pure-Python parser has no time bound of its own: a killable worker (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".yaml", ".yml")
MAGIC: tuple[bytes, ...] = ()


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of a YAML file.

    Raises:
        Empty, Undecodable, Corrupt (not YAML, naming where), TooLarge, NoText, Timeout.
    """
    import yaml  # imported here so the registry loads without it

    options = options or ExtractOptions()
    if not data.strip():
        raise Empty("empty file" if not data else "the file holds only whitespace")
    text = normalise(decode(data))
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = [d for d in yaml.load_all(text, Loader=loader) if d is not None]
        limit = node_limit(len(data))
        root = from_data(documents[0], limit) if len(documents) == 1 else from_data(documents, limit)
    except yaml.YAMLError as exc:
        raise Corrupt(f"not valid YAML: {' '.join(str(exc).split())[:300]}") from None
    except RecursionError:
        raise TooLarge("YAML nested too deep to read") from None
    if not documents:
        raise NoText("the file holds no YAML documents, only comments")
    writer = Writer(text_limit(options, len(data)))
    write_records(writer, root if isinstance(root, Tree) else Tree([("", root)]),
                  lambda path: KeyPath(pointer(path)), Deadline(options.time_limit_s))
    if not writer.segments:
        raise NoText("the document holds no values (only empty mappings and lists)")
    return Canonical(text=writer.text, title=PurePath(name).stem, extractor=NAME, extractor_version=VERSION,
                     segments=writer.segments)
