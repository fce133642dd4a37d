"""PDF layout, on PDFs written here with PyMuPDF: two columns under a centred
line that crosses their gutter (read line by line across before), full-width title, authors and
abstract above the columns and a paragraph below them, a vertical stamp in the margin (kept in
every chunk of its pages before), a paragraph running from the foot of one page onto the next
(its citation opened the first page although most of it is on the second), a title that the running
heads of the other pages repeat in small type (removed with them)."""
import re

import pymupdf

from citeline.extractors import pdf
from citeline.pipeline.chunk import chunk_document
from citeline.pipeline.locate import cited_locators
from citeline.query.cite import locator_fragment, locator_label

WORDS = ("harbour tide ledger cargo vessel quay crane silo berth pilot anchor mooring dredge buoy channel "
         "lock basin wharf ferry jetty").split()


def prose(seed: int, n: int) -> str:
    return " ".join(WORDS[(seed + 7 * i) % len(WORDS)] for i in range(n)).capitalize() + "."


def box(page, rect, text, size=10, align=0):
    assert page.insert_textbox(pymupdf.Rect(*rect), text, fontsize=size, align=align) >= 0, text


def two_column_paper() -> bytes:
    doc = pymupdf.open()
    for number in range(2):
        page = doc.new_page(width=612, height=792)
        top = 72
        if number == 0:
            box(page, (72, 72, 540, 110), "Tidal Ledgers of the Northern Harbours", size=18, align=1)
            for k, x in enumerate((72, 232, 392)):
                box(page, (x, 112, x + 148, 146), f"Author{k} Name\nUniversity {k}", align=1)
            box(page, (72, 148, 540, 168), "Abstract", size=11, align=1)
            box(page, (130, 168, 482, 250), "ABSTRACTSTART " + prose(3, 45) + " ABSTRACTEND")
            top = 258
        else:  # a centred running header, narrower than the page, over the gutter
            page.insert_text((200, 50), "Tidal Ledgers of the Northern Harbours", fontsize=8)
        for column, x in enumerate((72, 318)):
            for k in range(3):
                tag = f"C{number}{column}{k}"
                box(page, (x, top + 140 * k, x + 222, top + 140 * k + 130), f"{tag}START {prose(k + column, 40)} {tag}END")
        box(page, (72, 672, 540, 710), f"FOOT{'AB'[number]}START {prose(5 + 3 * number, 14)} FOOT{'AB'[number]}END")
    return doc.tobytes()


def tags(text: str) -> list[str]:
    return re.findall(r"\b(?:C\d{3}|ABSTRACT|FOOT[AB])(?:START|END)\b|Tidal Ledgers of the Northern Harbours|Author\d|Abstract",
                      text)


def test_full_width_blocks_read_in_place_and_columns_one_after_the_other():
    doc = pdf.extract(two_column_paper(), "paper.pdf")
    expected = ["Tidal Ledgers of the Northern Harbours", "Author0", "Author1", "Author2", "Abstract",
                "ABSTRACTSTART", "ABSTRACTEND"]
    for number in range(2):
        if number:
            expected.append("Tidal Ledgers of the Northern Harbours")
        expected += [f"C{number}{c}{k}{end}" for c in range(2) for k in range(3) for end in ("START", "END")]
        expected += [f"FOOT{'AB'[number]}START", f"FOOT{'AB'[number]}END"]
    assert tags(doc.text) == expected


def stamped(pages: int = 3) -> bytes:
    doc = pymupdf.open()
    for number in range(pages):
        page = doc.new_page(width=612, height=792)
        box(page, (72, 100, 540, 400), f"Page {number + 1}. The agency proposes a rule on harbour tolls. " * 8, size=11)
        page.insert_text((30, 600), "jbell on DSKJLSW7X2PROD with PROPOSALS", fontsize=8, rotate=90)
        if number == 0:  # a turned column header inside the body is text, not a margin stamp
            page.insert_text((300, 520), "Tonnage", fontsize=9, rotate=90)
    return doc.tobytes()


def test_rotated_margin_text_is_removed_and_said_so():
    doc = pdf.extract(stamped(), "rule.pdf")
    assert "jbell" not in doc.text and "DSKJLSW7X2PROD" not in doc.text
    assert "Tonnage" in doc.text and len(re.findall(r"harbour\s+tolls", doc.text)) == 24
    assert "3 rotated margin lines removed as boilerplate (pages 1, 2, 3)" in doc.notes


def page_crossing() -> bytes:
    doc = pymupdf.open()
    first = doc.new_page(width=612, height=792)
    box(first, (72, 72, 540, 690), "Opening. " + " ".join(prose(k, 60) for k in range(6)))
    # the paragraph's first line sits at the foot of page 1, the rest at the top of page 2
    box(first, (72, 700, 540, 730), "The quay records show that the pilots of the northern basin")
    second = doc.new_page(width=612, height=792)
    box(second, (72, 72, 540, 200), "moved every grain vessel at slack water, so the berth fees were charged "
                                    "by the tide table and not by the hour, which the ledger for the year "
                                    "confirms on every line of its cargo register.")
    box(second, (72, 220, 540, 400), "Closing. " + prose(4, 60))
    return doc.tobytes()


def test_a_chunk_over_a_page_break_names_both_pages_and_opens_the_one_holding_most_of_it():
    doc = pdf.extract(page_crossing(), "ledger.pdf")
    chunk = next(c for c in chunk_document(doc.text, doc.title, "d") if "slack water" in c.content)
    assert "pilots of the northern basin" in chunk.content  # one paragraph, one chunk, two pages
    locators = cited_locators(chunk.start, chunk.end, doc.segments)
    assert locator_label("ledger", "", locators) == "ledger, pp. 1–2"  # from the page where it starts
    assert locator_fragment(locators, chunk.start, chunk.end) == "#page=2"  # most of it is there


def test_a_title_repeated_small_as_the_running_head_stays_on_page_one():
    doc = pymupdf.open()
    for number in range(3):
        page = doc.new_page(width=612, height=792)
        if number == 0:  # the title, large, in the top zone; the other pages repeat it small there
            page.insert_text((120, 58), "Tidal Ledgers of the Northern Harbours", fontsize=18)
        else:
            page.insert_text((120, 50), "Tidal Ledgers of the Northern Harbours", fontsize=8)
        box(page, (72, 120, 540, 600), f"Body of page {number + 1}. " + "The harbour ledgers record every vessel. " * 20)
    canonical = pdf.extract(doc.tobytes(), "ledgers.pdf")
    assert canonical.text.startswith("## Tidal Ledgers of the Northern Harbours\n\nBody of page 1.")
    assert canonical.text.count("Tidal Ledgers") == 1  # the running heads still go
    assert "2 running header/footer lines removed" in canonical.notes
