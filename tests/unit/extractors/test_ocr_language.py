"""OCR reads a page in the language it is in: a Dutch page OCR'd with English,
the old default, loses its diacritics ("ideeën", "coördinatie", "geïnteresseerd" misread); with
``auto`` the page's words say Dutch, it is read again with the ``nld`` pack, and the notes say so;
a page English reads badly is given to Tesseract's OSD, whose script picks the pack (Cyrillic: rus). A named ``--ocr-lang`` is used as given, and noted too."""
import io

import pymupdf
import pytest
from PIL import Image, ImageDraw, ImageFont

from citeline.extractors import langs, ocr, pdf
from citeline.schemas.options import ExtractOptions

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"  # fonts-dejavu-core, installed by `make setup`
DUTCH = ("Het bestuur heeft de ideeën van de commissie voor de coördinatie van de haven besproken. "
         "Eén van de leden was geïnteresseerd in de financiële gevolgen, en de reünie van de "
         "oud-medewerkers werd in het café aan de kade gehouden. Wij zijn het er niet mee eens dat "
         "de kosten van het onderzoek op de rekening van de gemeente komen, maar er is geen andere "
         "oplossing voor dit probleem. De beëdigde vertaler heeft het rapport in het Nederlands "
         "overgezet en de cijfers zijn door de accountant gecontroleerd.")
DIACRITICS = [w for w in DUTCH.split() if any(c in w for c in "ëïéü")]

pytestmark = pytest.mark.skipif("nld" not in ocr.installed_languages() or "osd" not in ocr.installed_languages(),
                                reason="Tesseract's nld and osd packs are missing (make setup installs them)")


def rendered(text: str = DUTCH, width: int = 1700) -> bytes:
    font = ImageFont.truetype(FONT, 34)
    image = Image.new("L", (width, 1400), 255)
    draw = ImageDraw.Draw(image)
    line, y = "", 120
    for word in text.split():
        trial = f"{line} {word}".strip()
        if draw.textlength(trial, font=font) > width - 240:
            draw.text((120, y), line, font=font, fill=0)
            line, y = word, y + 52
        else:
            line = trial
    draw.text((120, y), line, font=font, fill=0)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def test_english_ocr_misreads_a_dutch_page_and_auto_reads_it_in_dutch():
    data = rendered()
    english = ocr.extract(data, "haven.png", ExtractOptions(ocr_lang="eng"))
    assert [w for w in DIACRITICS if w not in english.text.split()]  # what the old default did
    assert english.notes[0] == "OCR language eng (English) on page 1: as given (--ocr-lang)"
    detected = ocr.extract(data, "haven.png", ExtractOptions(ocr_lang="auto"))
    assert [w for w in DIACRITICS if w not in detected.text.split()] == []
    assert detected.notes[0] == "OCR language nld (Dutch) on page 1: Dutch words"


def test_a_scanned_dutch_pdf_page_notes_its_language():
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=504)
    page.insert_image(page.rect, stream=rendered())
    canonical = pdf.extract(doc.tobytes(), "verslag.pdf", ExtractOptions(ocr_lang="auto"))
    assert "coördinatie" in canonical.text and "geïnteresseerd" in canonical.text
    assert "OCR language nld (Dutch) on page 1: Dutch words" in canonical.notes


def test_an_english_page_stays_english():
    text = ("The harbour of the city was opened in 1887 and it was one of the largest in the country. "
            "The ships that arrived here were often tired from the long voyage, but the merchants did not "
            "wait for better times, and the cranes on the quay were driven by steam for many years.")
    detected = ocr.extract(rendered(text), "harbour.png", ExtractOptions())  # auto is the default
    assert "merchants" in detected.text
    assert detected.notes[0] == "OCR language eng (English) on page 1: English words"


@pytest.mark.skipif("rus" not in ocr.installed_languages(), reason="Tesseract's rus pack is missing (make setup)")
def test_a_page_in_another_script_is_read_with_the_pack_osd_names():
    russian = ("Порт города был открыт в тысяча восемьсот восемьдесят седьмом году и был одним из крупнейших "
               "в стране. Корабли, которые приходили сюда, часто были уставшими после долгого пути.")
    english = ocr.extract(rendered(russian), "port.png", ExtractOptions(ocr_lang="eng"))
    assert "Корабли" not in english.text  # English reads Cyrillic as Latin junk
    detected = ocr.extract(rendered(russian), "port.png", ExtractOptions())
    assert "Корабли" in detected.text and "крупнейших" in detected.text
    assert detected.notes[0] == "OCR language rus (Russian) on page 1: Cyrillic script (Tesseract OSD)"


def test_script_packs_map_osd_scripts_to_installed_packs():
    assert langs.pack_for_script("Han", ("eng", "chi_sim")) == "chi_sim"
    assert langs.pack_for_script("Han", ("eng",)) is None  # not installed: English, as before
    assert langs.pack_for_script("Latin", ("eng", "nld")) is None  # Latin: the words decide
