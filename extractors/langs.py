"""Which Tesseract language pack reads a page: OCR assumed English, so a Dutch
scan came out as "@aar Zijgn" for "gaar zijn" and a Chinese one as junk, with no note.

With ``--ocr-lang auto`` (the default) a page is read in English first (or in the previous page's
language). A page that reads well is in Latin script, shared by many languages: its words tell the
language, the one whose commonest words (articles, pronouns, prepositions) make up the largest share
of the page when that share is clear, and the page is read again in it. A page that reads badly may
be in another script: Tesseract's own orientation and script detection (OSD, the ``osd`` pack) names
it, and that script's pack (Han, Arabic, Cyrillic …) reads the page where it is installed. A named
``--ocr-lang`` is used as given. Either way the document's notes say what was used.
"""
from __future__ import annotations

import re
from collections import Counter

import pytesseract
from PIL import Image

AUTO = "auto"
FALLBACK = "eng"
# Scripts OSD names -> the Debian pack that reads them (tesseract-ocr-<pack>, `make setup`).
SCRIPT_PACKS = {
    "Han": "chi_sim", "HanS": "chi_sim", "HanT": "chi_tra", "Arabic": "ara", "Cyrillic": "rus",
    "Hangul": "kor", "Japanese": "jpn", "Greek": "ell", "Hebrew": "heb", "Devanagari": "hin", "Thai": "tha",
}
# The commonest words of each language Latin packs read, none shared by two lists' top words
# enough to sway a page (Dutch "de", French "de" and Spanish "de" all count; the rest decides).
FUNCTION_WORDS = {
    "eng": "the and of to in is that it for was on are with as this be by not or have from at which but".split(),
    "nld": "de het een en van is dat op te zijn niet voor met die er ook als maar om aan bij dit wordt".split(),
    "deu": "der die und das ist nicht zu den von mit sich des auf für im dem ein eine auch es an werden".split(),
    "fra": "le la les et des est une que un du dans pour qui pas sur au avec il ne se sont par plus".split(),
    "spa": "el la los las y que en un una es por con para del se no al lo como más pero su sus".split(),
    "ita": "il di che e la per un una non sono del della gli con le si nel anche come ma più alla".split(),
    "por": "o os as e que um uma não em do da dos das para com no na por se mais ao pelo".split(),
}
NAMES = {"eng": "English", "nld": "Dutch", "deu": "German", "fra": "French", "spa": "Spanish", "ita": "Italian",
         "por": "Portuguese", "chi_sim": "Chinese (simplified)", "chi_tra": "Chinese (traditional)", "ara": "Arabic",
         "rus": "Russian", "kor": "Korean", "jpn": "Japanese", "ell": "Greek", "heb": "Hebrew", "hin": "Hindi",
         "tha": "Thai"}
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_MIN_WORDS = 20  # fewer words than this do not tell a language
_MARGIN = 1.5  # the best language's share must be this many times English's


def script_of(image: Image.Image, timeout: float | None = None) -> str:
    """The script Tesseract's OSD sees on the page ("Latin", "Han", "Arabic" …), or "" when it
    cannot tell (too few characters, no ``osd`` pack)."""
    try:
        osd = pytesseract.image_to_osd(image, config="--psm 0", output_type=pytesseract.Output.DICT,
                                       timeout=timeout or 0)
    except (pytesseract.TesseractError, RuntimeError, ValueError):
        return ""
    return str(osd.get("script", "") or "")


def pack_for_script(script: str, installed: tuple[str, ...]) -> str | None:
    """The installed pack that reads ``script``; None for Latin (the words decide) or unknown."""
    pack = SCRIPT_PACKS.get(script)
    return pack if pack in installed else None


def latin_language(text: str, installed: tuple[str, ...]) -> str:
    """The installed Latin pack whose function words make up most of ``text``; English unless
    another language is clearly ahead (``_MARGIN`` times English's share, enough words).

    >>> latin_language("De haven is in 1887 geopend en het was een van de grootste van het land "
    ...                "maar de schepen zijn niet gekomen want er was geen water voor de boten", ("eng", "nld"))
    'nld'
    >>> latin_language("The harbour opened in 1887 and it was one of the largest in the country", ("eng", "nld"))
    'eng'
    """
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < _MIN_WORDS:
        return FALLBACK
    counts = Counter(words)
    share = {code: sum(counts[w] for w in set(common)) / len(words)
             for code, common in FUNCTION_WORDS.items() if code in installed or code == FALLBACK}
    best = max(share, key=lambda code: (share[code], code == FALLBACK))
    if best != FALLBACK and share[best] >= _MARGIN * share.get(FALLBACK, 0) and share[best] >= 0.08:
        return best
    return FALLBACK


def describe(lang: str) -> str:
    """``nld`` as "nld (Dutch)", ``deu+eng`` as "deu+eng (German, English)"."""
    names = [NAMES.get(code, code) for code in lang.split("+")]
    return f"{lang} ({', '.join(names)})"
