"""Lightweight markup, Org and reStructuredText, read as text with its headings: each heading
(Org ``* ``/``** `` lines; reST titles underlined, or over- and underlined, levels in the order
their adornments first appear) becomes a ``## `` line the chunker opens a section at, and each
section's text a segment whose ``Passage`` locator names its heading path (``Example Docs >
XBRL 10-K``). Markup that is no text goes: Org's ``#+`` keyword lines (``#+TITLE:`` gives the
title) and drawers' delimiters, reST's directive and comment lines (``.. include::``,
``.. code:: bash``) — their indented bodies (code) are kept. Nothing is ever included or
fetched: ``#+INCLUDE`` and ``.. include::`` name files the reader did not ask for. Before this
extractor a .org failed "not read" and a .rst was read as plain text."""
from __future__ import annotations

import re
from pathlib import PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Empty, NoText
from citeline.schemas.locator import Passage
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, one_line, text_limit
from citeline.extractors.clean import clean
from citeline.extractors.text import decode, normalise

NAME = "markup"
VERSION = "1"
SUFFIXES = (".org", ".rst")
MAGIC: tuple[bytes, ...] = ()

_ORG_HEADING = re.compile(r"^(\*+)\s+(.*?)(?:\s+:[\w@#%:]+:)?\s*$")
_ORG_KEYWORD = re.compile(r"^\s*#\+(\w+):?\s*(.*)$")
_ORG_DRAWER = re.compile(r"^\s*:(?:PROPERTIES|END|LOGBOOK|[A-Z]+):\s*$")
_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")  # a run of one punctuation character
_RST_DIRECTIVE = re.compile(r"^\.\.(?:\s|$)")


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of an Org or reStructuredText document.

    Raises:
        Empty, Undecodable, NoText, TooLarge.
    """
    options = options or ExtractOptions()
    if not data.strip():
        raise Empty("empty file" if not data else "the file holds only whitespace")
    lines = normalise(decode(data)).split("\n")
    org = PurePath(name).suffix.lower() == ".org"
    sections, title = _org(lines) if org else _rst(lines)
    writer = Writer(text_limit(options, len(data)))
    path: list[tuple[int, str]] = []
    for level, heading, body in sections:
        if heading:
            path = [(lv, h) for lv, h in path if lv < level] + [(level, heading)]
        where = Passage(" > ".join(h for _, h in path))
        writer.add(f"## {heading}" if heading else "", where)
        writer.add(clean("\n".join(body)).strip("\n"), where)
    if not writer.segments:
        raise NoText("the document holds no text")
    title = title or next((h for _, h, _ in sections if h), "") or PurePath(name).stem
    return Canonical(text=writer.text, title=title, extractor=NAME, extractor_version=VERSION,
                     segments=writer.segments)


Section = tuple[int, str, list[str]]  # level, heading ("" before the first), body lines


def _org(lines: list[str]) -> tuple[list[Section], str]:
    sections: list[Section] = [(0, "", [])]
    title = ""
    for line in lines:
        heading = _ORG_HEADING.match(line)
        keyword = _ORG_KEYWORD.match(line)
        if heading:
            sections.append((len(heading.group(1)), one_line(heading.group(2)), []))
        elif keyword:
            if keyword.group(1).upper() == "TITLE":
                title = one_line(keyword.group(2))
        elif not _ORG_DRAWER.match(line):
            sections[-1][2].append(line)
    return sections, title


def _rst(lines: list[str]) -> tuple[list[Section], str]:
    sections: list[Section] = [(0, "", [])]
    styles: list[tuple[str, bool]] = []  # adornment (character, overlined) in order of first use
    in_directive = False
    k = 0
    while k < len(lines):
        line = lines[k]
        over = _RST_ADORNMENT.match(line) is not None
        text_at = k + 1 if over else k
        if text_at + 1 < len(lines) and lines[text_at].strip() and not _RST_ADORNMENT.match(lines[text_at]) \
                and (under := _RST_ADORNMENT.match(lines[text_at + 1])) \
                and len(lines[text_at + 1].rstrip()) >= len(lines[text_at].strip()) \
                and (not over or line[0] == under.group(1)):
            style = (under.group(1), over)
            if style not in styles:
                styles.append(style)
            sections.append((styles.index(style) + 1, one_line(lines[text_at]), []))
            k = text_at + 2
            in_directive = False
            continue
        if _RST_DIRECTIVE.match(line):
            in_directive = True  # its indented body (a code block's code) is kept
        elif in_directive and line.strip() and not line[0].isspace():
            in_directive = False
            sections[-1][2].append(line)
        else:
            sections[-1][2].append(line)
        k += 1
    title = sections[1][1] if len(sections) > 1 and sections[1][0] == 1 else ""
    return sections, title
