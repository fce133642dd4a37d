"""RTF documents as plain text with striprtf (BSD-3-Clause): control words dropped, ``\\'hh``
and ``\\uN`` escapes decoded in the document's code page (``\\ansicpg``, else windows-1252),
paragraphs as lines. No segments: the locator is the canonical text's own character range.
Bounded: the file's size bounds striprtf's single linear pass, and the text is limited as every
extractor's is. Before this extractor an .rtf failed "not read"."""
from __future__ import annotations

import re
from pathlib import PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, NoText, TooLarge
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import text_limit
from citeline.extractors.clean import clean

NAME = "rtf"
VERSION = "1"
# striprtf's regex pass runs in Python over untrusted input: a killable worker (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".rtf",)
MAGIC = (b"{\\rtf",)
_CODEPAGE = re.compile(rb"\\ansicpg(\d{3,5})")


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of an RTF document.

    Raises:
        Empty, Corrupt (not RTF), NoText, TooLarge.
    """
    from striprtf.striprtf import rtf_to_text  # imported here so the registry loads without it

    options = options or ExtractOptions()
    if not data.strip():
        raise Empty("empty file" if not data else "the file holds only whitespace")
    if not data.lstrip().startswith(b"{\\rtf"):
        raise Corrupt("not an RTF document: it does not open with {\\rtf")
    page = _CODEPAGE.search(data[:4096])
    encoding = f"cp{int(page.group(1))}" if page else "cp1252"
    try:
        "".encode(encoding)
    except LookupError:
        encoding = "cp1252"
    # RTF is 7-bit by definition; stray 8-bit bytes are read in the code page, as Word does.
    text = clean(rtf_to_text(data.decode(encoding, errors="replace"), encoding=encoding, errors="replace"))
    if len(text) > text_limit(options, len(data)):
        raise TooLarge("the RTF text is larger than its file allows (max_text_ratio): refused as an amplification")
    if not text.strip():
        raise NoText("the RTF document holds no text")
    return Canonical(text=text, title=PurePath(name).stem, extractor=NAME, extractor_version=VERSION)
