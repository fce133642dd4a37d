"""Magic bytes choose the extractor first, the suffix second."""
import pytest

from citeline import extractors

from citeline.extractors import calc, delimited, docx, html, media, ocr, pdf, pptx, sheet, text
from citeline.schemas.errors import NotADocument, UnsupportedType


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (lambda m: m.two_column_pdf(), pdf),
        (lambda m: m.scan_png(), ocr),
        (lambda m: m.scan_jpeg(), ocr),
        (lambda m: m.tiff_pages(), ocr),
        (lambda m: m.workbook(), sheet),
        (lambda m: m.encrypted_xlsx(), calc),
        (lambda m: m.legacy_xls(), calc),
        (lambda m: m.services_ods(), calc),
        (lambda m: m.handbook_docx(), docx),
        (lambda m: m.deck_pptx(), pptx),
        (lambda m: m.guide_html(), html),
        (lambda m: m.speech("ogg"), media),
        (lambda m: m.speech("wav"), media),
        (lambda m: m.speech("mp3"), media),
        (lambda m: m.speech("mp4"), media),
        (lambda m: b"\x1a\x45\xdf\xa3" + bytes(60), media),  # Matroska / WebM (EBML)
        (lambda m: b"\xff\xfb\x90\x00" + bytes(60), media),  # MP3 frame without ID3
    ],
    ids=["pdf", "png", "jpeg", "tiff", "xlsx", "ole2-encrypted", "ole2-xls", "ods", "docx", "pptx", "html", "ogg", "wav", "mp3", "mp4",
         "webm", "mp3-sync"],
)
def test_magic_wins_over_a_wrong_suffix(make, data, expected):
    head = data(make)[:8192]
    assert extractors.for_bytes(head, "misnamed.txt") is expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [("notes.md", text), ("a.pdf", pdf), ("b.TIFF", ocr), ("c.xlsx", sheet), ("d.m4a", media), ("e.xls", calc),
     ("f.ods", calc), ("g.docx", docx), ("h.pptx", pptx), ("i.htm", html), ("j.csv", delimited), ("k.TSV", delimited)],
)
def test_suffix_when_no_magic(name, expected):
    assert extractors.for_bytes(b"no magic here", name) is expected


def test_image_brands_of_iso_media_are_not_audio():
    heic, avif = (b"\x00\x00\x00\x18ftyp" + brand + bytes(12) for brand in (b"heic", b"avif"))
    assert not media.claims(heic) and not media.claims(avif)
    assert extractors.for_bytes(heic, "photo.heic") is ocr  # a HEIC photo is OCR'd
    with pytest.raises(UnsupportedType):
        extractors.for_bytes(avif, "photo.avif")


def test_every_extractor_is_stamped_and_text_comes_last():
    modules = list(extractors.registered().values())
    assert modules[-1] is text
    for module in modules:
        assert module.NAME and module.VERSION


@pytest.mark.parametrize(
    ("head", "name", "says"),
    [
        (b"7z\xbc\xaf\x27\x1c\x00\x04" + bytes(40), "backup.7z", "a 7-Zip archive (.7z)"),
        (b"\x7fELF\x02\x01\x01" + bytes(40), "tool", "an ELF executable"),
        (b"print('hi')\n", "tool.py", "Python source"),
        (b"\x00\x01\x02\x03", "blob.bin", "binary data of an unknown type (.bin), starting b'\\x00\\x01\\x02\\x03'"),
    ],
    ids=["7z", "elf", "code", "binary"],
)
def test_an_unsupported_file_is_one_short_line_naming_its_type(head, name, says):
    """The reason listed all 31 known suffixes. Now: no document, set aside."""
    with pytest.raises(NotADocument) as caught:
        extractors.for_bytes(head, name)
    assert str(caught.value) == says


@pytest.mark.parametrize("name", ["LICENSE", "README", "Apache-2.0", "COPYING.1"])
def test_text_without_a_real_suffix_is_sniffed_as_text(name):
    """These failed as 'suffix .0' / 'suffix none'."""
    head = b"Apache License\nVersion 2.0, January 2004\n\n   TERMS AND CONDITIONS\n"
    assert extractors.for_bytes(head, name) is text
    assert text.extract(head, name).title == name


@pytest.mark.parametrize("head", [b"\x7fELF\x02\x01" + bytes(40), b"\xfe\xfd\xfc" * 20, b""])
def test_binary_without_a_suffix_is_not_text(head):
    with pytest.raises(UnsupportedType):
        extractors.for_bytes(head, "LICENSE")


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
