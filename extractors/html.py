"""HTML pages with lxml: the main content without navigation boilerplate.

``<main>`` (or ``role=main``, else the only ``<article>``, else ``<body>``) is read; nav,
header, footer, aside, forms, scripts and styles are dropped wherever they are. Headings
become ``## `` lines, list items ``- `` lines, ``<pre>`` keeps its lines, tables become pipe
rows with the header row repeated above every block. Each run of blocks under one heading
path and nearest element id is one segment whose ``Passage`` locator names both.
"""
from __future__ import annotations

import codecs
import re
from pathlib import PurePath

import lxml.etree
import lxml.html

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, NoText, Undecodable
from citeline.schemas.locator import Passage
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, one_line
from citeline.extractors.clean import Deadline, clean
from citeline.extractors.tables import grid, table_blocks
from citeline.extractors.text import decode, normalise

NAME = "html"
# 2: tables laid out by extractors.tables (issue 27): caption, every header row (colspan
#    spread), group rows and row labels repeated per block, split by columns when too wide.
VERSION = "2"
SUFFIXES = (".html", ".htm", ".xhtml")
MAGIC: tuple[bytes, ...] = ()

# The sniff runs on every file's first bytes, in the flow's own process: it walks the leading
# comments with find() (linear), where one regex for "comments, then a tag" backtracked
# exponentially over a run of empty comments (issue 32).
_SPACE = re.compile(rb"\s*")
_OPENING_TAG = re.compile(rb"<(?:!doctype\s+html|html)\b", re.IGNORECASE)
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_DROP = {"script", "style", "noscript", "template", "svg", "math", "nav", "header", "footer", "aside",
         "form", "iframe", "object", "button", "select", "input", "textarea", "dialog", "head"}
_DROP_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {"p", "div", "section", "article", "main", "ul", "ol", "li", "pre", "table", "blockquote",
           "dl", "dt", "dd", "figure", "figcaption", "details", "summary", "address", "hr", "br",
           *_HEADINGS}
_MAX_DEPTH = 200  # deeper than this, an element's text is taken whole (no recursion limit hit)
# huge_tree: libxml2 keeps elements nested up to 2048 deep instead of 256; what lies deeper
# is dropped by the parser (a limit of libxml2, not of this module).
_PARSER = lxml.html.HTMLParser(huge_tree=True)


def claims(head: bytes) -> bool:
    """A document that opens with ``<!DOCTYPE html`` or ``<html`` (comments and a BOM allowed).

    >>> claims(b"\\xef\\xbb\\xbf <!-- a --> <!----><!DOCTYPE html>"), claims(b"<!---->" * 40 + b"notes")
    (True, False)
    """
    head = head[:4096]
    at = len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0
    while True:
        at = _SPACE.match(head, at).end()
        if not head.startswith(b"<!--", at):
            return bool(_OPENING_TAG.match(head, at))
        end = head.find(b"-->", at + 4)  # a comment ends at its first -->
        if end < 0:
            return False
        at = end + 3


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of an HTML page's main content.

    Raises:
        Empty, Undecodable, Corrupt (lxml cannot parse it), NoText, Timeout.
    """
    options = options or ExtractOptions()
    if not data:
        raise Empty("empty file (0 bytes)")
    try:
        root = lxml.html.document_fromstring(_decode(data), parser=_PARSER)
    except (lxml.etree.ParserError, ValueError) as exc:
        raise Corrupt(f"lxml cannot parse the page: {exc}") from None
    page_title = one_line(root.findtext(".//title") or "")
    for element in [e for e in root.iter() if _dropped(e)]:
        element.drop_tree()  # keeps its tail: the text after a <nav> is content
    walk = _Walk(options, Deadline(options.time_limit_s))
    walk.element(_main(root), depth=0)
    if not walk.writer.segments:
        raise NoText("the page holds no text outside navigation and boilerplate")
    title = page_title or walk.first_heading or PurePath(name).stem
    return Canonical(text=walk.writer.text, title=title, extractor=NAME, extractor_version=VERSION,
                     segments=walk.writer.segments)


def _decode(data: bytes) -> str:
    """BOM or UTF-8 first; otherwise the charset the page declares, bad bytes replaced."""
    try:
        return normalise(decode(data))
    except Undecodable:
        declared = _CHARSET.search(data[:4096])
        if declared is None:
            raise
        try:
            codec = codecs.lookup(declared.group(1).decode("ascii"))
        except LookupError:
            raise Undecodable(f"the page declares an unknown charset {declared.group(1)[:40]!r}") from None
        if not getattr(codec, "_is_text_encoding", True):  # base64, zlib, rot13: bytes.decode refuses them
            raise Undecodable(f"the page declares {declared.group(1)[:40]!r}, which is not a text encoding")
        return normalise(data.decode(codec.name, errors="replace"))


def _main(root):
    """The element holding the page's main content."""
    for path in ("//main", "//*[@role='main']"):
        found = root.xpath(path)
        if found:
            return found[0]
    articles = root.xpath("//article")
    if len(articles) == 1:
        return articles[0]
    body = root.find("body")
    return body if body is not None else root


def _dropped(element) -> bool:
    if not isinstance(element.tag, str):  # comments and processing instructions
        return True
    tag = element.tag
    role = (element.get("role") or "").lower()
    return tag.lower() in _DROP or role in _DROP_ROLES or element.get("hidden") is not None \
        or "display:none" in (element.get("style") or "").replace(" ", "").lower()


class _Walk:
    """Document order walk that appends blocks to the writer, tracking headings and ids."""

    def __init__(self, options: ExtractOptions, deadline: Deadline) -> None:
        self.options = options
        self.deadline = deadline
        self.writer = Writer()
        self.path: list[tuple[int, str]] = []
        self.ids: list[str] = []  # ids of the open ancestors
        self.heading_id = ""
        self.first_heading = ""
        self.seen = 0
        self.in_list = False  # list items follow each other on single lines

    def where(self, element) -> Passage:
        own = element.get("id") or ""
        near = own or next((i for i in reversed(self.ids) if i), "") or self.heading_id
        return Passage(" > ".join(h for _, h in self.path), one_line(near)[:200])

    def element(self, element, depth: int) -> None:
        self.seen += 1
        if self.seen % 2000 == 0:
            self.deadline.check(f"element {self.seen}")
        if not isinstance(element.tag, str) or _dropped(element):
            return
        tag = element.tag.lower()
        if tag in _HEADINGS:
            self.heading(element, _HEADINGS[tag])
        elif tag == "pre":
            self.add("\n".join(line.rstrip() for line in clean(element.text_content()).split("\n")), element)
        elif tag == "table":
            self.table(element)
        elif tag in ("li", "dt", "dd") and not self.has_blocks(element):
            text = one_line(element.text_content())
            self.add(f"- {text}" if tag == "li" else text, element, sep="\n" if self.in_list else "\n\n")
            self.in_list = True
            return
        elif depth >= _MAX_DEPTH or not self.has_blocks(element):
            self.add(one_line(element.text_content()), element)
        else:
            self.container(element, depth)
        self.in_list = False

    def container(self, element, depth: int) -> None:
        """Block children in turn; the inline text between them (text, inline elements,
        tails) as one paragraph each."""
        self.ids.append(element.get("id") or "")
        run = [element.text or ""]
        for child in element:
            tag = child.tag.lower() if isinstance(child.tag, str) else ""
            if tag in _BLOCKS or (tag and self.has_blocks(child)):
                self.add(one_line(" ".join(run)), element)
                self.element(child, depth + 1)
                run = []
            elif tag and not _dropped(child):
                run.append(child.text_content())
            run.append(child.tail or "")
        self.add(one_line(" ".join(run)), element)
        self.ids.pop()

    def has_blocks(self, element) -> bool:
        return any(isinstance(e.tag, str) and e.tag.lower() in _BLOCKS for e in element.iterdescendants())

    def heading(self, element, level: int) -> None:
        text = one_line(element.text_content())
        if not text:
            return
        self.first_heading = self.first_heading or text
        self.path = [(lv, h) for lv, h in self.path if lv < level] + [(level, text)]
        self.heading_id = element.get("id") or ""
        self.add(f"## {text}", element)

    def table(self, element) -> None:
        """The table laid out by extractors.tables (its caption as the title line, colspan
        and rowspan as merges, header rows and row labels repeated per block)."""
        rows, merges = grid(_matrix(element))
        where = self.where(element)
        for block in table_blocks(rows, lambda *_: where, self.options.sheet_block_chars,
                                  self.options.sheet_block_rows, merges):
            self.writer.add_block(block)

    def add(self, text: str, element, sep: str = "\n\n") -> None:
        if text.strip():
            self.writer.add(text.strip(), self.where(element), sep=sep)


_MAX_SPAN = 100  # a colspan/rowspan past this is taken as 1 (a hostile page may claim millions)
_MAX_POSITIONS = 1000  # column positions a row is expanded to


def _span(cell, name: str) -> int:
    try:
        value = int(cell.get(name) or 1)
    except ValueError:
        return 1
    return value if 1 <= value <= _MAX_SPAN else 1


def _matrix(table) -> list[list[tuple[object, str]]]:
    """The table's rows as (cell, text) per column position, a cell spanning columns or rows
    repeated at each position it covers; the caption a first row of its own."""
    matrix: list[list[tuple[object, str]]] = []
    caption = next((c for c in table if isinstance(c.tag, str) and c.tag.lower() == "caption"), None)
    if caption is not None and one_line(caption.text_content()):
        matrix.append([(caption, one_line(caption.text_content()))])
    pending: dict[tuple[int, int], tuple[object, str]] = {}  # (row, col) taken by a rowspan above
    for r, tr in enumerate(table.iter("tr"), start=len(matrix)):
        line: list[tuple[object, str]] = []
        for cell in (c for c in tr if isinstance(c.tag, str) and c.tag.lower() in ("td", "th")):
            while (r, len(line)) in pending:
                line.append(pending.pop((r, len(line))))
            entry = (cell, one_line(cell.text_content()))
            down = _span(cell, "rowspan")
            for _ in range(_span(cell, "colspan")):
                if len(line) >= _MAX_POSITIONS:
                    break
                for k in range(1, down):
                    pending[(r + k, len(line))] = entry
                line.append(entry)
        while (r, len(line)) in pending:
            line.append(pending.pop((r, len(line))))
        matrix.append(line)
    return matrix
