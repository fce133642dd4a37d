"""XML documents read as records (extractors/records.py): elements that repeat under one parent
(``<country>`` after ``<country>``) are records, each under its element path as a ``## ``
heading, its leaf elements and attributes as ``name: value`` lines, located by an
``ElementPath`` (``/factbook/country[2]``, the XPointer ``xpointer()`` scheme).

lxml parses with no network, no DTD loaded, entities left unexpanded (an entity bomb stays a
few references) and libxml2's default depth and size limits (huge_tree off). The encoding is
the document's own: its BOM or XML declaration (UTF-16 included)."""
from __future__ import annotations

from collections import Counter
from pathlib import PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, NoText
from citeline.schemas.locator import ElementPath
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, one_line, text_limit
from citeline.extractors.clean import Deadline
from citeline.extractors.records import MAX_DEPTH, Path, Tree, write_records

NAME = "xml"
VERSION = "1"
# libxml2 parses untrusted input: a killable worker (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".xml",)
MAGIC: tuple[bytes, ...] = ()


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of an XML document.

    Raises:
        Empty, Corrupt (not well-formed, naming where), NoText, TooLarge, Timeout.
    """
    from lxml import etree  # imported here so the registry loads without it

    options = options or ExtractOptions()
    if not data.strip():
        raise Empty("empty file" if not data else "the file holds only whitespace")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                             remove_comments=True, remove_pis=True)
    try:
        root = etree.fromstring(data, parser=parser)
    except (etree.XMLSyntaxError, ValueError) as exc:
        raise Corrupt(f"not well-formed XML: {' '.join(str(exc).split())[:300]}") from None
    if root is None:
        raise NoText("the document holds no elements")
    top = f"/{_local(root)}"
    writer = Writer(text_limit(options, len(data)))
    write_records(writer, _tree(root, 0), lambda path: ElementPath(top + element_path(path)),
                  Deadline(options.time_limit_s))
    if not writer.segments:
        raise NoText("the document's elements hold no text")
    return Canonical(text=writer.text, title=PurePath(name).stem, extractor=NAME, extractor_version=VERSION,
                     segments=writer.segments)


def element_path(path: Path) -> str:
    """A record's path as XPath steps, a position joined to its element's name.

    >>> element_path((("country", False), ("2", True), ("city", False)))
    '/country[2]/city'
    """
    out = ""
    for key, index in path:
        out += f"[{key}]" if index else f"/{key}"
    return out


def _local(element) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _tree(element, depth: int) -> object:
    """An element as a scalar (its text) when it has neither children nor attributes, else a
    Tree: attributes as ``@name``, its own text (and its children's tails) under "", child
    elements by name, a name that repeats as an array of those children (1-based, as XPath
    counts)."""
    children = [c for c in element if isinstance(c.tag, str)]
    own = one_line(" ".join([element.text or "", *(c.tail or "" for c in element)]))
    if depth >= MAX_DEPTH:
        return one_line(" ".join(element.itertext()))[:2000]
    if not children and not element.attrib:
        return own
    tree = Tree([(f"@{k.rsplit('}', 1)[-1]}", v) for k, v in element.attrib.items()])
    if own:
        tree.items.append(("", own))
    counts = Counter(_local(c) for c in children)
    groups: dict[str, Tree] = {}
    for child in children:
        tag = _local(child)
        if counts[tag] == 1:
            tree.items.append((tag, _tree(child, depth + 1)))
            continue
        if tag not in groups:
            groups[tag] = Tree(array=True)
            tree.items.append((tag, groups[tag]))
        groups[tag].items.append((str(len(groups[tag].items) + 1), _tree(child, depth + 1)))
    return tree
