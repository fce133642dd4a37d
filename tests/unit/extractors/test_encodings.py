"""Text in the encodings people's files are in is read, offsets exact (the
canonical text is the decoded text); "undecodable" only for bytes no encoding explains, saying what
was tried; a file of blank lines is "empty". The files are unstructured's (tests/fixtures/realfiles).
"""
from __future__ import annotations

import pytest

import make
from citeline.pipeline.prepare import extract_bytes
from citeline.schemas.errors import Empty, Undecodable
from citeline.schemas.options import ExtractOptions
from testkit import FIXTURES

REAL = FIXTURES / "realfiles"
OPTIONS = ExtractOptions(time_limit_s=60)


@pytest.mark.parametrize("name, says", [
    ("fake-text-utf-16-le.txt", "This is a test document to use for unit tests."),  # UTF-16 without a BOM
    ("fake-text-utf-32.txt", "Important points:"),
    ("umlauts-non-utf8.md", "können\n\nkönnen\n\näöüß"),  # Latin-1
    ("hebrew-text-base64-iso88598i.txt", "8uPr5e8gVGVzbGEgLSDw4"),  # base64 is ASCII text: read as it is
    ("example-steelJIS-datasheet-utf-16.html", "Japanese Steels and Alloys"),
    ("stanley-cups-with-emoji.csv", "Maple Leafs | TOR | 13"),
])
def test_real_files_in_other_encodings_are_read(name, says):
    canonical = extract_bytes((REAL / name).read_bytes(), name, OPTIONS)
    assert says in canonical.text, canonical.text[:300]
    assert "\ufffd" not in canonical.text and "\x00" not in canonical.text


@pytest.mark.parametrize("suffix", [".txt", ".md", ".csv", ".html"])
def test_utf16_and_latin1_without_a_mark_are_read_in_every_text_format(suffix):
    text = "<p>Grüße aus Köln, café crème</p>" if suffix == ".html" else "Grüße aus Köln, café crème\n"
    for encoding in ("utf-16-le", "utf-16-be", "latin-1"):
        canonical = extract_bytes(text.encode(encoding), f"note{suffix}", OPTIONS)
        assert "Grüße aus Köln" in canonical.text, (encoding, canonical.text)


def test_bytes_no_encoding_explains_are_undecodable_saying_what_was_tried():
    with pytest.raises(Undecodable, match=r"not valid UTF-8 at byte 0: .*; no other encoding explains the bytes "
                                          r"as text \(tried UTF-16, UTF-32 and the legacy code pages"):
        extract_bytes(make.undecodable(), "noise.txt", OPTIONS)


@pytest.mark.parametrize("name", ["photo.txt", "photo.md", "photo.csv", "photo.html"])
def test_a_binary_file_under_a_text_name_is_still_not_text(name):
    """charset-normalizer would explain almost anything: NUL bytes stay binary unless UTF-16/32."""
    for data in (b"\x00\x10JFIF" + bytes(range(256)) * 8, b"\x00\x01\x02 not text"):  # the second: UTF-16 soup
        with pytest.raises(Undecodable, match="binary data"):
            extract_bytes(data, name, OPTIONS)


@pytest.mark.parametrize("name", ["fake-text-all-whitespace.txt"])
def test_a_file_of_blank_lines_is_empty(name):
    with pytest.raises(Empty, match=r"only whitespace, 3 bytes"):
        extract_bytes((REAL / name).read_bytes(), name, OPTIONS)


@pytest.mark.parametrize("name", ["blank.md", "blank.csv", "blank.txt"])
def test_whitespace_in_any_text_format_is_empty(name):
    with pytest.raises(Empty, match="only whitespace"):
        extract_bytes(b" \n\t\r\n  \n", name, OPTIONS)
