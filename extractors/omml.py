"""Office Math (OMML, ``m:oMath``) as its linear text: the form Word itself types and shows
for an equation in "linear" mode (UnicodeMath), so ``x=(-b±√(b^2-4ac))/(2a)`` can be read,
searched and quoted as the words and numbers it is made of.

A fraction is ``num/den``, a script ``base^sup`` / ``base_sub``, a radical ``√(e)`` (``∛`` and
``∜`` for degrees 3 and 4), an n-ary operator ``∑_(sub)^(sup) e``, a delimiter its characters
around its parts; a part of more than one symbol is put in parentheses. Elements this module
does not know are read as the concatenation of their parts, so no text is ever lost.
"""
from __future__ import annotations

import re

M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MAX_DEPTH = 60  # deeper than this, the text of what lies below is taken as it is
_RADICALS = {"2": "√", "3": "∛", "4": "∜"}
MATH = (f"{M}oMath", f"{M}oMathPara")  # an equation's outer elements


def linear(math) -> str:
    """The linear text of an ``m:oMath`` or ``m:oMathPara`` element.

    >>> from lxml import etree
    >>> ns = 'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"'
    >>> x = etree.fromstring(f'<m:oMath {ns}><m:r><m:t>A=π</m:t></m:r><m:sSup><m:e><m:r><m:t>r</m:t></m:r>'
    ...                      f'</m:e><m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup></m:oMath>')
    >>> linear(x)
    'A=πr^2'
    """
    return _read(math, 0).strip()


def _local(el) -> str:
    tag = el.tag if isinstance(el.tag, str) else ""
    return tag[len(M):] if tag.startswith(M) else ""


def _val(el, path: str, default: str = "") -> str:
    found = el.find(path)
    if found is None:
        return default
    return found.get(f"{M}val", default)


def _part(el, name: str, depth: int) -> str:
    child = el.find(f"{M}{name}")
    return _read(child, depth + 1) if child is not None else ""


def _group(text: str) -> str:
    """A part of more than one symbol in parentheses (``2a`` stays, ``b+c`` becomes ``(b+c)``)."""
    text = text.strip()
    if not text or re.fullmatch(r"[\w.]+", text) or (text[0] in "([{" and _balanced(text)):
        return text
    return f"({text})"


def _balanced(text: str) -> bool:
    """Whether the opening bracket closes at the very end (``(a)(b)`` does not)."""
    depth = 0
    for k, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and k < len(text) - 1:
            return False
    return depth == 0


def _read(el, depth: int) -> str:
    if depth > _MAX_DEPTH:
        return "".join(t.text or "" for t in el.iter(f"{M}t", f"{_W}t"))
    name = _local(el)
    if name == "t" or el.tag == f"{_W}t":
        return el.text or ""
    if name.endswith("Pr") or name in ("ctrlPr",):
        return ""  # properties: no text
    if name == "f":
        num, den = _part(el, "num", depth), _part(el, "den", depth)
        sep = "/" if _val(el, f"{M}fPr/{M}type") != "noBar" else " "
        return f"{_group(num)}{sep}{_group(den)}"
    if name == "sSup":  # a base of more than one symbol is grouped: ((x-c)/v)^2, not (x-c)/v^2
        return f"{_group(_part(el, 'e', depth))}^{_group(_part(el, 'sup', depth))}"
    if name == "sSub":
        return f"{_group(_part(el, 'e', depth))}_{_group(_part(el, 'sub', depth))}"
    if name == "sSubSup":
        return f"{_group(_part(el, 'e', depth))}_{_group(_part(el, 'sub', depth))}^{_group(_part(el, 'sup', depth))}"
    if name == "sPre":
        return f"_{_group(_part(el, 'sub', depth))}^{_group(_part(el, 'sup', depth))}{_part(el, 'e', depth)}"
    if name == "rad":
        degree = _part(el, "deg", depth).strip()
        body = _part(el, "e", depth)
        if degree in ("", "2") or _val(el, f"{M}radPr/{M}degHide") in ("1", "on", "true"):
            return f"√{_group(body) if len(body.strip()) > 1 else body}"
        sign = _RADICALS.get(degree)
        return f"{sign}{_group(body)}" if sign else f"√({degree}&{body})"
    if name == "nary":
        op = _val(el, f"{M}naryPr/{M}chr", "∫")
        sub, sup = _part(el, "sub", depth), _part(el, "sup", depth)
        limits = (f"_{_group(sub)}" if sub.strip() else "") + (f"^{_group(sup)}" if sup.strip() else "")
        return f"{op}{limits} {_part(el, 'e', depth)}"
    if name == "d":
        begin = _val(el, f"{M}dPr/{M}begChr", "(")
        end = _val(el, f"{M}dPr/{M}endChr", ")")
        sep = _val(el, f"{M}dPr/{M}sepChr", "|")
        parts = [_read(e, depth + 1) for e in el.findall(f"{M}e")]
        return f"{begin}{sep.join(parts)}{end}"
    if name == "func":
        fname, body = _part(el, "fName", depth).strip(), _part(el, "e", depth)
        return f"{fname}{body}" if body.startswith(("(", "[")) else f"{fname} {body}"
    if name == "limLow":
        return f"{_part(el, 'e', depth)}_{_group(_part(el, 'lim', depth))}"
    if name == "limUpp":
        return f"{_part(el, 'e', depth)}^{_group(_part(el, 'lim', depth))}"
    if name == "m":  # matrix: rows of cells
        rows = [" & ".join(_read(e, depth + 1) for e in mr.findall(f"{M}e")) for mr in el.findall(f"{M}mr")]
        return f"({' @ '.join(rows)})"
    if name == "eqArr":
        return " @ ".join(_read(e, depth + 1) for e in el.findall(f"{M}e"))
    if name == "oMath" and depth > 0:
        return " " + "".join(_read(child, depth + 1) for child in el) + " "
    # e, num, den, sub, sup, deg, lim, fName, r, acc, bar, box, borderBox, groupChr, phant, oMathPara…
    return "".join(_read(child, depth + 1) for child in el if isinstance(child.tag, str))
