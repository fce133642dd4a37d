"""BMP and HEIC pictures are OCR'd like PNG and JPEG (Pillow, pillow-heif);
before, both failed "unsupported-type". A text file that starts with "BM" stays text."""
from __future__ import annotations

import make
import pytest

from citeline import extractors
from citeline.extractors import ocr, text
from citeline.schemas.locator import Page


@pytest.mark.parametrize("kind", ["bmp", "heic"])
def test_a_bmp_or_heic_picture_is_read_by_ocr(kind, h):
    data = getattr(make, f"scan_{kind}")()
    module = extractors.for_bytes(data[:8192], f"photo.{kind}")
    assert module is ocr
    assert extractors.for_bytes(data[:8192], "renamed.bin") is ocr  # by its bytes, not its name
    canonical = module.extract(data, f"photo.{kind}")
    assert h.locators_of(canonical, "total of 42 euros")[0].page == 1
    assert isinstance(canonical.segments[0].locator, Page)


def test_a_text_file_that_starts_like_a_bitmap_is_still_text():
    assert extractors.for_bytes(b"BMW service notes: oil changed at 42,000 km.\n", "car.txt") is text
