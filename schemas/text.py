"""Text that came from a document, made safe to show: one function, used by every printer.

A file name, PDF title, page label, sheet name or quote is hostile input. Printed raw, an
``ESC ] … BEL`` sequence retitles or rewrites the terminal (OSC survives a pipe into
``less -R``), a newline forges a second output line, and U+202E turns ``txt.exe`` around.
``visible`` writes every such character as a backslash escape, so it is shown, not obeyed.
JSON output needs none of this: ``json.dumps`` escapes control characters itself.
"""
from __future__ import annotations

import unicodedata

# C0/C1 controls and DEL (Cc), format characters (Cf: bidi overrides and isolates, zero-width
# joiners, BOM), lone surrogates from undecodable file names (Cs), and the Unicode line and
# paragraph separators (Zl, Zp), which some terminals and models treat as new lines.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(text: str) -> str:
    """``text`` with every control, format and separator character written as an escape.

    Args:
        text: anything that came from a document (path, title, label, reason, quote line).

    Returns:
        The same text where each such character is ``\\n``, ``\\xHH`` or ``\\uHHHH``; all
        other characters, accents and scripts included, are unchanged.

    >>> visible("a\\x1b]0;pwned\\x07b\\nc\\u202etxt.exe")
    'a\\\\x1b]0;pwned\\\\x07b\\\\nc\\\\u202etxt.exe'
    >>> visible("Café – naïve")
    'Café – naïve'
    """
    if text.isprintable():  # the common case: nothing to escape (space counts as printable)
        return text
    return "".join(_escape(ch) if unicodedata.category(ch) in _HIDDEN else ch for ch in text)


def visible_lines(text: str) -> list[str]:
    """``text`` split at its line breaks, each line made ``visible``, for multi-line fields (quotes, notes).

    >>> visible_lines("one\\ntwo\\x1b[2J")
    ['one', 'two\\\\x1b[2J']
    """
    return [visible(line) for line in text.split("\n")]


def _escape(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
