"""Magic bytes choose the extractor first, the suffix second."""
import pytest

from citeline import extractors

from citeline.extractors import media, ocr, pdf, sheet, text
from citeline.schemas.errors import UnsupportedType


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (lambda m: m.two_column_pdf(), pdf),
        (lambda m: m.scan_png(), ocr),
        (lambda m: m.scan_jpeg(), ocr),
        (lambda m: m.tiff_pages(), ocr),
        (lambda m: m.workbook(), sheet),
        (lambda m: m.encrypted_xlsx(), sheet),
        (lambda m: m.legacy_xls(), sheet),
        (lambda m: m.speech("ogg"), media),
        (lambda m: m.speech("wav"), media),
        (lambda m: m.speech("mp3"), media),
        (lambda m: m.speech("mp4"), media),
        (lambda m: b"\x1a\x45\xdf\xa3" + bytes(60), media),  # Matroska / WebM (EBML)
        (lambda m: b"\xff\xfb\x90\x00" + bytes(60), media),  # MP3 frame without ID3
    ],
    ids=["pdf", "png", "jpeg", "tiff", "xlsx", "ole2-encrypted", "ole2-xls", "ogg", "wav", "mp3", "mp4",
         "webm", "mp3-sync"],
)
def test_magic_wins_over_a_wrong_suffix(make, data, expected):
    head = data(make)[:8192]
    assert extractors.for_bytes(head, "misnamed.txt") is expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [("notes.md", text), ("a.pdf", pdf), ("b.TIFF", ocr), ("c.xlsx", sheet), ("d.m4a", media), ("e.xls", sheet)],
)
def test_suffix_when_no_magic(name, expected):
    assert extractors.for_bytes(b"no magic here", name) is expected


def test_image_brands_of_iso_media_are_not_audio():
    heic = b"\x00\x00\x00\x18ftypheic" + bytes(12)
    assert not media.claims(heic)
    with pytest.raises(UnsupportedType):
        extractors.for_bytes(heic, "photo.heic")


def test_every_extractor_is_stamped_and_text_comes_last():
    modules = list(extractors.registered().values())
    assert modules[-1] is text
    for module in modules:
        assert module.NAME and module.VERSION


def test_unknown_type_names_the_known_suffixes():
    with pytest.raises(UnsupportedType, match=r"\.pdf"):
        extractors.for_bytes(b"\x00\x01", "archive.7z")


@pytest.mark.parametrize(
    ("head", "name", "expected"),
    [
        (b"# Notes\nA PDF starts with %PDF-1.7 and ends with %%EOF.", "notes.md", text),
        ("\ufeffUTF-16 text".encode("utf-16-le"), "notes.txt", text),  # FF FE is no MP3 sync
        (b"junk before the header %PDF-1.4", "scan.pdf", pdf),
    ],
    ids=["markdown-quoting-pdf", "utf16-bom", "pdf-with-junk"],
)
def test_text_is_never_sniffed_as_binary(head, name, expected):
    assert extractors.for_bytes(head, name) is expected
