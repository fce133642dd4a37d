"""OCR with Tesseract, page layout shared with the PDF extractor, and image files.

Tesseract reads two columns line by line across the gutter, so a page image is cut into
reading-order regions first (columns within horizontal bands), the regions are stacked
into one tall image, and that image is OCR'd in a single Tesseract call; each word's
box is mapped back to the page. Each page gets the mean confidence of its words.

Image files (PNG, JPEG, TIFF; a multi-page TIFF page by page) become one canonical text
with a ``Page`` locator per frame.
"""
from __future__ import annotations

import bisect
import functools
import io
import os
import re
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path, PurePath

import numpy as np
import pytesseract
from PIL import Image, ImageSequence, UnidentifiedImageError

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, NotADocument, Timeout, TooLarge, Truncated, Unreadable, UnsupportedType
from citeline.schemas.locator import Page
from citeline.schemas.options import ExtractOptions

from citeline.extractors import langs
from citeline.extractors.assemble import Assembler
from citeline.extractors.clean import Deadline, clean

NAME = "image-ocr"
# 2: capitals hyphenated at a line end are rejoined (ELE-\nMENT).
# 3: a compound broken at one of its own hyphens keeps it ("text-to-\nimage").
# 4: lines Tesseract's layout analysis dropped are read again (reread_dropped_lines).
# 5: columns found under a short line crossing their gutter, blocks level with a spanning one read
#    in its row (reading_order, shared with the PDF extractor).
# 6: the OCR language detected per page by default (--ocr-lang auto, extractors/langs.py: OSD's
#    script, a Latin page's words) and noted, as a given one is.
# 7: printed fills made white behind their print (a table's shaded header row: light print on a
#    dark fill inverted, a tint flattened) and a region inside another read once, with it.
VERSION = "7"
# Parses untrusted binary input in C: run in a killable worker process (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".heic", ".heif")
MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*")
# HEIF still images (iPhone photos) by their ftyp brand; Pillow reads them with pillow-heif.
_HEIF_BRANDS = (b"heic", b"heix", b"heim", b"heis", b"mif1", b"msf1")
_BMP_HEADERS = (12, 40, 52, 56, 64, 108, 124)  # the DIB header sizes Windows and OS/2 write


def claims(head: bytes) -> bool:
    """A BMP (``BM``, zero reserved bytes, a known DIB header size: two letters alone would take
    a text file that starts "BMW …") or a HEIF image (an ISO-media ``ftyp`` of an image brand).

    >>> claims(b"BM" + bytes(8) + (54).to_bytes(4, "little") + (40).to_bytes(4, "little")), claims(b"BMW notes")
    (True, False)
    >>> claims(bytes([0, 0, 0, 24]) + b"ftypheic")
    True
    """
    if head.startswith(b"BM") and len(head) >= 18:
        return head[6:10] == bytes(4) and int.from_bytes(head[14:18], "little") in _BMP_HEADERS
    return head[4:8] == b"ftyp" and head[8:12] in _HEIF_BRANDS

Box = tuple[float, float, float, float]  # x0, y0, x1, y1


@dataclass
class Line:
    text: str
    box: Box
    size: float = 0.0  # font size in points, from a text layer (0: unknown, e.g. OCR)
    bold: bool = False


@dataclass
class Block:
    """A run of lines that belong together (a paragraph, or a MuPDF text block)."""

    lines: list[Line] = field(default_factory=list)

    @property
    def box(self) -> Box:
        return union([line.box for line in self.lines])


@dataclass
class PageText:
    """One page's blocks in reading order, and OCR's mean word confidence if OCR'd."""

    blocks: list[Block]
    confidence: float | None = None
    words: int = 0
    lang: str = ""  # the Tesseract language it was OCR'd with ("" for a text layer)
    lang_how: str = ""  # how that language was chosen: "given", or what detected it


def union(boxes: list[Box]) -> Box:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


# ---------------------------------------------------------------------------- layout


def reading_order(boxes: list[Box], min_gap: float) -> list[list[int]]:
    """Group box indices into regions in reading order: bands top to bottom, columns
    left to right inside a band, boxes top to bottom inside a column.

    A column gutter is a vertical strip at least ``min_gap`` wide that no narrow box
    touches. Boxes that cross a gutter (a title, a full-width figure) cut the page into
    bands, each laid out on its own, so 2- and 3-column bands can share a page.

    >>> left = [(0, y, 40, y + 8) for y in (0, 10, 20)]
    >>> right = [(60, y, 100, y + 8) for y in (0, 10, 20)]
    >>> reading_order(left + right, min_gap=5)
    [[0, 1, 2], [3, 4, 5]]
    """
    return _order(list(range(len(boxes))), boxes, min_gap)


def _order(idx: list[int], boxes: list[Box], min_gap: float) -> list[list[int]]:
    by_y = sorted(idx, key=lambda i: (boxes[i][1], boxes[i][0]))
    if len(idx) <= 1:
        return [by_y]
    left = min(boxes[i][0] for i in idx)
    width = max(boxes[i][2] for i in idx) - left
    narrow = [i for i in idx if boxes[i][2] - boxes[i][0] <= 0.6 * width]
    gutters = _gutters([boxes[i] for i in narrow], min_gap) or _crossed_gutters([boxes[i] for i in narrow], min_gap)
    if not gutters:
        # Bands with different column counts overlap each other's gutters; the wide
        # boxes between them (captions, full-width paragraphs) separate them.
        wide = [i for i in idx if boxes[i][2] - boxes[i][0] > 0.6 * width]
        if wide and narrow:
            return _bands(idx, wide, boxes, min_gap)
        return [by_y]
    spanning = [i for i in idx if any(boxes[i][0] < g0 and boxes[i][2] > g1 for g0, g1 in gutters)]
    if spanning:
        return _bands(idx, spanning, boxes, min_gap)
    cuts = [(g0 + g1) / 2 for g0, g1 in gutters]
    columns: list[list[int]] = [[] for _ in range(len(cuts) + 1)]
    for i in idx:
        columns[bisect.bisect(cuts, (boxes[i][0] + boxes[i][2]) / 2)].append(i)
    return [group for col in columns if col for group in _order(col, boxes, min_gap)]


def _gutters(boxes: list[Box], min_gap: float) -> list[tuple[float, float]]:
    """Vertical strips between the boxes' merged x-intervals, at least min_gap wide."""
    spans = sorted((b[0], b[2]) for b in boxes)
    gutters: list[tuple[float, float]] = []
    if not spans:
        return gutters
    reach = spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 - reach >= min_gap:
            gutters.append((reach, x0))
        reach = max(reach, x1)
    return gutters


def _crossed_gutters(boxes: list[Box], min_gap: float, share: float = 0.15) -> list[tuple[float, float]]:
    """Gutters that a few short boxes cross: a centred running header, an author line or a
    caption over two columns leaves no strip of the page untouched, and without a gutter the
    columns were read line by line across. A strip at least ``min_gap`` wide
    is a gutter when the boxes crossing it are less than ``share`` of the height of the boxes
    on either side of it; the crossing boxes then cut the page into bands, as wide ones do.

    >>> cols = [(0, y, 40, y + 30) for y in (20, 60)] + [(60, y, 100, y + 30) for y in (20, 60)]
    >>> _crossed_gutters(cols + [(30, 0, 70, 8)], min_gap=5)
    [(40, 60)]
    """
    edges = sorted({x for b in boxes for x in (b[0], b[2])})
    strips: list[tuple[float, float]] = []
    for x0, x1 in zip(edges, edges[1:]):
        covered = sum(b[3] - b[1] for b in boxes if b[0] < x1 and b[2] > x0)
        low = covered <= share * sum(b[3] - b[1] for b in boxes) / 2
        if low and strips and strips[-1][1] == x0:
            strips[-1] = (strips[-1][0], x1)
        elif low:
            strips.append((x0, x1))
    gutters = []
    for g0, g1 in strips:
        if g1 - g0 < min_gap:
            continue
        left = sum(b[3] - b[1] for b in boxes if b[2] <= g0)
        right = sum(b[3] - b[1] for b in boxes if b[0] >= g1)
        crossing = sum(b[3] - b[1] for b in boxes if b[0] < g1 and b[2] > g0)
        if left and right and crossing < share * min(left, right):
            gutters.append((g0, g1))
    return gutters


def _bands(idx: list[int], spanning: list[int], boxes: list[Box], min_gap: float) -> list[list[int]]:
    spanning = sorted(spanning, key=lambda i: boxes[i][1])
    centers = [(boxes[i][1] + boxes[i][3]) / 2 for i in spanning]
    bands: list[list[int]] = [[] for _ in range(len(spanning) + 1)]
    # A box level with a spanning one (an author block beside the one over the gutter) is read
    # in its row, left to right, not in the band under it.
    rows: list[list[int]] = [[i] for i in spanning]
    chosen = set(spanning)
    for i in idx:
        if i in chosen:
            continue
        level = next((k for k, j in enumerate(spanning) if _level(boxes[i], boxes[j])), None)
        if level is not None:
            rows[level].append(i)
        else:
            bands[bisect.bisect(centers, (boxes[i][1] + boxes[i][3]) / 2)].append(i)
    out: list[list[int]] = []
    for k, band in enumerate(bands):
        if band:
            out.extend(_order(band, boxes, min_gap))
        if k < len(spanning):
            out.extend([i] for i in sorted(rows[k], key=lambda i: boxes[i][0]))
    return out


def _level(a: Box, b: Box) -> bool:
    """Whether two boxes share most of the shorter one's height (they sit side by side)."""
    overlap = min(a[3], b[3]) - max(a[1], b[1])
    return overlap > 0.5 * min(a[3] - a[1], b[3] - b[1])


def blocks_text(blocks: list[Block]) -> str:
    """The page's text: lines joined by newlines, blocks by a blank line, except that a
    block continuing the previous one mid-sentence (a paragraph broken at a column or
    band edge: previous ends without closing punctuation, next starts lower case) is
    joined with a newline so the paragraph and any hyphenated word stay whole."""
    parts: list[str] = []
    for block in blocks:
        text = "\n".join(line.text.strip() for line in block.lines if line.text.strip())
        if not text:
            continue
        if parts and _continues(parts[-1], text) and not _is_heading(parts[-1]):
            parts[-1] += "\n" + text
        else:
            parts.append(text)
    return "\n\n".join(parts)


def _is_heading(part: str) -> bool:
    """A ``## `` line (extractors.headings) ends its part: the text after it is not its
    continuation even when it starts in lower case."""
    return part.rsplit("\n", 1)[-1].startswith("## ")


def _continues(prev: str, nxt: str) -> bool:
    return prev[-1] not in ".!?:;)]\"”" and nxt[0].islower()


# ------------------------------------------------------------------------ tesseract


@functools.lru_cache(maxsize=1)
def installed_languages() -> tuple[str, ...]:
    return tuple(pytesseract.get_languages(config=""))


def ocr_image(
    image: Image.Image,
    lang: str = "eng",
    *,
    scale: float = 1.0,
    deadline: Deadline | None = None,
    guess: str = "",
) -> PageText:
    """OCR one page image, columns first.

    Args:
        image: the page; converted to greyscale here.
        lang: Tesseract languages (``deu+eng``), or ``auto``: detected per page (extractors/langs.py).
        scale: output units per pixel (72 / dpi gives PDF points).
        guess: with ``auto``, the language the previous page was in (tried first on Latin script).

    Raises:
        Timeout: Tesseract ran past the deadline.
    """
    gray = plain_fills(deskew(image.convert("L")))
    regions = _regions(np.asarray(gray))
    if len(regions) > 1:
        stacked, offsets = _stack(gray, regions)
    else:
        stacked, offsets = gray, [(0, 0, 0)]

    def read(code: str, how: str) -> PageText:
        data = reread_dropped_lines(stacked, _tesseract(stacked, code, deadline), code, deadline)
        page = _page_text(data, offsets, scale)
        page.lang, page.lang_how = code, how
        return page

    if lang != langs.AUTO:
        return read(lang, "given")
    return _read_detected(gray, read, guess, deadline)


def _read_detected(gray: Image.Image, read, guess: str, deadline: Deadline | None) -> PageText:
    """OCR in the language the page shows (extractors/langs.py). Read first in English (or
    ``guess``, the previous page's language): a page that reads well is in Latin script, and its
    words tell its language, read again in that one when it is another installed pack. A page that
    reads badly may be in another script: Tesseract's OSD names it, and its pack reads the page.
    OSD costs about as much as a reading (2.6 s against 2.2-3.4 s a page here), so it is asked
    only then."""
    installed = installed_languages()
    first = guess if guess in installed and (guess in langs.FUNCTION_WORDS or guess == langs.FALLBACK) \
        else langs.FALLBACK
    page = read(first, "")
    if (page.confidence or 0) >= _READS_WELL and page.words >= 10:
        found = langs.latin_language(_raw_text(page), installed)
        how = f"{langs.NAMES[found]} words"
        if found == first:
            page.lang_how = how
            return page
        again = read(found, how)
        return again if again.words >= 0.8 * page.words else page
    if deadline is not None:
        deadline.check("script detection (Tesseract OSD)")
    script = langs.script_of(gray, deadline.left() if deadline else None)
    pack = langs.pack_for_script(script, installed)
    if pack is None:
        page.lang_how = f"{script} script (Tesseract OSD)" if script else "no script detected (Tesseract OSD)"
        return page
    return read(pack, f"{script} script (Tesseract OSD)")


_READS_WELL = 70  # Tesseract's mean word confidence: a page read this well is in a script its pack reads


def _raw_text(page: PageText) -> str:
    return "\n".join(line.text for block in page.blocks for line in block.lines)


MAX_SKEW = 3.0  # degrees: a scanner's feed, not a photo taken at an angle
SKEW_STEP = 0.1


def skew_angle(gray: Image.Image) -> float:
    """The rotation (degrees, counter-clockwise) that makes the page's text lines level.

    Projection profile: the row sums of the ink are sharpest (greatest variance) when
    the lines are level. Measured on a copy about 800 pixels wide, which is enough to
    resolve 0.1 degree over a text line and costs a few milliseconds per angle.

    >>> page = Image.new("L", (800, 600), 255)
    >>> from PIL import ImageDraw
    >>> draw = ImageDraw.Draw(page)
    >>> for y in range(60, 560, 30):
    ...     draw.rectangle((60, y, 740, y + 8), fill=0)
    >>> abs(skew_angle(page.rotate(1.2, fillcolor=255)) + 1.2) < 0.15
    True
    """
    small = gray.copy()
    small.thumbnail((800, 800 * gray.height // max(gray.width, 1) or 1))
    pixels = np.asarray(small)
    mask = pixels <= _threshold(pixels)
    if not mask.any() or mask.all():
        return 0.0
    ink = Image.fromarray((mask * 255).astype(np.uint8))
    best, best_score = 0.0, -1.0
    for angle in np.arange(-MAX_SKEW, MAX_SKEW + SKEW_STEP / 2, SKEW_STEP):
        rows = np.asarray(ink.rotate(float(angle), resample=Image.NEAREST, fillcolor=0), dtype=np.float32).sum(axis=1)
        score = float(rows.var())
        if score > best_score + 1e-6 * abs(best_score):
            best, best_score = float(angle), score
    return round(best, 2)


def deskew(gray: Image.Image) -> Image.Image:
    """The page rotated level when its lines tilt by at least one step; else unchanged.

    Region finding cuts the page into bands and columns along white space; on a page
    tilted by even 0.3 degree a full-width line crosses a band edge and Tesseract reads
    half-lines of two rows as garbage (measured on rendered scans).
    """
    angle = skew_angle(gray)
    if abs(angle) < SKEW_STEP:
        return gray
    return gray.rotate(angle, resample=Image.BICUBIC, expand=False, fillcolor=255)


_FLAT_FILL_SPREAD = 20.0  # grey levels between a fill's quartiles: printed (scanned, JPEG) is flatter
_TINT = 110  # a flat fill this light or lighter (0-255) is a tint behind dark print
_TINT_NOISE = 35  # a tint's own pixels lie within this of its median


def plain_fills(gray: Image.Image) -> Image.Image:
    """The page with its printed fills made white behind their print, as Tesseract reads best.

    Tesseract binarises the page as a whole: a light-blue table header row (grey 173 on a page
    whose threshold fell at 201) turned black and its dark print with it, and white print on a
    navy row found no line at all ("Units sold" and half of "Revenue (EUR)" dropped): both
    tables lost their header row. A fill is what stays dark after an opening wider
    than a text stroke or a ruled line, mostly dark over its box and of one flat tone (printed,
    not a photograph's shade). Light print on it (three or more light shapes enclosed: letters)
    is inverted, the fill's edge kept as a rule; a tint behind dark print is made white. A thick
    black letter or a scanner's black margin holds no light letters and is no tint: left alone.
    """
    from scipy import ndimage

    pixels = np.asarray(gray)
    h, w = pixels.shape
    size = max(5, round(min(h, w) / 150))
    if h < 4 * size or w < 4 * size:
        return gray
    dark = pixels < _threshold(pixels)
    opened = ndimage.maximum_filter(ndimage.minimum_filter(dark.view(np.uint8), size=size), size=size)
    fills, count = ndimage.label(opened)
    out = None
    for box in ndimage.find_objects(fills) if count else ():
        inside = dark[box]
        rows, cols = inside.shape
        if rows < 2 * size or cols < 4 * size or inside.mean() < 0.5:
            continue
        low, level, high = np.percentile(pixels[box][opened[box].astype(bool)], [25, 50, 75])
        if high - low > _FLAT_FILL_SPREAD:
            continue
        shapes, _ = ndimage.label(~inside)
        letters = [s for s in ndimage.find_objects(shapes) if s is not None and s[0].start > 0 and s[1].start > 0
                   and s[0].stop < rows and s[1].stop < cols and s[0].stop - s[0].start >= 4]
        if len(letters) >= 3:
            out = pixels.copy() if out is None else out
            out[box] = 255 - out[box]
            # the fill's edge stays a rule: a header row keeps its frame and is read as one line
            y, x = box
            out[y.start, x] = out[y.stop - 1, x] = out[y, x.start] = out[y, x.stop - 1] = 0
        elif level >= _TINT:
            out = pixels.copy() if out is None else out
            area = out[box]
            area[area >= level - _TINT_NOISE] = 255
    return gray if out is None else Image.fromarray(out)


def _regions(pixels: np.ndarray) -> list[Box]:
    """Reading-order regions of a page image, in pixels (one per column per band).

    Sizes come from the text itself, not from a claimed dpi: the median letter height
    gives an em; letters closer than an em merge into line boxes, so word spaces close
    and column gutters (wider than an em) stay open.
    """
    from scipy import ndimage  # 0.2 s to import; only OCR needs it

    h, w = pixels.shape
    whole = [(0, 0, w, h)]
    factor = 2 if h * w > 4_000_000 else 1
    hh, ww = h // factor, w // factor
    if hh < 8 or ww < 8:
        return whole
    ink = pixels[: hh * factor, : ww * factor] < _threshold(pixels)
    if factor > 1:
        ink = ink.reshape(hh, factor, ww, factor).any(axis=(1, 3))
    labels, count = ndimage.label(ink)
    if count < 2:
        return whole
    slices = ndimage.find_objects(labels)
    heights = np.array([s[0].stop - s[0].start for s in slices])
    widths = np.array([s[1].stop - s[1].start for s in slices])
    letters = heights[(heights >= 3) & (heights < hh / 4)]
    if not len(letters):
        return whole
    em = max(4.0, 1.5 * float(np.median(letters)))
    keep = np.concatenate(([False], (heights >= 0.3 * em) | (widths >= 0.3 * em)))
    ink = keep[labels]  # specks (dust, i-dots) would sit in gutters and close them
    reach = max(1, round(0.5 * em))
    grown = ndimage.maximum_filter1d(ink.view(np.uint8), size=2 * reach + 1, axis=1)
    grown = ndimage.maximum_filter1d(grown, size=3, axis=0)
    labels, count = ndimage.label(grown)
    boxes = [
        (s[1].start * factor, s[0].start * factor, s[1].stop * factor, s[0].stop * factor)
        for s in ndimage.find_objects(labels)
        if s is not None
    ]
    if len(boxes) < 2:
        return whole
    groups = _merge_stacked(reading_order(boxes, min_gap=0.2 * em * factor), boxes)
    if len(groups) == 1:
        return whole
    pad = round(0.3 * em * factor)
    regions = []
    for group in groups:
        x0, y0, x1, y1 = union([boxes[i] for i in group])
        regions.append((max(0, x0 - pad), max(0, y0 - pad), min(w, x1 + pad), min(h, y1 + pad)))
    # A region inside another (the words of a ruled table's cells, clear of its rules) is read
    # with it: cut out again, its words were read twice, out of their rows.
    outer = [r for k, r in enumerate(regions) if not any(j != k and _within(r, o) for j, o in enumerate(regions))]
    return outer if len(outer) > 1 else whole


def _within(inner: Box, outer: Box) -> bool:
    return inner != outer and outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] \
        and inner[3] <= outer[3]


def _merge_stacked(groups: list[list[int]], boxes: list[Box]) -> list[list[int]]:
    """Join consecutive groups that sit one below the other when their joint rectangle
    holds no other box: a single-column run needs no cutting (fewer, larger regions
    OCR better), while side-by-side columns never merge."""
    arr = np.asarray(boxes, dtype=float)
    merged: list[list[int]] = []
    for group in groups:
        if merged:
            current = merged[-1]
            cur_box, new_box = union([boxes[i] for i in current]), union([boxes[i] for i in group])
            x0, y0, x1, y1 = union([cur_box, new_box])
            inside = (arr[:, 0] < x1) & (x0 < arr[:, 2]) & (arr[:, 1] < y1) & (y0 < arr[:, 3])
            inside[current] = False
            inside[group] = False
            if new_box[1] >= cur_box[3] - 2 and not inside.any():
                current.extend(group)
                continue
        merged.append(list(group))
    return merged


def _threshold(pixels: np.ndarray) -> float:
    """Otsu's threshold over the grey histogram (ink is darker than it)."""
    hist = np.bincount(pixels.ravel(), minlength=256).astype(np.float64)
    total = hist.sum()
    levels = np.arange(256)
    w0 = np.cumsum(hist)
    m0 = np.cumsum(hist * levels)
    w1 = total - w0
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (m0[-1] * w0 / total - m0) ** 2 / (w0 * w1)
    between = np.nan_to_num(between)
    return float(np.argmax(between)) if between.max() > 0 else 128.0


def _stack(gray: Image.Image, regions: list[Box]) -> tuple[Image.Image, list[tuple[int, int, int]]]:
    """Paste the regions one below another; offsets are (y in stack, x0, y0 in page)."""
    gap = 24
    width = int(max(r[2] - r[0] for r in regions)) + 2 * gap
    height = int(sum(r[3] - r[1] + gap for r in regions)) + gap
    stacked = Image.new("L", (width, height), 255)
    offsets, y = [], gap
    for x0, y0, x1, y1 in regions:
        stacked.paste(gray.crop((x0, y0, x1, y1)), (gap, y))
        offsets.append((y, int(x0) - gap, int(y0)))
        y += int(y1 - y0) + gap
    return stacked, offsets


def _tesseract(image: Image.Image, lang: str, deadline: Deadline | None, psm: str = "3") -> dict[str, list]:
    """Run Tesseract on one image; its TSV output as columns (pytesseract's DICT shape).

    Tesseract's OpenMP threads fight each other under parallel documents (pages took
    4-137 s instead of 1.5 s), so it runs with OMP_THREAD_LIMIT=1 -- in ITS environment
    only: the same variable in this process makes CTranslate2 (Whisper) with two threads
    transcribe garbage, silently.

    Raises:
        Timeout: past the deadline. Unreadable: Tesseract failed on this image.
        UnsupportedType: Tesseract is not installed.
    """
    left = deadline.left() if deadline else None
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "page.pgm"  # uncompressed: far cheaper to write than PNG
        image.save(path)
        cmd = [pytesseract.pytesseract.tesseract_cmd, str(path), "stdout", "-l", lang, "--psm", psm, "tsv"]
        try:
            proc = subprocess.run(cmd, capture_output=True, env=env, timeout=max(1.0, left) if left is not None else None)
        except subprocess.TimeoutExpired:
            raise Timeout(f"OCR ran past the time limit of {deadline.seconds:.3g} s") from None
        except FileNotFoundError:
            raise UnsupportedType("OCR needs Tesseract: apt-get install tesseract-ocr tesseract-ocr-eng") from None
    if proc.returncode != 0:
        raise Unreadable(f"Tesseract failed ({proc.returncode}): {proc.stderr.decode(errors='replace').strip()[-300:]}")
    return _parse_tsv(proc.stdout.decode("utf-8", errors="replace"))


# Tesseract's automatic layout (--psm 3) now and then drops a whole, perfectly legible
# line of a paragraph (seen on a rendered scan: one line of eleven, words and all, absent
# from its TSV; --psm 4 kept it but lost other lines). The ink in the gap such a line
# leaves is read again on its own.
REREAD_MIN_CONF = 70.0  # mean word confidence of a reread gap's text to keep it
REREAD_MAX = 12  # gaps reread per image: a page of figures must not cost a page of calls


def reread_dropped_lines(image: Image.Image, data: dict[str, list], lang: str,
                         deadline: Deadline | None) -> dict[str, list]:
    """``data`` with the text of line-sized ink between recognised lines added, read with
    ``--psm 6``; each gap's words join the block of the line above it, in page order.

    Kept only when the gap reads as text (mean confidence at least ``REREAD_MIN_CONF``):
    a figure's ink between paragraphs is not text and stays out, as Tesseract left it.
    """
    lines = _line_boxes(data)
    if len(lines) < 2:
        return data
    pixels = np.asarray(image.convert("L"))
    height = float(np.median([bottom - top for _, top, bottom in lines]))
    ink_rows = (pixels < _threshold(pixels)).sum(axis=1) >= max(4, 0.01 * pixels.shape[1])
    added: list[tuple[int, list[dict]]] = []  # (index of the word after which to insert, words)
    reach = 0
    for k, (last_word, top, bottom) in enumerate(lines[:-1]):
        reach = max(reach, bottom)
        nxt_top = lines[k + 1][1]
        if nxt_top - reach < 1.2 * height or not _one_text_line_of_ink(ink_rows[reach:nxt_top], height):
            continue
        if len(added) == REREAD_MAX:
            break
        gap = image.crop((0, reach, image.width, nxt_top))
        words = _confident_words(_tesseract(gap, lang, deadline, psm="6"))
        if words:
            for w in words:
                w["top"] += reach
            added.append((last_word, words))
    return _insert_words(data, added) if added else data


def _line_boxes(data: dict[str, list]) -> list[tuple[int, int, int]]:
    """Recognised lines as (index of their last word, top, bottom), top to bottom."""
    spans: dict[tuple, list[int]] = {}
    for k, word in enumerate(data.get("text", [])):
        if float(data["conf"][k]) < 0 or not word.strip():
            continue
        key = (data["block_num"][k], data["par_num"][k], data["line_num"][k])
        top, bottom = data["top"][k], data["top"][k] + data["height"][k]
        span = spans.setdefault(key, [k, top, bottom])
        span[0] = k
        span[1], span[2] = min(span[1], top), max(span[2], bottom)
    return sorted((tuple(s) for s in spans.values()), key=lambda s: s[1])


def _one_text_line_of_ink(rows: np.ndarray, height: float) -> bool:
    """Whether the rows hold a run of ink the height of a text line (not a blank
    paragraph break, not speckle, not one tall figure)."""
    if not rows.any():
        return False
    runs, run = [], 0
    for inked in rows:
        if inked:
            run += 1
        elif run:
            runs.append(run)
            run = 0
    if run:
        runs.append(run)
    return any(0.5 * height <= r <= 2.0 * height for r in runs) and max(runs) <= 3 * height


def _confident_words(data: dict[str, list]) -> list[dict]:
    words = [{name: data[name][k] for name in data} for k, text in enumerate(data.get("text", []))
             if float(data["conf"][k]) >= 0 and text.strip()]
    if not words or sum(float(w["conf"]) for w in words) / len(words) < REREAD_MIN_CONF:
        return []
    return words


def _insert_words(data: dict[str, list], added: list[tuple[int, list[dict]]]) -> dict[str, list]:
    """Columns with each gap's words after the word ``after`` and in its block and
    paragraph, on line numbers of their own (beyond any Tesseract gives a paragraph)."""
    names = list(data)
    rows = [{name: data[name][k] for name in names} for k in range(len(data["text"]))]
    out: list[dict] = []
    extra = dict(added)
    for k, row in enumerate(rows):
        out.append(row)
        for n, word in enumerate(extra.get(k, ())):
            out.append({**word, "block_num": row["block_num"], "par_num": row["par_num"],
                        "line_num": (k + 1) * 1_000_000 + word["block_num"] * 10_000
                        + word["par_num"] * 100 + word["line_num"]})
    return {name: [row[name] for row in out] for name in names}


def _parse_tsv(tsv: str) -> dict[str, list]:
    rows = [line.split("\t") for line in tsv.splitlines() if line]
    if not rows:
        return {"text": []}
    header, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    data: dict[str, list] = {name: [r[k] for r in body] for k, name in enumerate(header)}
    for name in header:
        if name not in ("text", "conf"):
            data[name] = [int(v) for v in data[name]]
    return data


def _page_text(data: dict, offsets: list[tuple[int, int, int]], scale: float) -> PageText:
    starts = [o[0] for o in offsets]
    blocks: dict[tuple, Block] = {}
    lines: dict[tuple, Line] = {}
    confs: list[float] = []
    for k, word in enumerate(data["text"]):
        conf = float(data["conf"][k])
        if conf < 0 or not word.strip():
            continue
        confs.append(conf)
        left, top = data["left"][k], data["top"][k]
        ystack, dx, dy = offsets[max(0, bisect.bisect(starts, top) - 1)]
        x0, y0 = (left + dx) * scale, (top - ystack + dy) * scale
        box = (x0, y0, x0 + data["width"][k] * scale, y0 + data["height"][k] * scale)
        bkey = (data["block_num"][k], data["par_num"][k])
        lkey = (*bkey, data["line_num"][k])
        line = lines.get(lkey)
        if line is None:
            line = lines[lkey] = Line(word, box)
            blocks.setdefault(bkey, Block()).lines.append(line)
        else:
            line.text += " " + word
            line.box = union([line.box, box])
    confidence = round(sum(confs) / len(confs), 1) if confs else None
    return PageText(list(blocks.values()), confidence, len(confs))


# ---------------------------------------------------------------------- vocabulary


@functools.lru_cache(maxsize=4)
def vocabulary(lang: str = "eng") -> frozenset[str] | None:
    """Tesseract's own word list for ``lang`` (lower case), or None if it can't be read.

    Unpacked from the installed traineddata with combine_tessdata and dawg2wordlist
    (both ship with Debian's tesseract-ocr); about 0.4 s and 340k words for eng.
    """
    tessdata = _tessdata_dir()
    if tessdata is None or not shutil.which("combine_tessdata") or not shutil.which("dawg2wordlist"):
        return None
    words: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for code in lang.split("+"):
            trained = tessdata / f"{code}.traineddata"
            prefix = Path(tmp) / f"{code}."
            try:
                subprocess.run(["combine_tessdata", "-u", str(trained), str(prefix)],
                               capture_output=True, check=True, timeout=30)
                out = Path(tmp) / f"{code}.words"
                subprocess.run(["dawg2wordlist", f"{prefix}lstm-unicharset",
                                f"{prefix}lstm-word-dawg", str(out)],
                               capture_output=True, check=True, timeout=60)
                words.update(w.lower() for w in out.read_text(encoding="utf-8").split())
            except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
                continue
    return frozenset(words) or None


def _tessdata_dir() -> Path | None:
    if os.environ.get("TESSDATA_PREFIX"):
        return Path(os.environ["TESSDATA_PREFIX"])
    try:
        out = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'"([^"]+)"', out.stdout + out.stderr)
    return Path(match.group(1)) if match else None


# --------------------------------------------------------------------- image files


def bounded(image: Image.Image, max_pixels: int) -> tuple[Image.Image, float]:
    """The image, downscaled to at most ``max_pixels``, and the factor applied."""
    w, h = image.size
    if w * h <= max_pixels:
        return image, 1.0
    factor = (max_pixels / (w * h)) ** 0.5
    size = (max(1, int(w * factor)), max(1, int(h * factor)))
    if image.format == "JPEG":
        image.draft("L", size)  # decode at a reduced DCT scale: far less memory
    return image.convert("L").resize(size, Image.Resampling.LANCZOS), factor


def open_image(data: bytes) -> Image.Image:
    """Open image bytes with Pillow's decompression-bomb guard on.

    Raises:
        Empty, TooLarge, Corrupt: as their names say.
    """
    if not data:
        raise Empty("empty file (0 bytes)")
    try:
        if claims(data[:16]) and data[4:8] == b"ftyp":
            import pillow_heif  # HEIF only: registered on the first one, not for every image

            pillow_heif.register_heif_opener()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            return Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise TooLarge(f"image refused as a decompression bomb: {exc}") from None
    except (UnidentifiedImageError, OSError) as exc:
        raise Corrupt(f"not a readable image ({exc}): the file starts with {data[:12]!r}") from None


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """OCR an image file, a multi-page TIFF page by page.

    Raises:
        Empty, Corrupt, Truncated, TooLarge, Timeout; NotADocument: OCR found no text (a photo).
    """
    options = options or ExtractOptions()
    deadline = Deadline(options.time_limit_s)
    image = open_image(data)
    built = Assembler()
    notes: list[str] = []
    used: list[PageText] = []
    for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
        if number > options.max_pages:
            raise TooLarge(f"image has more than {options.max_pages} pages")
        deadline.check(f"page {number}")
        page = _ocr_frame(frame, number, options, deadline, used[-1].lang if used else "")
        used.append(page)
        text = clean(blocks_text(page.blocks))
        if page.confidence is not None and page.confidence < options.ocr_min_confidence:
            notes.append(f"low OCR confidence on page {number}: {page.confidence:.0f}")
        if text:
            built.add(text, Page(number, "", page.confidence))
    if not built:  # a photo: set aside, not failed (a scanned page with no text is a PDF's NoText)
        raise NotADocument("an image with no text" + (f" ({number} pages)" if number > 1 else ""))
    notes[:0] = language_notes([(n, p) for n, p in enumerate(used, start=1)])
    return Canonical(
        text=built.text,
        title=PurePath(name).stem,
        extractor=NAME,
        extractor_version=VERSION,
        segments=built.segments,
        notes=tuple(notes),
    )


def language_notes(pages: list[tuple[int, PageText]]) -> list[str]:
    """One note per OCR language used: which pages, and how it was chosen.

    >>> language_notes([(1, PageText([], lang="nld", lang_how="Latin script (Tesseract OSD), Dutch words")),
    ...                 (2, PageText([], lang="nld", lang_how="Latin script (Tesseract OSD), Dutch words"))])
    ['OCR language nld (Dutch) on pages 1, 2: Latin script (Tesseract OSD), Dutch words']
    """
    groups: dict[tuple[str, str], list[int]] = {}
    for number, page in pages:
        if page.lang:
            groups.setdefault((page.lang, page.lang_how), []).append(number)
    notes = []
    for (lang, how), numbers in groups.items():
        where = f"page{'s' * (len(numbers) > 1)} {', '.join(map(str, numbers[:20]))}" + \
            (f" (+{len(numbers) - 20} more)" if len(numbers) > 20 else "")
        why = "as given (--ocr-lang)" if how == "given" else how
        notes.append(f"OCR language {langs.describe(lang)} on {where}: {why}")
    return notes


def base_language(lang: str) -> str:
    """The language whose word list judges text layers and rejoins hyphenated words: English
    when the OCR language is detected per page."""
    return langs.FALLBACK if lang == langs.AUTO else lang


def _ocr_frame(frame: Image.Image, number: int, options: ExtractOptions, deadline: Deadline,
               guess: str = "") -> PageText:
    try:
        page, factor = bounded(frame, options.ocr_max_pixels)
        page = page.convert("L")
    except Image.DecompressionBombError as exc:
        raise TooLarge(f"page {number} refused as a decompression bomb: {exc}") from None
    except OSError as exc:
        if "truncated" in str(exc):
            raise Truncated(f"image data ends early on page {number}: {exc}") from None
        raise Corrupt(f"cannot decode page {number} of the image: {exc}") from None
    # Boxes stay in the original image's pixels.
    return ocr_image(page, options.ocr_lang, scale=1 / factor, deadline=deadline, guess=guess)
