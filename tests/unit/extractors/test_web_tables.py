"""HTML pages and CSV/TSV files: main content, headings, exact locators, and a
reason for every hostile input."""
import pytest

from citeline.extractors import delimited, html
from citeline.pipeline.chunk import chunk_document
from citeline.pipeline.locate import locators_for
from citeline.query.cite import locator_fragment, locator_label
from citeline.schemas.errors import Corrupt, Empty, NoText, Undecodable
from citeline.schemas.locator import Passage, RowRange


@pytest.fixture(scope="session")
def guide(make):
    return html.extract(make.guide_html(), "guide.html")


@pytest.fixture(scope="session")
def services(make):
    return delimited.extract(make.services_csv(), "services.csv")


def _cite(canonical, phrase):
    chunks = [c for c in chunk_document(canonical.text, canonical.title, "d", "E") if phrase in c.content]
    assert len(chunks) == 1, phrase
    c = chunks[0]
    assert canonical.text[c.start:c.end] == c.content
    locators = locators_for(c.start, c.end, canonical.segments)
    return c.section, locator_fragment(locators, c.start, c.end), locator_label(canonical.title, c.section, locators)


# ------------------------------------------------------------------------------ html


def test_html_keeps_the_main_content_and_drops_boilerplate(guide, h):
    h.check_segments(guide)
    for gone in ("Home", "About the site", "Menu one", "other harbours", "Copyright", "not content", "color: red"):
        assert gone not in guide.text
    assert guide.title == "Harbour guide"
    assert html.extract(b"<html><head><title>From the head</title></head><body><h1>Heading</h1><p>Text.</p></body></html>",
                        "t.html").title == "From the head"
    assert "The harbour committee meets on Fridays at the pier office." in guide.text
    assert "- Boats under 8 m pay half price\n- Kayaks moor for free" in guide.text
    assert "service | port\nssh | 22\nsmtp | 25" in guide.text
    assert "The office opens at nine o'clock.\n\nIt closes at five.\n\nClosed on holidays." in guide.text
    assert "berth 1  north\nberth 2  south" in guide.text  # <pre> keeps its lines and spaces


def test_html_headings_are_sections_located_by_path_and_nearest_id(guide, h):
    assert h.locators_of(guide, "Mooring costs 12 euros") == [Passage("Harbour guide > Fees", "fees")]
    assert h.locators_of(guide, "It closes at five.") == [Passage("Harbour guide > Office times", "")]
    section, fragment, label = _cite(guide, "Mooring costs 12 euros")
    assert section == "Fees" and label == "Harbour guide > Fees (#fees)"  # the h1 is the title: said once
    start = guide.text.index("Mooring costs")
    assert fragment.startswith("#char=") and int(fragment[6:].split(",")[0]) <= start


@pytest.mark.parametrize(
    ("data", "error", "reason"),
    [
        (b"", Empty, "0 bytes"),
        (b"<html><body><nav>Only a menu</nav><footer>and a footer</footer></body></html>", NoText, "no text"),
        (b"<html><head><meta charset='klingon-8'></head><body>\xff\xfe caf\xe9</body></html>", Undecodable,
         "unknown charset"),
        (b"\x00" * 64, Undecodable, "binary data"),
    ],
    # An undeclared cp1252 page is no longer one: it is read as a browser reads it
    # (tests/unit/extractors/test_docling_fidelity.py).
    ids=["empty", "boilerplate-only", "unknown-charset", "binary"],
)
def test_hostile_html_fails_with_its_reason(data, error, reason):
    with pytest.raises(error, match=reason):
        html.extract(data, "bad.html")


def test_a_declared_charset_is_honoured():
    page = "<html><head><meta charset='iso-8859-1'></head><body><p>Caf\u00e9 au lait.</p></body></html>"
    assert html.extract(page.encode("latin-1"), "cafe.html").text == "Caf\u00e9 au lait."


def test_deep_nesting_and_a_huge_page_stay_within_limits():
    # libxml2 keeps 2048 levels with huge_tree (256 without); the walk stops recursing at 200.
    deep = b"<html><body>" + b"<div>" * 1500 + b"<p>deep text</p>" + b"</div>" * 1500 + b"</body></html>"
    assert "deep text" in html.extract(deep, "deep.html").text
    rows = "".join(f"<p>Paragraph {k} says something.</p>" for k in range(50_000))
    big = html.extract(f"<html><body>{rows}</body></html>".encode(), "big.html")
    assert big.text.count("\n\n") == 49_999


# ------------------------------------------------------------------------------ csv / tsv


def test_csv_rows_under_a_repeated_header_with_rfc7111_rows(services, h):
    h.check_segments(services)
    blocks = services.text.split("\n\n")
    assert len(blocks) >= 2 and all(b.startswith("service | port | protocol\n") for b in blocks)
    assert "mail, relay backup | 587 | tcp" in services.text  # quoted delimiter and line break
    # Records: 1 header, 2-3 svc00-01, 4 the quoted one, 5 blank, 6.. the rest; ssh is record 46.
    assert h.locators_of(services, "svc00 | 1000 | udp") == [RowRange(2, 22)]
    assert RowRange(1, 1, header=True) in [s.locator for s in services.segments]
    section, fragment, label = _cite(services, "ssh | 22 | tcp")
    assert (fragment, label) == ("#row=23-45", "services, rows 23–45")  # ssh and smtp are records 44-45


def test_tsv_is_split_at_tabs(make):
    canonical = delimited.extract(make.services_csv("\t"), "services.tsv")
    assert canonical.text.startswith("service | port | protocol\nsvc00 | 1000 | udp")


def test_a_header_alone_is_the_data():
    canonical = delimited.extract(b"only,a,header\n", "h.csv")
    assert canonical.text == "only | a | header" and [s.locator for s in canonical.segments] == [RowRange(1, 1)]


@pytest.mark.parametrize(
    ("data", "error", "reason"),
    [
        (b"", Empty, "0 bytes"),
        (b"\n\n,,\n", NoText, "no values"),
        (b"a,b\n\"" + b"x" * 200_000 + b"\",1\n", Corrupt, "not a readable CSV file at record 2"),
        (b"a,b\n\xff\xfe\x00\x01", Undecodable, "binary data"),
    ],
    ids=["empty", "blank", "huge-field", "binary"],
)
def test_hostile_csv_fails_with_its_reason(data, error, reason):
    with pytest.raises(error, match=reason):
        delimited.extract(data, "bad.csv")


def test_a_large_csv_is_read_in_blocks():
    data = b"id,value\n" + b"".join(b"%d,%d\n" % (k, k * k) for k in range(100_000))
    canonical = delimited.extract(data, "big.csv")
    last = canonical.segments[-1].locator
    assert last == RowRange(last.first, 100_001)


def test_a_cell_spanning_rows_is_said_on_every_row_it_spans():
    """A rowspan in a value column: the rows under it held nothing there, so
    "Cherry" read with no colour; each row now says its value, as the peers read the table."""
    page = (b"<html><body><table><tr><th>Fruit</th><th>Price</th><th>Colour</th></tr>"
            b"<tr><td>Apple</td><td>3</td><td rowspan='2'>Red</td></tr><tr><td>Cherry</td><td>9</td></tr>"
            b"<tr><td>Lime</td><td>2</td><td>Green</td></tr></table></body></html>")
    canonical = html.extract(page, "fruit.html")
    assert canonical.text.split("\n")[-3:] == ["Apple | 3 | Red", "Cherry | 9 | Red", "Lime | 2 | Green"]
    (chunk,) = chunk_document(canonical.text, canonical.title, "d", "E")
    assert canonical.text[chunk.start:chunk.end] == chunk.content
