"""XML under the bomb limit but over what its parser can hold is refused.

A ~1 MB .docx whose document.xml honestly holds 300 MB of tiny paragraphs was parsed whole by
lxml, ~15 bytes of memory per byte of XML (4.5 GB), before any check. Now the zip directory
decides: XML parsed whole over ``max_parse_memory_bytes`` / ``XML_MEMORY_PER_BYTE`` fails
``too-large`` with nothing inflated. The tests use a small budget so the inputs stay small.
"""
from __future__ import annotations

import io
import subprocess
import sys
import zipfile

import make
import pytest

from citeline.extractors import docx, pptx, sheet
from citeline.extractors.ooxml import XML_MEMORY_PER_BYTE
from citeline.schemas.errors import TooLarge
from citeline.schemas.options import ExtractOptions

MIB = 1 << 20
_PARAGRAPH = b"<w:p><w:r><w:t>a</w:t></w:r></w:p>"


def _with_part(package: bytes, part: str, grow) -> bytes:
    """``package`` with ``part`` rewritten by ``grow`` (or added when it is missing), deflated."""
    source = zipfile.ZipFile(io.BytesIO(package))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        names = source.namelist()
        for name in names:
            body = source.read(name)
            target.writestr(name, grow(body) if name == part else body)
        if part not in names:
            target.writestr(part, grow(b""))
    return out.getvalue()


def long_docx(xml_bytes: int) -> bytes:
    """A real Word document whose body is ``xml_bytes`` of one-letter paragraphs."""
    def grow(body: bytes) -> bytes:
        head, tail = body.split(b"<w:body>", 1)
        return head + b"<w:body>" + _PARAGRAPH * (xml_bytes // len(_PARAGRAPH)) + tail
    return _with_part(make.handbook_docx(), "word/document.xml", grow)


def _budget(xml_limit: int) -> ExtractOptions:
    return ExtractOptions(max_parse_memory_bytes=xml_limit * XML_MEMORY_PER_BYTE)


def test_a_document_xml_over_the_budget_fails_too_large_naming_the_part():
    with pytest.raises(TooLarge, match=r"bytes of XML to parse whole \(word/document.xml: [\d,]+\), about .* GiB "
                                       r"of memory; the limit is 4,194,304 bytes of XML \(max_parse_memory_bytes"):
        docx.extract(long_docx(8 * MIB), "long.docx", _budget(4 * MIB))


def test_a_document_xml_under_the_budget_is_read():
    # Small: python-docx spends ~1 ms a paragraph here (its style lookup scans every style).
    assert docx.extract(long_docx(32 * 1024), "long.docx", _budget(4 * MIB)).text.count("a") > 900


_CHILD = """
import resource, sys
import docx as _  # python-docx's own import is not the document's memory
from citeline.extractors import docx
from citeline.schemas.errors import DocumentError
from citeline.schemas.options import ExtractOptions
data = open(sys.argv[1], "rb").read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    docx.extract(data, "long.docx", ExtractOptions(max_parse_memory_bytes=int(sys.argv[2])))
    kind = "read"
except DocumentError as exc:
    kind = exc.kind
print(kind, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
"""


def _peak(tmp_path, xml_bytes: int, budget: int) -> tuple[str, int]:
    """Outcome and peak memory growth (bytes) of extracting a long docx in a fresh process."""
    path = tmp_path / f"long-{xml_bytes}.docx"
    path.write_bytes(long_docx(xml_bytes))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(budget)], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    return out[0], int(out[1])


def test_refusing_costs_no_memory_whatever_the_xml_size(tmp_path):
    # Before: both were parsed; 32 MB of XML took ~470 MB more than 8 MB did (14.5 bytes a byte).
    budget = 4 * MIB * XML_MEMORY_PER_BYTE
    (small_kind, small), (large_kind, large) = (_peak(tmp_path, n, budget) for n in (8 * MIB, 32 * MIB))
    assert small_kind == large_kind == "too-large"
    assert large - small < 24 * MIB  # under one byte per extra byte of XML, where parsing took 15


def test_a_presentation_over_the_budget_fails_too_large():
    deck = _with_part(make.deck_pptx(), "ppt/slides/slide1.xml",
                      lambda body: body.replace(b"</p:sld>", b"<!--" + b"x" * (8 * MIB) + b"--></p:sld>"))
    with pytest.raises(TooLarge, match=r"ppt/slides/slide1.xml: "):
        pptx.extract(deck, "deck.pptx", _budget(4 * MIB))


def test_workbook_shared_strings_count_but_streamed_worksheets_do_not():
    book = make.workbook()
    strings = _with_part(book, "xl/sharedStrings.xml", lambda body: body + b"<!--" + b"x" * (8 * MIB) + b"-->")
    with pytest.raises(TooLarge, match=r"xl/sharedStrings.xml: "):
        sheet.extract(strings, "book.xlsx", _budget(4 * MIB))
    first_sheet = next(n for n in zipfile.ZipFile(io.BytesIO(book)).namelist() if n.startswith("xl/worksheets/"))
    padded = _with_part(book, first_sheet, lambda body: body + b"<!--" + b"x" * (8 * MIB) + b"-->")
    assert sheet.extract(padded, "book.xlsx", _budget(4 * MIB)).text  # read-only openpyxl streams it
