"""Plain text and Markdown: the bytes decoded, line ends and control characters normalised.

In Markdown, HTML written inline (``<td>``, ``<br>``, ``<signature>``, ``<!-- notes -->``) and
character references (``&amp;``) are what a renderer turns them into: tags give way to the text
they hold (a block tag to a space, so words stay apart), comments are dropped, references become
their characters; code (fenced, indented, backtick spans) is left exactly as written.
"""
from __future__ import annotations

import codecs
import html
import re
import unicodedata
from collections import deque
from pathlib import PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Empty, NoText, Undecodable
from citeline.schemas.options import ExtractOptions

from citeline.extractors.sniff import has_no_real_suffix

NAME = "text"
# Not bumped for the whole-name title of Apache-2.0: such files failed before, none is stored.
# 2: Markdown's inline HTML read as its text.
VERSION = "2"
SUFFIXES = (".txt", ".md", ".markdown", ".text")
MAGIC: tuple[bytes, ...] = ()

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Everything in Unicode's "Cc" class except tab and newline.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The first "# " line; its closing hashes are taken off in title_of, not by the pattern: a
# lazy title before "\s*#*\s*$" backtracked cubically over a run of blanks.
_TITLE = re.compile(r"^# +(.+)$", re.MULTILINE)


def decode(data: bytes) -> str:
    """Decode by BOM, else strict UTF-8, else the encoding charset-normalizer finds that explains
    the bytes as text (UTF-16 and UTF-32 without a BOM, Latin-1, windows-125x, ISO-8859-x ...).

    Detection explains almost any bytes somehow, so what it finds is held to text's shape
    (``detected``): a NUL byte is binary unless the bytes are UTF-16/32, and a decoding with
    more than 1% control, private-use or unassigned characters is no text.

    Raises:
        Undecodable: no encoding explains the bytes as text; the reason says what was tried.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(encoding)
            except UnicodeDecodeError as exc:
                raise Undecodable(f"invalid {encoding} at byte {exc.start + len(bom)}") from None
    nul = b"\x00" in data[:8192]
    if not nul:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            why = f"not valid UTF-8 at byte {exc.start}: {data[exc.start:exc.start + 8]!r}"
    # Legacy code pages tie on short Western text (café reads as cp1250 too): the Windows
    # default wins unless another fits clearly better, as a browser decides for an undeclared page.
    text = detected(data, wide_only=nul, prefer_western=True)
    if text is not None:
        return text
    if nul:
        raise Undecodable("binary data (NUL bytes) in a text file: not UTF-16 or UTF-32 either")
    raise Undecodable(f"{why}; no other encoding explains the bytes as text (tried UTF-16, UTF-32 "
                      "and the legacy code pages charset-normalizer knows)")


_WIDE = ("utf_16", "utf_16_le", "utf_16_be", "utf_32", "utf_32_le", "utf_32_be")
_DETECT_BYTES = 200_000
_MAX_ODD_SHARE = 0.01


def detected(data: bytes, wide_only: bool = False, sample: bytes | None = None,
             prefer_western: bool = False) -> str | None:
    """The bytes decoded in the encoding charset-normalizer finds for them, when that decoding reads
    as text; else None.

    Args:
        wide_only: only UTF-16/32 may explain them (the bytes hold NULs: anything else is binary).
        sample: the bytes to detect on (a web page's text without its ASCII tags), default ``data``'s head.
        prefer_western: windows-1252 wins unless another encoding fits clearly better (a browser's
            default for an undeclared page; a short French page otherwise reads as cp1257).
    """
    from charset_normalizer import from_bytes

    matches = [m for m in from_bytes(sample if sample is not None else data[:_DETECT_BYTES])
               if not wide_only or m.encoding in _WIDE]
    if not matches:
        return None
    best = matches[0]
    if prefer_western:
        default = next((m for m in matches if m.encoding in ("cp1252", "latin_1", "iso8859_1", "ascii")), None)
        if default is not None and default.chaos <= best.chaos + 0.1 and default.coherence >= best.coherence - 0.05:
            best = default
    encoding = "cp1252" if best.encoding in ("latin_1", "iso8859_1") and prefer_western else best.encoding
    if encoding in _WIDE and not _nuls_in_place(data[:_DETECT_BYTES], encoding):
        return None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None
    return text if _reads_as_text(text) else None


def _nuls_in_place(data: bytes, encoding: str) -> bool:
    """Whether the NUL bytes sit where UTF-16/32 text puts them: in a character's high bytes, almost
    never its low byte (U+0100, U+2000 are rare). ASCII with a few NULs decodes as UTF-16 too, as a
    soup of ideographs ('\\x00\\x01\\x02 not text' is 'Ā\\u2002潮⁴整瑸'): its NULs fall anywhere.

    >>> _nuls_in_place("Köln".encode("utf-16-le"), "utf_16_le"), _nuls_in_place(b"\\x00\\x01\\x02 not text", "utf_16_le")
    (True, False)
    """
    width = 4 if "32" in encoding else 2
    low = 0 if encoding.endswith("le") or encoding in ("utf_16", "utf_32") else width - 1
    chars = len(data) // width
    misplaced = sum(1 for at in range(low, chars * width, width) if data[at] == 0)
    return misplaced <= chars // 100


def _reads_as_text(text: str) -> bool:
    """Few characters no text holds: controls (tab and line ends aside), private-use, unassigned."""
    head = text[:_DETECT_BYTES]
    odd = sum(1 for c in head if c not in "\t\n\r\f" and unicodedata.category(c) in ("Cc", "Co", "Cn", "Cs"))
    return odd <= len(head) * _MAX_ODD_SHARE


def normalise(text: str) -> str:
    """One newline convention, NFC, no control characters other than tab and newline."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", unicodedata.normalize("NFC", text))


_MARKDOWN = (".md", ".markdown")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9-]*)(?:\s[^<>]*)?/?>")
_SPACES_ONLY = re.compile(r"^[ \t]+$", re.M)
_BLANKS = re.compile(r"\n{3,}")
_BACKTICKS = re.compile(r"`+")
# Phrasing tags: removed without a trace ("H<sub>2</sub>O" stays one word). Any other tag (td,
# br, div, a custom <signature>) ends a word, as the box a browser draws for it does.
_PHRASING = {"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font", "i", "ins", "del", "kbd",
             "mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var"}


def markdown_text(text: str) -> str:
    r"""Markdown with its inline HTML turned into the text it shows (see the module docstring).

    >>> markdown_text("| a<br>b | H<sub>2</sub>O &amp; co |\n<!-- note -->\n`<b>&amp;</b>`\n")
    '| a b | H2O & co |\n\n`<b>&amp;</b>`\n'
    """
    out: list[str] = []
    prose: list[str] = []
    fence = ""
    previous_blank = True
    in_indented = False
    for line in text.splitlines(keepends=True):
        opened = _FENCE.match(line)
        indented = (line.startswith("    ") or line.startswith("\t")) and line.strip()
        if fence:
            out.append(line)
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = ""
        elif opened:
            out.append(_prose("".join(prose)))
            prose = []
            fence = opened.group(1)
            out.append(line)
        elif indented and (previous_blank or in_indented) and not prose_open(prose):
            out.append(_prose("".join(prose)))
            prose = []
            in_indented = True
            out.append(line)
        else:
            in_indented = in_indented and not line.strip()
            prose.append(line)
        previous_blank = not line.strip()
    out.append(_prose("".join(prose)))
    return "".join(out)


def prose_open(prose: list[str]) -> bool:
    """An indented line continues the paragraph above it (a lazy continuation), not code."""
    return bool(prose) and bool(prose[-1].strip())


def _prose(text: str) -> str:
    if "<" not in text and "&" not in text:
        return text
    text = _without_comments(text)
    pieces, at = [], 0
    for start, end in _code_spans(text):
        pieces.append(_untagged(text[at:start]))
        pieces.append(text[start:end])
        at = end
    pieces.append(_untagged(text[at:]))
    # A line that held only tags or a comment is blank now: blank lines are one in Markdown.
    return _BLANKS.sub("\n\n", _SPACES_ONLY.sub("", "".join(pieces)))


def _without_comments(text: str) -> str:
    """``<!-- … -->`` removed, scanning once (a regex retried from every unclosed ``<!--`` is quadratic)."""
    out, at = [], 0
    while True:
        start = text.find("<!--", at)
        end = text.find("-->", start + 4) if start >= 0 else -1
        if end < 0:  # no comment left, or one never closed: the rest is text
            break
        out.append(text[at:start])
        at = end + 3
    out.append(text[at:])
    return "".join(out)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """CommonMark code spans: a run of backticks up to the next run of the same length, found
    in one pass over the runs (an unclosed run is literal backticks).

    >>> _code_spans("a `b` c ``d`e`` f ` g")
    [(2, 5), (8, 15)]
    """
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    by_length: dict[int, deque] = {}
    for k, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, deque()).append(k)
    spans, k = [], 0
    while k < len(runs):
        start, end = runs[k]
        later = by_length[end - start]
        while later and later[0] <= k:
            later.popleft()
        if later:
            close = later.popleft()
            spans.append((start, runs[close][1]))
            k = close + 1
        else:
            k += 1
    return spans


def _untagged(text: str) -> str:
    text = _TAG.sub(lambda m: "" if m.group(1).lower() in _PHRASING else " ", text)
    return html.unescape(text)


def title_of(text: str, name: str) -> str:
    """The first ``# Title`` line (closing hashes dropped), else the file name without its suffix.

    >>> title_of("x\\n#  Notes ##\\n", "n.md"), title_of("#Notes", "n.md"), title_of("# ###", "n.md")
    ('Notes', 'n', '#')
    """
    match = _TITLE.search(text)
    if match:
        kept = match.group(1).strip().rstrip("#").rstrip()
        return kept or match.group(1)[:1].strip()  # a title of hashes only keeps its first
    return PurePath(name).name if has_no_real_suffix(name) else PurePath(name).stem


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of a text or Markdown file.

    Raises:
        Empty: zero bytes (the same reason every other extractor gives), or only whitespace.
        Undecodable: not text.
        NoText: nothing left once Markdown's comments and tags are read.
    """
    if not data:
        raise Empty("empty file (0 bytes)")
    text = normalise(decode(data))
    if not text.strip():  # a person calls a file of blank lines empty, not "no text"
        raise Empty(f"empty file (only whitespace, {len(data):,} bytes)")
    if PurePath(name).suffix.lower() in _MARKDOWN:
        text = markdown_text(text)
    if not text.strip():
        raise NoText("the file holds no text")
    return Canonical(text=text, title=title_of(text, name), extractor=NAME, extractor_version=VERSION)
