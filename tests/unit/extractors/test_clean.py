import time

import pytest

from citeline.extractors.clean import Deadline, clean, dehyphenate, fix_ligatures
from citeline.schemas.errors import Timeout


def test_ligatures_expand_and_nothing_else_changes():
    assert fix_ligatures("\ufb00 \ufb01 \ufb02 \ufb03 \ufb04 \ufb06") == "ff fi fl ffi ffl st"
    # NFKC on the whole text would turn these into 2, fi->fi and "1/2"; they must stay.
    assert clean("x² ½ ﬁnal") == "x² ½ final"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("infor-\nmation", "information"),
        ("the infor-  \n  mation desk", "the information desk"),
        ("infor\u00ad\nmation", "information"),  # soft hyphen
        ("infor\u2010\nmation", "information"),  # U+2010 HYPHEN
        ("state-\nof-the-art", "state-of-the-art"),
        ("self-\nevident", "self-evident"),
        # A compound broken at one of its own hyphens (a dev PDF lost "text-to-image" as "text-toimage").
        ("a text-to-\nimage model", "a text-to-image model"),
        ("TEXT-TO-\nIMAGE", "TEXT-TO-IMAGE"),
        ("COVID-\n19", "COVID-\n19"),  # a digit: not a broken word
        ("Smith-\nJones", "Smith-\nJones"),  # a capital: a name, not a broken word
        ("an ELE-\nMENT", "an ELEMENT"),  # a word set in capitals
        ("is OP-  \n TIONAL.", "is OPTIONAL."),
        ("SELF-\nEVIDENT", "SELF-EVIDENT"),
        ("ASN.1 A-\nB", "ASN.1 A-\nB"),  # one capital before the hyphen: a label, kept
        ("UTF-\n8", "UTF-\n8"),
        ("ends with a dash -\nnext", "ends with a dash -\nnext"),
    ],
)
def test_line_end_hyphenation(raw, expected):
    assert clean(raw) == expected


def test_vocabulary_keeps_a_hyphen_it_knows():
    vocab = {"co-operate", "information"}
    assert dehyphenate("co-\noperate", vocab) == "co-operate"
    assert dehyphenate("infor-\nmation", vocab) == "information"


def test_control_characters_and_line_ends():
    assert clean("a\x00b\x07c\td\r\ne\rf\u200bg\ufeff") == "abc\td\ne\nfg"
    assert clean("\n\n  para one  \n\n\n\npara two\n\n") == "  para one\n\npara two"


def test_deadline():
    Deadline(None).check("anywhere")
    deadline = Deadline(0.01)
    time.sleep(0.02)
    with pytest.raises(Timeout, match="page 3"):
        deadline.check("page 3")
    assert Timeout.kind == "timeout"
