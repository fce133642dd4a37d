"""Plain text and Markdown: the bytes decoded, line ends and control characters normalised."""
from __future__ import annotations

import codecs
import re
import unicodedata
from pathlib import PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Empty, NoText, Undecodable
from citeline.schemas.options import ExtractOptions

from citeline.extractors.sniff import has_no_real_suffix

NAME = "text"
# Not bumped for the whole-name title of Apache-2.0: such files failed before, none is stored.
VERSION = "1"
SUFFIXES = (".txt", ".md", ".markdown", ".text", ".rst")
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
# lazy title before "\s*#*\s*$" backtracked cubically over a run of blanks (issue 32).
_TITLE = re.compile(r"^# +(.+)$", re.MULTILINE)


def decode(data: bytes) -> str:
    """Decode by BOM, else strict UTF-8.

    Raises:
        Undecodable: the bytes are not text in a known encoding.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(encoding)
            except UnicodeDecodeError as exc:
                raise Undecodable(f"invalid {encoding} at byte {exc.start + len(bom)}") from None
    if b"\x00" in data[:8192]:
        raise Undecodable("binary data (NUL bytes) in a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Undecodable(f"not valid UTF-8 at byte {exc.start}: {data[exc.start:exc.start + 8]!r}") from None


def normalise(text: str) -> str:
    """One newline convention, NFC, no control characters other than tab and newline."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", unicodedata.normalize("NFC", text))


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
        Empty: zero bytes (the same reason every other extractor gives).
        Undecodable: not text.
        NoText: nothing but whitespace.
    """
    if not data:
        raise Empty("empty file (0 bytes)")
    text = normalise(decode(data))
    if not text.strip():
        raise NoText("the file holds no text")
    return Canonical(text=text, title=title_of(text, name), extractor=NAME, extractor_version=VERSION)
