"""Whether a PDF page's text layer is garbled, judged in the script it is written in.

The old test counted the words of Tesseract's word list for the OCR language (English): an Arabic,
Persian or Korean layer holds none of them, so a good layer was "garbled" and replaced by English
OCR of the page (recall .006-.068 on such files), while a Latin layer with a few junk tokens
("The Aaalggfitted fc-ugsx Company") passed, since most of its words are words.

Now, per page:

- every letter is given its Unicode script (the first word of its character name: LATIN,
  ARABIC, HANGUL, CJK, ...); the script with the most letters is the page's.
- characters no font should produce as text (private-use code points, U+FFFD, control and
  unassigned code points, ``(cid:N)`` glyph ids) make a layer garbled in any script when they
  are a large share of it: the font has no usable ToUnicode map.
- a page whose script the OCR languages do not read (Arabic with ``eng``) keeps its layer:
  OCR could only turn it into another language's junk. It is garbled only by the character test.
- a page in a script the OCR languages read is judged by words and word shapes: the share of
  its tokens in Tesseract's word list (as before), and the share of *junk tokens*: not in the
  list and shaped like no word of it — a letter three times in a row, no vowel, a capital after
  a lower-case letter, or letter trigrams that (almost) no word of the list holds. Names, acronyms and
  technical terms are mostly out of the list but shaped like words; "Aaalggfitted" and "ugsx"
  are not.

An OCR'd page replaces the layer only when its own judgement is clearly better
(``better``); pdf.py notes each page OCR'd and why.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

# Tesseract language codes -> the scripts they read (a code not listed: Latin).
_LANG_SCRIPTS = {
    **{code: {"ARABIC"} for code in ("ara", "fas", "urd", "pus", "uig", "snd", "script/Arabic")},
    **{code: {"CYRILLIC"} for code in ("rus", "ukr", "bel", "bul", "mkd", "srp", "kaz", "kir", "mon", "tgk", "tat",
                                       "uzb_cyrl", "script/Cyrillic")},
    **{code: {"GREEK"} for code in ("ell", "grc", "script/Greek")},
    **{code: {"HEBREW"} for code in ("heb", "yid", "script/Hebrew")},
    **{code: {"HANGUL", "CJK"} for code in ("kor", "kor_vert", "script/Hangul", "script/Hangul_vert")},
    **{code: {"CJK", "HIRAGANA", "KATAKANA"} for code in ("jpn", "jpn_vert", "script/Japanese", "script/Japanese_vert")},
    **{code: {"CJK"} for code in ("chi_sim", "chi_tra", "chi_sim_vert", "chi_tra_vert", "script/HanS", "script/HanT")},
    **{code: {"DEVANAGARI"} for code in ("hin", "mar", "nep", "san", "script/Devanagari")},
    **{code: {"THAI"} for code in ("tha", "script/Thai")},
    **{code: {"BENGALI"} for code in ("ben", "asm", "script/Bengali")},
    **{code: {"TAMIL"} for code in ("tam", "script/Tamil")},
    **{code: {"GEORGIAN"} for code in ("kat", "kat_old", "script/Georgian")},
    **{code: {"ARMENIAN"} for code in ("hye", "script/Armenian")},
    **{code: {"ETHIOPIC"} for code in ("amh", "tir", "script/Ethiopic")},
}
# Scripts whose words are one run of letters with no spaces: tokens are not words there.
_UNSPACED = {"CJK", "HIRAGANA", "KATAKANA", "THAI"}
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_CID = re.compile(r"\(cid:\d+\)")
_VOWELS = set("aeiouyàáâãäåæèéêëìíîïòóôõöøùúûüýÿœ")
_TRIPLE = re.compile(r"(.)\1\1")
_CAMEL = re.compile(r"[a-z][A-Z]")
_NO_VOWEL_RUN = re.compile(r"[^aeiouyàáâãäåæèéêëìíîïòóôõöøùúûüýÿœ'’]{5}")

MIN_TOKENS = 8  # fewer tokens than this: too little to call a layer garbled by its words
JUNK_CHARS = 0.3  # this share of undecodable characters makes a layer garbled in any script
JUNK_TOKENS = 0.2  # this share of junk tokens (out of the word list and shaped like no word) is garbled
_BETTER = 0.2  # how much better OCR's quality must be to replace a layer


@dataclass(frozen=True)
class Judgement:
    """What a page's text says of itself."""

    script: str  # the script of most of its letters ("LATIN", "ARABIC", "HANGUL", "CJK", ...), "" if none
    readable: bool  # whether the OCR languages read that script
    tokens: int  # letter tokens, any script
    words: float  # share of the script's tokens in the word list (1.0 where the list does not apply)
    junk: float  # share of junk tokens, or of undecodable characters, whichever is larger
    why: str  # why it is garbled; "" when it is not

    @property
    def garbled(self) -> bool:
        return bool(self.why)

    @property
    def quality(self) -> float:
        return self.words - self.junk


def scripts_of(lang: str) -> set[str]:
    """The scripts Tesseract reads with ``lang`` (``eng+ara``: Latin and Arabic)."""
    out: set[str] = set()
    for code in (lang or "eng").split("+"):
        out |= _LANG_SCRIPTS.get(code, {"LATIN"})
    return out


@functools.lru_cache(maxsize=4096)
def script(char: str) -> str:
    """The script of a letter, from its Unicode name: ``script("ب") == "ARABIC"``.

    >>> script("a"), script("ب"), script("한"), script("中"), script("Ж")
    ('LATIN', 'ARABIC', 'HANGUL', 'CJK', 'CYRILLIC')
    """
    name = unicodedata.name(char, "")
    first = name.split(" ", 1)[0]
    if first in ("FULLWIDTH", "HALFWIDTH"):  # FULLWIDTH LATIN CAPITAL LETTER A, HALFWIDTH KATAKANA ...
        first = name.split(" ", 2)[1]
    return first


def _undecodable(char: str) -> bool:
    category = unicodedata.category(char)
    return char == "\ufffd" or category in ("Co", "Cn", "Cs") or (category == "Cc" and char not in "\n\r\t")


def judge(text: str, vocab: frozenset[str] | None, lang: str = "eng", min_word_ratio: float = 0.5) -> Judgement:
    """How garbled ``text`` (a page's text layer, or its OCR) is, in the script it is written in.

    >>> judge("وعليه فإن الحكومة المصرية تضع " * 3, None).garbled
    False
    >>> judge("The Aaalggfitted fc-ugsx Company xqzt mnbvc ffffound the Bkkkjq rsxtz report", None).why
    'junk tokens: 6 of 12 (Aaalggfitted, xqzt, mnbvc)'
    """
    cids = len(_CID.findall(text))
    text = _CID.sub(" ", text)
    letters = Counter(script(c) for c in text if c.isalpha())
    bad = sum(1 for c in text if _undecodable(c)) + cids
    tokens = [t for t in _TOKEN.findall(text) if len(t) >= 2]
    main = letters.most_common(1)[0][0] if letters else ""
    readable = not main or main in scripts_of(lang)
    chars = bad / max(1, sum(letters.values()) + bad)
    if chars >= JUNK_CHARS and bad >= MIN_TOKENS:
        return Judgement(main, readable, len(tokens), 0.0, chars,
                         f"undecodable characters: {chars:.0%} (private-use, U+FFFD, control or glyph ids)")
    if not readable or main in _UNSPACED:
        # No word list applies: OCR in another language could only make junk of the page.
        return Judgement(main, readable, len(tokens), 1.0, chars, "")
    own = [t for t in tokens if script(t[0]) == main]
    if not own:
        return Judgement(main, readable, len(tokens), 0.0, chars, "")
    known = [t for t in own if vocab is not None and t.lower() in vocab]
    junk = [t for t in own if (vocab is None or t.lower() not in vocab) and junk_shaped(t, vocab)]
    words = len(known) / len(own) if vocab is not None else 1 - len(junk) / len(own)
    share = len(junk) / len(own)
    why = ""
    if len(own) >= MIN_TOKENS:
        if vocab is not None and words < min_word_ratio:
            why = f"words of the {lang} word list: {words:.0%} of {len(own)} tokens"
        elif share >= JUNK_TOKENS:
            why = f"junk tokens: {len(junk)} of {len(own)} ({', '.join(junk[:3])})"
    return Judgement(main, readable, len(tokens), words, max(share, chars), why)


def junk_shaped(token: str, vocab: frozenset[str] | None) -> bool:
    """A token shaped like no word: a letter three times running, no vowel (a word of 3+ letters
    in lower case), a capital after a lower-case letter, five letters without a vowel, or (with
    the word list, for a token of ASCII letters) letter trigrams that at most ``_RARE`` words of the
    list hold: one in a token of up to five letters, two in a longer one.

    Acronyms (all capitals, up to 6 letters) and non-Latin tokens are never junk by shape.

    >>> [junk_shaped(t, None) for t in ("Aaalggfitted", "xqzt", "rhythm", "NASA", "strengths", "fc")]
    [True, True, False, False, False, False]
    """
    if script(token[0]) != "LATIN":
        return False
    if token.isupper() and len(token) <= 6:
        return False
    low = token.lower()
    if _TRIPLE.search(low) or (_CAMEL.search(token) and not token.startswith(("Mc", "Mac"))):
        return True
    if len(low) >= 3 and not any(c in _VOWELS for c in low):
        return True
    if _NO_VOWEL_RUN.search(low) and not low.endswith(("ths", "thm", "thms", "ngths")):
        return True
    if vocab is not None and len(low) >= 4 and low.isascii():
        counts = trigrams(vocab)
        padded = f"^{low}$"
        rare = sum(1 for k in range(len(padded) - 2) if counts.get(padded[k:k + 3], 0) <= _RARE)
        return rare >= (1 if len(low) <= 5 else 2)
    return False


_RARE = 2  # a trigram in this few words of the list (of ~200k for eng) is one no word is made of
_TRIGRAMS: dict[int, dict[str, int]] = {}


def trigrams(vocab: frozenset[str]) -> dict[str, int]:
    """How many words of the list hold each letter trigram, ``^``/``$`` marking their ends (built
    once per list: 0.8 s for eng's 197k words)."""
    key = id(vocab)
    if key not in _TRIGRAMS:
        counts: Counter[str] = Counter()
        for word in vocab:
            padded = f"^{word}$"
            counts.update({padded[k:k + 3] for k in range(len(padded) - 2)})
        _TRIGRAMS.clear()  # one list at a time: the run's
        _TRIGRAMS[key] = dict(counts)
    return _TRIGRAMS[key]


def better(ocr: Judgement, layer: Judgement) -> bool:
    """Whether the page's OCR is clearly better than its text layer: OCR in a script the languages
    read, of a quality (words less junk) at least ``_BETTER`` above the layer's."""
    return ocr.readable and ocr.quality >= layer.quality + _BETTER
