"""HTML pages with lxml: the main content without navigation boilerplate, read as a browser
shows it.

The encoding is the one a browser uses: a byte-order mark, else the XML declaration, else the
``<meta>`` charset (ISO-8859-1 and ASCII read as windows-1252, as WHATWG's Encoding standard
says), else valid UTF-8, else what charset-normalizer detects; an XHTML page keeps its XML
declaration. ``<main>`` (or ``role=main``, else the only ``<article>``, else ``<body>``) is
read; navigation is removed by structure: ``<nav>`` and ``role=navigation``/``search`` anywhere,
the page's own ``<header>``, ``<footer>`` and ``<aside>`` (those inside an article, a section or
the main content are content), form controls (not the ``<form>``, which may hold the whole page),
scripts and styles; a ``role`` on content (a list marked
``role=menu``) removes nothing. Headings become ``## `` lines, list items ``- `` lines (ordered
lists with the number the browser draws), ``<br>`` a line break, ``<pre>`` keeps its lines, an
image its alt text, tables pipe rows with the header row repeated above every block; a cell's
blocks, lists and nested tables are read once, inside the cell, words kept apart. Each run of
blocks under one heading path and nearest element id is one segment whose ``Passage`` locator
names both.
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

from citeline.extractors.blocks import Writer, one_line, text_limit
from citeline.extractors.clean import Deadline, clean
from citeline.extractors.numbering import counter_text
from citeline.extractors.tables import grid, table_blocks
from citeline.extractors.text import decode, detected, normalise

NAME = "html"
# 2: tables laid out by extractors.tables: caption, every header row (colspan
#    spread), group rows and row labels repeated per block, split by columns when too wide.
# 3: encodings as a browser reads them, XHTML, <br> and block boundaries, ordered-list numbers,
#    image alt text, nested tables once, navigation by structure only.
# 4: a label alone over a header row of its own starts a new table
#    (extractors.tables.split_tables).
# 5: a table's notes (rows of labels alone after its last figures) shown once after it, not
#    repeated under its headers in pieces without a number (extractors.tables).
VERSION = "5"
SUFFIXES = (".html", ".htm", ".xhtml")
MAGIC: tuple[bytes, ...] = ()

# The sniff runs on every file's first bytes, in the flow's own process: it walks the leading
# comments with find() (linear), where one regex for "comments, then a tag" backtracked
# exponentially over a run of empty comments.
_SPACE = re.compile(rb"\s*")
_OPENING_TAG = re.compile(rb"<(?:!doctype\s+html|html)\b", re.IGNORECASE)
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_XML_DECLARATION = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.:-]+)["']""")
_TAGS = re.compile(rb"<[^>]{0,2000}>")
_XML_DECLARATION_TEXT = re.compile(r"^\s*<\?xml[^>]*\?>")
# WHATWG Encoding: these labels mean windows-1252 in a browser (its C1 range holds € “ ” …).
_WINDOWS_1252 = {"latin1", "latin_1", "iso8859_1", "iso-8859-1", "iso_8859_1", "ascii", "us-ascii", "l1",
                 "cp819", "ibm819", "windows-1252", "cp1252", "x-cp1252"}
# Not <form>: ASP.NET and many CMSs wrap a whole page in one; its controls are what is dropped.
_DROP = {"script", "style", "noscript", "template", "svg", "math", "nav", "iframe", "object",
         "button", "select", "input", "textarea", "dialog", "head"}
# The page's own banner, footer and sidebar: dropped when no article, section or main holds them.
_PAGE_PARTS = {"header", "footer", "aside"}
_PAGE_ROLES = {"banner", "contentinfo", "complementary"}
_CONTENT = {"article", "section", "main"}
_DROP_ROLES = {"navigation", "search"}  # landmarks, which hold no content by definition
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {"p", "div", "section", "article", "main", "ul", "ol", "li", "pre", "table", "blockquote",
           "dl", "dt", "dd", "figure", "figcaption", "details", "summary", "address", "hr", "header",
           "footer", "aside", "caption", "center", "fieldset", "legend", *_HEADINGS}
# Inside a cell or an item, these end a word: "<li>a</li><li>b</li>" reads "a b", not "ab".
_WORD_BREAKS = _BLOCKS | {"td", "th", "tr", "br", "img"}
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
    # lxml refuses a str that keeps its XML declaration ("Unicode strings with encoding
    # declaration are not supported"): the bytes are decoded here, so the declaration has done its job.
    page = _XML_DECLARATION_TEXT.sub("", _decode(data), count=1)
    try:
        root = lxml.html.document_fromstring(page, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError) as exc:
        raise Corrupt(f"lxml cannot parse the page: {exc}") from None
    page_title = one_line(root.findtext(".//title") or "")
    for element in [e for e in root.iter() if _dropped(e)]:
        element.drop_tree()  # keeps its tail: the text after a <nav> is content
    walk = _Walk(options, Deadline(options.time_limit_s), _block_holders(root), text_limit(options, len(data)))
    walk.element(_main(root), depth=0)
    if not walk.writer.segments:
        raise NoText("the page holds no text outside navigation and boilerplate")
    title = page_title or walk.first_heading or PurePath(name).stem
    return Canonical(text=walk.writer.text, title=title, extractor=NAME, extractor_version=VERSION,
                     segments=walk.writer.segments)


def _decode(data: bytes) -> str:
    """The page's text in the encoding a browser would choose (see the module docstring).

    >>> _decode(b"<?xml version='1.0' encoding='iso-8859-1'?><p>caf\\xe9 \\x93q\\x94</p>")[-15:]
    '<p>café “q”</p>'
    """
    for bom in (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE):
        if data.startswith(bom):
            return normalise(decode(data))
    head = data[:4096]
    declared = _XML_DECLARATION.search(head) or _CHARSET.search(head)
    if declared is not None:
        codec = _codec(declared.group(1))
        # A page that says UTF-8 but is not: browsers replace the bad bytes; so does this.
        return normalise(data.decode(codec, errors="replace"))
    if b"\x00" in data[:8192]:  # UTF-16 or UTF-32 without a byte-order mark, or binary
        wide = detected(data, wide_only=True)
        if wide is None:
            raise Undecodable("binary data (NUL bytes) in a web page: not UTF-16 or UTF-32 either")
        return normalise(wide)
    try:
        return normalise(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    # Detection reads the text, not the markup (tags are ASCII in every candidate and only dilute
    # the statistics); windows-1252, a browser's default for an undeclared page, wins unless
    # another encoding fits the bytes clearly better (text.detected).
    text = detected(data, sample=_TAGS.sub(b" ", data[:200_000]), prefer_western=True)
    if text is None:
        raise Undecodable("not valid UTF-8, no charset declared, and no other encoding explains the bytes as "
                          "text (tried UTF-16, UTF-32 and the legacy code pages charset-normalizer knows)")
    return normalise(text)


def _codec(label: bytes) -> str:
    """The Python codec for a declared charset label.

    Raises:
        Undecodable: an unknown label, or a codec that is no text encoding (base64, rot13).
    """
    name = label.decode("ascii", errors="replace")
    try:
        codec = codecs.lookup(name)
    except LookupError:
        raise Undecodable(f"the page declares an unknown charset {label[:40]!r}") from None
    if not getattr(codec, "_is_text_encoding", True):  # base64, zlib, rot13: bytes.decode refuses them
        raise Undecodable(f"the page declares {label[:40]!r}, which is not a text encoding")
    if name.lower() in _WINDOWS_1252 or codec.name in ("latin-1", "iso8859-1", "ascii"):
        return "cp1252"
    return codec.name


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
    tag = element.tag.lower()
    role = (element.get("role") or "").lower()
    if tag in _DROP or role in _DROP_ROLES or element.get("hidden") is not None \
            or "display:none" in (element.get("style") or "").replace(" ", "").lower():
        return True
    if tag in _PAGE_PARTS or role in _PAGE_ROLES:
        return not any(isinstance(a.tag, str) and (a.tag.lower() in _CONTENT or (a.get("role") or "").lower() == "main")
                       for a in element.iterancestors())
    return False


def _is_block(element) -> bool:
    return isinstance(element.tag, str) and element.tag.lower() in _BLOCKS


def _block_holders(root) -> set:
    """The elements with a block element somewhere below them, found in one pass from the
    leaves up: asked of each element in turn, the question rescanned its whole subtree at
    every level above it (190 nested spans over 400,000 elements took minutes)."""
    holders: set = set()
    for element in reversed(list(root.iter())):  # every child before its parent
        if any(_is_block(child) or child in holders for child in element):
            holders.add(element)
    return holders


def _labels(element) -> dict:
    """The number a browser draws before each item of an ordered list (``start``, ``value``,
    ``reversed``, ``type``), by item."""
    out = {}
    for ol in ([element] if element.tag == "ol" else []) + list(element.iter("ol")):
        items = [li for li in ol if isinstance(li.tag, str) and li.tag.lower() == "li"]
        reverse = ol.get("reversed") is not None
        n = _number(ol.get("start"), len(items) if reverse else 1)
        kind = ol.get("type") or "1"
        for li in items:
            n = _number(li.get("value"), n)
            out[li] = f"{_ordinal(n, li.get('type') or kind)}."
            n += -1 if reverse else 1
    return out


def _number(value, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _ordinal(n: int, kind: str) -> str:
    return counter_text(n, {"a": "lowerLetter", "A": "upperLetter", "i": "lowerRoman", "I": "upperRoman"}.get(kind, "decimal"))


def _inline(element, labels: dict, out: list[str], depth: int = 0) -> None:
    """The text an element shows, in order: ``<br>`` a newline, a block, cell or item boundary a
    space (so words never run together), an ordered item its number, an image its alt text."""
    if depth > _MAX_DEPTH:
        out.append(element.text_content())
        return
    tag = element.tag.lower() if isinstance(element.tag, str) else ""
    if tag == "br":
        out.append("\n")
    elif tag == "img":
        out.append(f" {element.get('alt') or ''} ")
    else:
        if tag in _WORD_BREAKS:
            out.append(" ")
        if tag == "li":
            out.append(f"{labels[element]} " if element in labels else "- ")
        out.append(element.text or "")
        for child in element:
            if isinstance(child.tag, str):
                _inline(child, labels, out, depth + 1)
            out.append(child.tail or "")
        if tag in _WORD_BREAKS:
            out.append(" ")


def _shown(element, labels: dict | None = None) -> str:
    out: list[str] = []
    _inline(element, _labels(element) if labels is None else labels, out)
    return "".join(out)


def _lines(text: str) -> str:
    """Text with its ``<br>`` line breaks kept, each line's runs of spaces as one."""
    return "\n".join(line for line in (one_line(part) for part in text.split("\n")) if line)


class _Walk:
    """Document order walk that appends blocks to the writer, tracking headings and ids."""

    def __init__(self, options: ExtractOptions, deadline: Deadline, block_holders: set, limit: int) -> None:
        self.options = options
        self.deadline = deadline
        self.block_holders = block_holders
        self.writer = Writer(limit)
        self.path: list[tuple[int, str]] = []
        self.ids: list[str] = []  # ids of the open ancestors
        self.heading_id = ""
        self.first_heading = ""
        self.seen = 0
        self.in_list = False  # list items follow each other on single lines
        self.labels: dict = {}  # ordered-list item -> its number

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
        if tag == "ol":
            self.labels.update(_labels(element))
        if tag in _HEADINGS:
            self.heading(element, _HEADINGS[tag])
        elif tag == "pre":
            self.add("\n".join(line.rstrip() for line in clean(element.text_content()).split("\n")), element)
        elif tag == "table":
            self.table(element)
        elif tag in ("li", "dt", "dd") and not self.has_blocks(element):
            text = _lines(_shown(element, self.labels))  # an item's own label ("- ", "3.") included
            self.add(text, element, sep="\n" if self.in_list else "\n\n")
            self.in_list = True
            return
        elif depth >= _MAX_DEPTH or not self.has_blocks(element):
            self.add(_lines(_shown(element, self.labels)), element)
        else:
            self.container(element, depth)
        self.in_list = False

    def container(self, element, depth: int) -> None:
        """Block children in turn; the inline text between them (text, inline elements,
        tails) as one paragraph each."""
        self.ids.append(element.get("id") or "")
        tag = element.tag.lower()
        run = [f"{self.labels[element]} " if tag == "li" and element in self.labels else "- " if tag == "li" else "",
               element.text or ""]
        for child in element:
            child_tag = child.tag.lower() if isinstance(child.tag, str) else ""
            if child_tag in _BLOCKS or (child_tag and self.has_blocks(child)):
                self.add(_lines("".join(run)), element)
                self.element(child, depth + 1)
                run = []
            elif child_tag and not _dropped(child):
                _inline(child, self.labels, run)
            run.append(child.tail or "")
        self.add(_lines("".join(run)), element)
        self.ids.pop()

    def has_blocks(self, element) -> bool:
        return element in self.block_holders

    def heading(self, element, level: int) -> None:
        text = one_line(_shown(element, self.labels))
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
        if text.strip() and text.strip() != "-":
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
    if caption is not None and one_line(_shown(caption)):
        matrix.append([(caption, one_line(_shown(caption)))])
    pending: dict[tuple[int, int], tuple[object, str]] = {}  # (row, col) taken by a rowspan above
    for r, tr in enumerate(_rows(table), start=len(matrix)):
        line: list[tuple[object, str]] = []
        for cell in (c for c in tr if isinstance(c.tag, str) and c.tag.lower() in ("td", "th")):
            while (r, len(line)) in pending:
                line.append(pending.pop((r, len(line))))
            entry = (cell, one_line(_shown(cell)))
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


def _rows(table):
    """The table's own rows (directly, or in its thead, tbody and tfoot): a table nested in a
    cell is that cell's text, not more rows of this table."""
    for child in table:
        tag = child.tag.lower() if isinstance(child.tag, str) else ""
        if tag == "tr":
            yield child
        elif tag in ("thead", "tbody", "tfoot"):
            yield from (tr for tr in child if isinstance(tr.tag, str) and tr.tag.lower() == "tr")
