"""A PDF text layer is judged garbled in the script it is written in.

Right-to-left and Korean layers, which hold no word of Tesseract's English list, are kept instead
of being OCR'd as English junk (docling's real files, and pages written here with fonts that cover
the script); a Latin layer that is mostly words but full of junk-shaped tokens ("The Aaalggfitted
fc-ugsx Company"), which the word count alone kept, is OCR'd again with a note.
"""
from __future__ import annotations

import unicodedata
from pathlib import Path

import pymupdf
import pytest

from citeline.extractors import garble, pdf
from citeline.extractors.ocr import vocabulary

SCRIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "scripts"
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
ENG = vocabulary("eng")

MEMO_VISIBLE = ["The Allied Fitted Products Company", "received the order on March 4, 1946.",
                "Shipment of the valves will follow", "as soon as the foundry reopens."]
MEMO_LAYER = ("The Aaalggfitted fc-ugsx Company received the ordcr on Marvh 4, 1946. "
              "Shipmcnt of the vxlvqs will follow as soon as thc fsundry reopens.")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _ocr_notes(canonical) -> list[str]:
    return [note for note in canonical.notes if note.startswith("OCR used")]


def test_the_real_arabic_layer_is_kept_not_ocrd_as_english():
    canonical = pdf.extract((SCRIPTS / "right_to_left_02.pdf").read_bytes(), "right_to_left_02.pdf")
    assert "الحكومة المصرية" in _flat(canonical.text)
    assert _ocr_notes(canonical) == []


def test_the_real_korean_layer_is_kept_not_ocrd_as_english():
    canonical = pdf.extract((SCRIPTS / "korean_page1.pdf").read_bytes(), "korean.pdf")
    assert "코로나바이러스감염" in canonical.text and "세계보건기구(WHO)" in canonical.text
    assert _ocr_notes(canonical) == []


def _written(lines: list[str], font: str, fontfile: str | None = None) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page()
    if fontfile:
        page.insert_font(fontname=font, fontfile=fontfile)
    for k, line in enumerate(lines):
        page.insert_text((72, 100 + 24 * k), line, fontname=font, fontsize=14)
    return doc.tobytes()


PERSIAN = ["کتابخانه ملی ایران در شهر تهران قرار دارد و", "هر روز صدها پژوهشگر از آن استفاده می‌کنند",
           "این کتابخانه مجموعه بزرگی از نسخه‌های خطی دارد"]
KOREAN = ["서울 시립 도서관은 매일 아침 아홉 시에 문을 엽니다", "연구자들은 오래된 신문과 지도를 열람할 수 있습니다",
          "도서관 카드는 안내 데스크에서 발급합니다"]


@pytest.mark.skipif(not DEJAVU.exists(), reason="DejaVu Sans (Arabic script) is not installed")
def test_a_persian_layer_written_with_a_font_that_covers_it_is_kept():
    """Laid out by MuPDF's HTML engine (shaped, right to left): the layer holds Arabic presentation
    forms in reading order, as many real Persian PDFs do."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_htmlbox(pymupdf.Rect(72, 72, 540, 400), "".join(f'<p dir="rtl">{line}</p>' for line in PERSIAN),
                        css=f'@font-face {{font-family: fa; src: url({DEJAVU});}} p {{font-family: fa; font-size: 14pt}}')
    canonical = pdf.extract(doc.tobytes(), "persian.pdf")
    text = unicodedata.normalize("NFKC", canonical.text)
    assert "کتابخانه" in text and "پژوهشگر" in text
    assert _ocr_notes(canonical) == []


def test_a_korean_layer_written_with_mupdfs_own_korean_font_is_kept():
    canonical = pdf.extract(_written(KOREAN, "korea"), "korean-written.pdf")  # MuPDF's built-in Droid Sans Fallback
    assert "도서관" in canonical.text and "연구자들은" in canonical.text
    assert _ocr_notes(canonical) == []


def _memo_pdf() -> bytes:
    """A typewritten memo's scan under an invisible text layer that is mostly words with junk among
    them, as a poor 1940s OCR left it."""
    source = pymupdf.open()
    spage = source.new_page(width=420, height=160)
    for k, line in enumerate(MEMO_VISIBLE):
        spage.insert_text((30, 40 + 24 * k), line, fontname="helv", fontsize=14)
    png = spage.get_pixmap(dpi=300, colorspace=pymupdf.csGRAY).tobytes("png")
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=160)
    page.insert_image(page.rect, stream=png)
    page.insert_textbox(pymupdf.Rect(30, 28, 400, 150), MEMO_LAYER, fontname="helv", fontsize=14, render_mode=3)
    return doc.tobytes(deflate=True)


def test_a_latin_layer_full_of_junk_tokens_is_ocrd_again_with_a_note():
    assert garble.judge(MEMO_LAYER, ENG).words >= 0.5  # mostly words: the word count alone kept this layer
    canonical = pdf.extract(_memo_pdf(), "memo.pdf")
    text = _flat(canonical.text)
    assert "Aaalggfitted" not in text and "ugsx" not in text
    assert "The Allied Fitted Products Company" in text and "foundry reopens" in text
    assert _ocr_notes(canonical) == ["OCR used on 1 page (garbled text layer (junk tokens): 1)"]


# ------------------------------------------------------------------------- the judgement itself

def test_good_text_in_any_script_is_not_garbled():
    for text in [" ".join(MEMO_VISIBLE) * 2, " ".join(PERSIAN), " ".join(KOREAN), "图书馆每天早上九点开门，研究人员可以查阅旧报纸和地图。" * 3,
                 "Библиотека открывается каждый день в девять часов утра и закрывается вечером"]:
        assert not garble.judge(text, ENG).garbled, text


def test_a_script_the_ocr_languages_do_not_read_is_never_sent_to_ocr():
    said = garble.judge(" ".join(PERSIAN), ENG, "eng")
    assert (said.script, said.readable) == ("ARABIC", False)
    assert garble.judge(" ".join(PERSIAN), ENG, "eng+fas").readable
    assert garble.judge(" ".join(KOREAN), ENG, "kor").script == "HANGUL"


def test_undecodable_glyphs_are_garbled_in_any_script():
    private = "".join(chr(0xE000 + k % 300) for k in range(200))
    said = garble.judge(private + " ab", ENG)
    assert said.garbled and said.why.startswith("undecodable characters")
    assert garble.judge("(cid:12)(cid:40)(cid:7) " * 20, ENG).garbled


def test_junk_shaped_tokens_are_told_from_names_and_terms():
    """(A camel-cased name, "LanceDB", is junk-shaped: one in five tokens of a page must be junk.)"""
    junk = ["Aaalggfitted", "ugsx", "vxlvqs", "Marvh", "Bkkkjq"]
    fine = ["Tesseract", "Kubernetes", "docling", "NASA", "rhythm", "strengths", "Zürich", "McDonald"]
    assert [t for t in junk if not garble.junk_shaped(t, ENG)] == []
    assert [t for t in fine if garble.junk_shaped(t, ENG)] == []


def test_ocr_replaces_a_layer_only_when_clearly_better():
    layer = garble.judge(MEMO_LAYER, ENG)
    assert garble.better(garble.judge(" ".join(MEMO_VISIBLE), ENG), layer)
    assert not garble.better(garble.judge(MEMO_LAYER, ENG), layer)
    arabic_as_english = garble.judge("ail aga Gl cally gle ll yall algal ASI", ENG)
    assert not garble.better(arabic_as_english, garble.judge(" ".join(PERSIAN), ENG, "eng"))


def test_an_arabic_ligature_keeps_its_letters_in_reading_order():
    """MuPDF hands a lam-alef glyph's second letter first, as a zero-width character: "الأ"
    (the article before an alef with hamza) read "األ" in 1 of 5 words of this file (docling's)."""
    text = pdf.extract((SCRIPTS / "right_to_left_02.pdf").read_bytes(), "right_to_left_02.pdf").text
    assert "الأولويو" in text and "الإنسخن" in text
    assert "األ" not in text and "اإل" not in text
