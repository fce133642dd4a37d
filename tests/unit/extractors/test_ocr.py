import io
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from PIL import Image

from citeline.extractors import ocr
from citeline.extractors.ocr import bounded, reading_order
from citeline.schemas.errors import Corrupt, Empty, NotADocument, TooLarge, Truncated
from citeline.schemas.locator import Page
from citeline.schemas.options import ExtractOptions


def test_reading_order_two_and_three_columns():
    left = [(0, y, 40, y + 8) for y in (0, 10, 20)]
    right = [(60, y, 100, y + 8) for y in (0, 10, 20)]
    assert reading_order(left + right, 5) == [[0, 1, 2], [3, 4, 5]]
    cols = [[(x, y, x + 25, y + 8) for y in (0, 10)] for x in (0, 35, 70)]
    assert reading_order(cols[2] + cols[0] + cols[1], 5) == [[2, 3], [4, 5], [0, 1]]


def test_reading_order_full_width_blocks_cut_bands():
    boxes = [
        (0, 0, 100, 8),  # 0 title across both columns
        (0, 10, 40, 18), (0, 20, 40, 28),  # 1, 2 left column, upper band
        (60, 10, 100, 18), (60, 20, 100, 28),  # 3, 4 right column, upper band
        (0, 30, 100, 38),  # 5 full-width figure caption
        (0, 40, 28, 48), (36, 40, 64, 48), (72, 40, 100, 48),  # 6-8 three columns below
    ]
    order = [i for group in reading_order(boxes, 5) for i in group]
    assert order == [0, 1, 2, 3, 4, 5, 6, 7, 8]


def test_paragraphs_aligned_across_columns_do_not_interleave():
    # Paragraph gaps at the same height in both columns must not cut the page into rows.
    boxes = [(0, 0, 40, 20), (0, 30, 40, 50), (60, 0, 100, 20), (60, 30, 100, 50)]
    assert [i for g in reading_order(boxes, 5) for i in g] == [0, 1, 2, 3]


@pytest.fixture(scope="session")
def scan_png(make):
    return ocr.extract(make.scan_png(), "scan.png")


def test_png_scan(scan_png, h):
    h.check_segments(scan_png)
    assert scan_png.extractor == "image-ocr"
    (segment,) = scan_png.segments
    assert segment.locator.page == 1 and segment.locator.ocr_confidence > 80
    h.find(scan_png, "Pump and Bridge Notes")
    h.find(scan_png, "Scanned reports arrive as images. The left column talks about maintenance of the pumps.")
    h.find(scan_png, "The right column covers the budget for the bridge.")
    # the language is detected (--ocr-lang auto, the default) and said, nothing else
    assert scan_png.notes == ("OCR language eng (English) on page 1: English words",)


def test_columns_become_separate_regions(make):
    pixels = Image.open(io.BytesIO(make.scan_png())).convert("L")
    regions = ocr._regions(__import__("numpy").asarray(pixels))
    width = pixels.size[0]
    # The title sits over the left column only, so it is read with it; the two
    # columns are separate regions that do not overlap horizontally.
    assert len(regions) == 2
    left, right = regions
    assert left[2] < width / 2 < right[0]


def test_multipage_tiff_page_by_page(make, h):
    canonical = ocr.extract(make.tiff_pages(), "fax.tiff")
    h.check_segments(canonical)
    assert [s.locator.page for s in canonical.segments] == [1, 2]
    assert h.locators_of(canonical, "talks about apples")[0].page == 1
    assert h.locators_of(canonical, "the winter market.")[0].page == 2


def test_jpeg(make, h):
    canonical = ocr.extract(make.scan_jpeg(), "receipt.jpg")
    assert h.locators_of(canonical, "shows a total of 42 euros.") == [
        Page(1, "", canonical.segments[0].locator.ocr_confidence)
    ]


def test_pixel_budget_downscales_before_ocr(make, h):
    options = ExtractOptions(ocr_max_pixels=2_000_000)  # the scan is ~4.4M pixels
    canonical = ocr.extract(make.scan_png(), "scan.png", options)
    h.find(canonical, "maintenance of the pumps")


def test_bounded():
    image = Image.new("L", (4000, 3000), 255)
    small, factor = bounded(image, 3_000_000)
    assert small.size[0] * small.size[1] <= 3_000_000 and factor == pytest.approx(0.5)
    same, one = bounded(image, 20_000_000)
    assert same is image and one == 1.0


@pytest.mark.parametrize(
    ("data", "error", "reason"),
    [
        (lambda m: b"", Empty, "empty"),
        (lambda m: m.png_claiming(20_000, 10_000), TooLarge, "decompression bomb"),
        (lambda m: m.scan_png()[:5000], Truncated, "ends early"),
        (lambda m: b"\x89PNG\r\n\x1a\n" + b"not really", Corrupt, "not a readable image"),
        (lambda m: m.png_claiming(64, 64), Truncated, "ends early"),
    ],
    ids=["empty", "bomb", "truncated", "corrupt", "no-pixels"],
)
def test_bad_images(make, data, error, reason):
    with pytest.raises(error, match=reason):
        ocr.extract(data(make), "bad.png")


def test_blank_image_has_no_text():
    """A photo with no text is not a document, set aside, not failed."""
    out = io.BytesIO()
    Image.new("L", (600, 400), 255).save(out, format="PNG")
    with pytest.raises(NotADocument, match="an image with no text"):
        ocr.extract(out.getvalue(), "blank.png")


def test_tesseract_thread_limit_stays_out_of_this_process(make, monkeypatch):
    monkeypatch.delenv("OMP_THREAD_LIMIT", raising=False)
    ocr.extract(make.scan_jpeg(), "receipt.jpg")
    assert "OMP_THREAD_LIMIT" not in __import__("os").environ


DEV_DOCS = Path(__file__).resolve().parents[4] / "shared" / "corpora" / "dev" / "docs"


@pytest.mark.slow
def test_lines_tesseract_drops_from_a_legible_page_are_read_again():
    """Page 3 of the dev corpus's hyperparameter chapter as the format evaluation scans
    it: Tesseract's automatic layout left out one line of a paragraph and a whole
    paragraph below it (the needle of q28 was destroyed by the first)."""
    from citeline.evaluation.render import render_pdf, render_scan
    from citeline.extractors import pdf

    scan = pymupdf.open(stream=render_scan(render_pdf("13-hyperopt-intro.md", (DEV_DOCS / "13-hyperopt-intro.md").read_text()),
                                           seed=12), filetype="pdf")
    scan.select([2])
    text = " ".join(pdf.extract(scan.tobytes(), "page3.pdf").text.split())
    assert "for each layer the number of units. The number of units of the" in text
    assert "Random search is the first hyperparameter optimization algorithm" in text


def test_a_dropped_lines_words_join_the_block_above_it_in_page_order():
    data = {"text": ["one", "two", "four"], "conf": ["90", "90", "90"], "block_num": [1, 1, 1],
            "par_num": [1, 1, 1], "line_num": [1, 1, 2], "top": [0, 0, 60], "height": [10, 10, 10],
            "left": [0, 40, 0], "width": [30, 30, 30]}
    gap = {"text": "three", "conf": "88", "block_num": 1, "par_num": 1, "line_num": 1, "top": 30, "height": 10,
           "left": 0, "width": 40}
    merged = ocr._insert_words(data, [(1, [gap])])
    page = ocr._page_text(merged, [(0, 0, 0)], scale=1.0)
    assert [line.text for block in page.blocks for line in block.lines] == ["one two", "three", "four"]


@pytest.mark.parametrize(("runs", "expected"), [
    ([], False),  # a blank paragraph break
    ([2], False),  # speckle
    ([10], True),  # one line of text
    ([10, 4, 11], True),  # two lines
    ([60], False),  # a figure
])
def test_only_line_sized_ink_is_read_again(runs, expected):
    rows = []
    for run in runs:
        rows += [True] * run + [False] * 5
    assert ocr._one_text_line_of_ink(np.array([False] * 5 + rows, dtype=bool), height=10.0) is expected


def table_image(header_fill: str | None, kind: str = "PNG") -> bytes:
    """A ruled table, its header row in bold: on white, or white on ``header_fill``."""
    from PIL import ImageDraw, ImageFont

    fonts = "/usr/share/fonts/truetype/dejavu/DejaVuSans"
    bold, regular = ImageFont.truetype(f"{fonts}-Bold.ttf", 22), ImageFont.truetype(f"{fonts}.ttf", 22)
    rows = [["Region", "Units sold", "Revenue (EUR)", "Returns"], ["North", "1,204", "88,410", "31"],
            ["South", "987", "70,115", "12"], ["East", "1,530", "112,300", "45"]]
    edges = [30, 230, 430, 680, 870]
    image = Image.new("RGB", (900, 60 + 50 * len(rows)), "white")
    draw = ImageDraw.Draw(image)
    for r, row in enumerate(rows):
        top = 30 + 50 * r
        if r == 0 and header_fill:
            draw.rectangle([edges[0], top, edges[-1], top + 50], fill=header_fill)
        for c, cell in enumerate(row):
            draw.text((edges[c] + 10, top + 12), cell, font=bold if r == 0 else regular,
                      fill="white" if r == 0 and header_fill else "black")
        draw.line([edges[0], top, edges[-1], top], fill="black", width=2)
    bottom = 30 + 50 * len(rows)
    draw.line([edges[0], bottom, edges[-1], bottom], fill="black", width=2)
    for x in edges:
        draw.line([x, 30, x, bottom], fill="black", width=2)
    buffer = io.BytesIO()
    image.save(buffer, kind, quality=70)
    return buffer.getvalue()


@pytest.mark.parametrize(("fill", "kind"), [(None, "PNG"), ("#283c6e", "PNG"), ("#111111", "PNG"), ("#283c6e", "JPEG")])
def test_a_table_images_header_row_is_read_on_white_and_on_a_dark_fill(fill, kind, h):
    """White bold print on a navy or black header row: Tesseract found no line there and dropped
    "Units sold" and half of "Revenue (EUR)"; inverted, the row is read first, as one line."""
    doc = ocr.extract(table_image(fill, kind), "sales.img")
    h.check_segments(doc)
    lines = [line for line in doc.text.splitlines() if line.strip()]
    assert lines[:4] == ["Region Units sold Revenue (EUR) Returns", "North 1,204 88,410 31", "South 987 70,115 12",
                         "East 1,530 112,300 45"]


def test_only_a_dark_fill_holding_light_letters_is_inverted():
    from PIL import ImageDraw, ImageFont

    page = Image.new("L", (600, 300), 255)
    draw = ImageDraw.Draw(page)
    draw.rectangle([20, 20, 580, 90], fill=0)  # a black bar: no letters in it
    draw.text((30, 120), "IIII", font=ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", 140),
              fill=0)  # thick black strokes, wider than the opening
    assert ocr.plain_fills(page) is page
    photo = np.asarray(page).copy()
    photo[20:91, 20:581] = np.random.default_rng(0).integers(0, 110, (71, 561))  # a shade, not a fill
    photo[40:60, 40:50] = photo[40:60, 60:70] = photo[40:60, 80:90] = 255
    assert ocr.plain_fills(Image.fromarray(photo)).tobytes() == photo.tobytes()
    draw.text((40, 35), "Quarterly totals", font=ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 30),
              fill=255)
    turned = np.asarray(ocr.plain_fills(page))
    assert turned[50:60, 25].mean() == 255 and (turned[25:85, 40:560] < 128).any()  # the bar light, its letters dark
    assert (turned[150:250] == np.asarray(page)[150:250]).all()  # the big letters untouched


def test_a_scanned_table_with_a_tinted_header_row_keeps_the_header_and_every_cell(h):
    """A real table image (unstructured's test suite): its header row sits on a light-blue fill,
    which Tesseract's binarisation turned black, and its one-digit cells were read only from cut-out
    regions, after the table, out of their rows. Before: no header word, rows without their counts."""
    data = (Path(__file__).parents[2] / "fixtures" / "realfiles" / "table-multi-row-column-cells.png").read_bytes()
    doc = ocr.extract(data, "table-multi-row-column-cells.png")
    h.check_segments(doc)
    lines = [line for line in doc.text.splitlines() if line.strip()]
    header = " ".join(lines[:lines.index("Blind 5 1 4 34.5%, n=1 1199 sec, n=1")])
    for word in ("Disability", "Category", "Participants", "Completed", "Incomplete/", "Terminated", "Results",
                 "Accuracy", "complete"):
        assert word in header.split(), (word, header)
    for row in ("Low Vision 5 2 3 98.3% n=2 1716 sec, n=3", "Dexterity 5 4 1 98.3%, n=4 1672.1 sec, n=4",
                "Mobility 3 3 0 95.4%, n=3 1416 sec, n=3"):
        assert row in lines
    assert doc.text.count("1416 sec, n=3") == 1  # each cell read once
