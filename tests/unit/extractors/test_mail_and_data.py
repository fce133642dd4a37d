"""E-mail (.eml, Outlook .msg), JSON/NDJSON, YAML, XML and RTF read on
Unstructured's real test files (tests/fixtures/unstructured), each block at a locator that opens
its place: a MIME part, a JSON Pointer, an XML element path. Every one of these files failed
"unsupported-type" before (the .msg files crashed the sync in calc.py)."""
from __future__ import annotations

import email.message
import json
import time
from pathlib import Path

import make
import pytest

from citeline import extractors
from citeline.extractors import eml, jsondata, markup, msg, rtf, xmldata, yamldata
from citeline.query.cite import locator_fragment, locator_label
from citeline.schemas.errors import Corrupt, TooLarge, UnsupportedType
from citeline.schemas.locator import ElementPath, KeyPath, MimePart, Passage, locator_from_dict
from citeline.schemas.options import ExtractOptions

FILES = Path(__file__).parents[2] / "fixtures" / "unstructured"
EML = sorted((FILES / "eml").glob("*.eml"))


def _read(path: Path):
    data = path.read_bytes()
    module = extractors.for_bytes(data[:8192], path.name)
    return module, module.extract(data, path.name, ExtractOptions())


@pytest.mark.parametrize("path", EML, ids=[p.name for p in EML])
def test_every_message_of_the_suite_is_read_with_its_headers_first(path, h):
    module, canonical = _read(path)
    assert module is eml
    h.check_segments(canonical)
    assert canonical.text.startswith(("From: ", "To: ")) and "Subject: " in canonical.text
    assert canonical.segments[0].locator == MimePart("")
    assert "\ufffd" not in canonical.text and "Ã" not in canonical.text and "â\x80" not in canonical.text


@pytest.mark.parametrize(("name", "phrase"), [
    ("fake-email-utf-16-le.eml", "Violets are blue"),  # saved as UTF-16 without a BOM
    ("fake-email-malformed-encoding.eml", "Roses are red"),  # charset and encoding on one broken line
    ("email-replace-mime-encodings-error-4.eml", "Hi! I’m Ihor"),  # UTF-8 labelled iso-8859-1
    ("email-no-html-content-1.eml", "automatically started watching"),  # quoted-printable
    ("mime-word-encoded-subject.eml", "Subject: Simple email with ☸☿ Unicode subject"),  # RFC 2047
    ("mime-multi-to-cc-bcc.eml", "Cc: Tom <tom@example.com>, Alice <alice@example.com>"),
    ("test-iso-8601-date.eml", "Date: 2025-07-29T12:42:06.000Z"),
])
def test_each_encoding_of_the_suite_reads_as_its_text(name, phrase, h):
    _, canonical = _read(FILES / "eml" / name)
    h.find(canonical, phrase)


def test_an_attachment_is_a_section_located_by_its_part_and_name(h):
    _, canonical = _read(FILES / "eml" / "fake-email-attachment.eml")
    assert h.locators_of(canonical, "Hey this is a fake attachment!") == [MimePart("2", "fake-attachment.txt")]
    assert h.locators_of(canonical, "Here's the attachments!") == [MimePart("1.1")]
    assert canonical.title == "Fake email with attachment"


def test_an_attachment_that_cannot_be_read_is_a_note_and_the_message_is_kept():
    _, canonical = _read(FILES / "eml" / "mime-no-body.eml")
    assert "Subject: Image Only Email" in canonical.text
    assert any("image.jpg" in note for note in canonical.notes)


def test_an_html_only_body_is_read_as_a_browser_shows_it(h):
    message = email.message.EmailMessage()
    message["From"], message["Subject"] = "Ana <ana@example.org>", "Harbour"
    message.set_content("<html><body><nav>Menu</nav><p>The harbour opens at <b>six</b>.</p></body></html>",
                        subtype="html", charset="iso-8859-1")
    canonical = eml.extract(message.as_bytes(), "h.eml")
    assert h.locators_of(canonical, "The harbour opens at six.") == [MimePart("1")]
    assert "Menu" not in canonical.text and "<p>" not in canonical.text


@pytest.mark.parametrize("name", ["fake-email.msg", "fake-email-attachment.msg"])
def test_an_outlook_message_is_read_not_crashed_on(name, h):
    module, canonical = _read(FILES / name)
    assert module is msg  # calc.py claimed every OLE2 file: KeyError 'Workbook' stopped the sync
    h.check_segments(canonical)
    assert canonical.text.startswith("From: Ma") and "Date: Fri, " in canonical.text
    h.find(canonical, "This is a test email" if name == "fake-email.msg" else "Here's the attachments!")


def test_an_outlook_attachment_is_a_section_after_the_body(h):
    _, canonical = _read(FILES / "fake-email-attachment.msg")
    assert h.locators_of(canonical, "Hey this is a fake attachment!") == [MimePart("2", "fake-attachment.txt")]
    assert h.locators_of(canonical, "Lots of whitespace") == [MimePart("1")]


def test_an_ole2_file_named_msg_that_is_no_message_fails_alone_with_its_reason():
    workbook = make.legacy_xls()
    assert extractors.for_bytes(workbook[:8192], "book.xls").NAME == "calamine"  # .xls still read by calamine
    assert extractors.for_bytes(workbook[:8192], "book.msg") is msg
    with pytest.raises(UnsupportedType, match="no Outlook message"):
        msg.extract(workbook, "book.msg")
    with pytest.raises(Corrupt):
        msg.extract(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(1024), "cut.msg")


@pytest.mark.parametrize(("name", "phrase", "pointer"), [
    ("arbitrary-records.json", "name: Watering Can", "/1"),
    ("arbitrary-records.ndjson", "name: Pruning Shears", "/2"),
    ("simple.json", "text: These are a few of my favorite things:", "/0"),
    ("spring-weather.html.ndjson", "text: News Around NOAA", "/0"),
    ("simple.yaml", "xmas-fifth-day.partridges.location: a pear tree", ""),
])
def test_a_data_file_is_read_as_records_at_their_json_pointer(name, phrase, pointer, h):
    module, canonical = _read(FILES / name)
    assert module in (jsondata, yamldata)
    h.check_segments(canonical)
    assert h.locators_of(canonical, phrase) == [KeyPath(pointer)]


def test_a_record_s_key_path_is_its_heading_and_a_list_of_scalars_one_line(h):
    data = json.dumps({"shop": {"items": [{"sku": "A-1", "tags": ["red", "big"], "size": {"w": 3}}]}}).encode()
    canonical = jsondata.extract(data, "shop.json")
    assert canonical.text == "## shop > items[0]\nsku: A-1\ntags: red, big\nsize.w: 3"
    assert canonical.segments[0].locator == KeyPath("/shop/items/0")


def test_xml_is_read_as_records_at_their_element_path(h):
    module, canonical = _read(FILES / "factbook-utf-16.xml")  # UTF-16 with a BOM
    assert module is xmldata
    h.check_segments(canonical)
    assert h.locators_of(canonical, "capital: Ottawa") == [ElementPath("/factbook/country[2]")]
    h.find(canonical, "## country[4] name: Trinidad & Tobado")


def test_rtf_is_read_as_its_text(h):
    module, canonical = _read(FILES / "fake-doc.rtf")
    assert module is rtf
    h.find(canonical, "My first paragraph.")
    h.find(canonical, "Row 2, Cell 1")


_BOMB = b"""<?xml version="1.0"?><!DOCTYPE z [<!ENTITY a "aaaaaaaaaa">""" + b"".join(
    b'<!ENTITY %s "%s">' % (bytes([c]), b"&%s;" % bytes([c - 1]) * 10) for c in range(ord("b"), ord("j"))) \
    + b"]><z><x>&i;</x><y>kept</y></z>"


def test_hostile_data_files_fail_fast_with_a_reason_or_read_bounded():
    started = time.monotonic()
    with pytest.raises(Corrupt, match="amplification"):
        xmldata.extract(_BOMB, "bomb.xml")  # libxml2 refuses the entity bomb
    outside = xmldata.extract(b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                              b"<r><a>&x;</a><b>ok</b></r>", "x.xml")
    assert "root:" not in outside.text and "b: ok" in outside.text  # no external entity is read
    laughs = ["a: &a [" + ",".join(['"lol"'] * 9) + "]"]
    laughs += [f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]" for p, c in zip("abcdefgh", "bcdefghi")]
    with pytest.raises(TooLarge, match="amplification"):
        yamldata.extract("\n".join(laughs).encode(), "laughs.yaml")  # 9^9 values from 400 bytes
    with pytest.raises(TooLarge, match="nested too deep"):
        jsondata.extract(b"[" * 100_000 + b"]" * 100_000, "deep.json")
    deep = jsondata.extract(b'{"a":' * 500 + b'"bottom"' + b"}" * 500, "deep.json")  # under the parser's limit
    assert deep.text.endswith(": bottom")
    with pytest.raises(Corrupt, match="record 2"):
        jsondata.extract(b'{"a": 1}\n{"a": \n', "cut.ndjson")
    assert time.monotonic() - started < 5


def test_the_new_locators_round_trip_and_label_a_citation():
    for loc in (KeyPath("/a~1b/0"), ElementPath("/r/c[2]"), MimePart("2", "notes.txt")):
        assert locator_from_dict({**loc.__dict__}) == loc
    assert locator_fragment([KeyPath("/items/2")], 0, 5) == "#/items/2"
    assert locator_fragment([ElementPath("/factbook/country[2]")], 0, 5) == "#xpointer(/factbook/country[2])"
    assert locator_fragment([MimePart("2", "notes.txt")], 0, 5) == "#part=2"
    assert locator_label("Trip", "", [MimePart("2", "notes.txt")]) == "Trip, attachment notes.txt"
    assert locator_label("shop", "", [KeyPath("/items/2")]) == "shop, /items/2"


@pytest.mark.parametrize("name", ["README-w-include.org", "README-w-include.rst"])
def test_org_and_rest_are_text_with_their_headings_and_include_nothing(name, h):
    module, canonical = _read(FILES / name)
    assert module.NAME == "markup"
    h.check_segments(canonical)
    assert canonical.title == "Example Docs"
    assert h.locators_of(canonical, "You can parse this document using the HTML parser.") == [
        Passage("Example Docs > XBRL 10-K")]
    assert "## XBRL 10-K" in canonical.text and "https://www.sec.gov/Archives" in canonical.text  # code kept
    assert "include" not in canonical.text.lower() and "BEGIN_SRC" not in canonical.text and ".. code" not in canonical.text


def test_rest_titles_take_levels_in_the_order_their_adornments_appear(h):
    canonical = markup.extract("=====\nGuide\n=====\n\nIntro.\n\nSetup\n-----\n\nRun it.\n\nLinux\n~~~~~\n\nApt.\n\n"
                               "Usage\n-----\n\nAsk.\n".encode(), "guide.rst")
    assert canonical.title == "Guide"
    assert h.locators_of(canonical, "Apt.") == [Passage("Guide > Setup > Linux")]
    assert h.locators_of(canonical, "Ask.") == [Passage("Guide > Usage")]
