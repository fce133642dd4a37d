"""A list counter as the text a reader sees: Word's number formats (``w:numFmt``), which
PowerPoint's auto-numbers and HTML's ``<ol type>`` name too."""
from __future__ import annotations

_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
          (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))


def counter_text(n: int, fmt: str) -> str:
    """A counter in a level's number format (the common ones; others as decimal numbers).

    >>> [counter_text(n, f) for n, f in ((3, "lowerLetter"), (28, "upperLetter"), (14, "lowerRoman"), (7, "decimalZero"))]
    ['c', 'BB', 'xiv', '07']
    >>> counter_text(10**9, "lowerLetter")  # not a billion-letter label: a hostile start stays a number
    '1000000000'
    """
    if fmt in ("lowerLetter", "upperLetter") and 0 < n <= 26 * 40:  # "aa", "bbb": a hostile start is a number
        letter = chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)
        return letter.upper() if fmt == "upperLetter" else letter
    if fmt in ("lowerRoman", "upperRoman") and 0 < n < 4000:
        out = ""
        for value, numeral in _ROMAN:
            while n >= value:
                out, n = out + numeral, n - value
        return out.upper() if fmt == "upperRoman" else out
    if fmt == "decimalZero":
        return f"{n:02d}"
    if fmt == "none":
        return ""
    return str(n)
