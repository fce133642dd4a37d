"""Extractors in a killable worker: hangs and crashes cost one document, and the next one works."""
import time

import pytest

from citeline.pipeline import isolate
from citeline.schemas.errors import Corrupt, OutOfMemory, Timeout
from citeline.schemas.options import ExtractOptions

MODULE = "hostile_extractors"  # in tests/fixtures, on the path (pytest's pythonpath) of spawned workers too


@pytest.fixture(autouse=True)
def short_grace(monkeypatch):
    monkeypatch.setattr(isolate, "GRACE_S", 0.5)


def test_a_hang_is_killed_at_the_limit_and_the_next_document_works():
    started = time.monotonic()
    with pytest.raises(Timeout, match="1 s limit"):
        isolate.extract_isolated(MODULE, b"HANG FOREVER", "x.hang", ExtractOptions(time_limit_s=1))
    assert time.monotonic() - started < 30
    fine = isolate.extract_isolated(MODULE, b"HANG fine after all", "y.hang", ExtractOptions(time_limit_s=30))
    assert fine.text == "HANG fine after all"


def test_a_crashing_parser_fails_the_document_not_the_process():
    with pytest.raises(Corrupt, match="process died"):
        isolate.extract_isolated(MODULE, b"HANG CRASH", "z.hang", ExtractOptions(time_limit_s=30))
    assert isolate.extract_isolated(MODULE, b"HANG ok", "w.hang", ExtractOptions(time_limit_s=30)).text == "HANG ok"


def test_real_pdf_extracts_the_same_in_the_worker():
    import pymupdf

    from citeline.extractors import pdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "The quick brown fox jumps over the lazy dog.")
    data = doc.tobytes()
    inside = pdf.extract(data, "a.pdf", ExtractOptions())
    assert isolate.extract_isolated("citeline.extractors.pdf", data, "a.pdf", ExtractOptions()) == inside


def test_a_document_that_needs_more_than_the_memory_ceiling_fails_too_large_and_the_worker_is_replaced():
    # Before, a worker could take all the machine's memory (nothing capped it).
    # The worker itself holds ~0.22 GB (VmData); 128 MiB more fits under 0.5 GiB, 1 GiB does not.
    options = ExtractOptions(time_limit_s=60, max_memory_bytes=512 << 20)
    fits = isolate.extract_isolated(MODULE, b"HANG HOG 128", "a.hang", options)
    assert fits.text.startswith("held 128 MiB in ")
    with pytest.raises(OutOfMemory) as caught:
        isolate.extract_isolated(MODULE, b"HANG HOG 1024", "b.hang", options)
    assert caught.value.kind == "too-large"
    assert str(caught.value) == ("the hang-for-tests extractor needed more than 0.5 GiB of memory, the ceiling "
                                 "of an extraction worker (max_memory_bytes)")
    after = isolate.extract_isolated(MODULE, b"HANG HOG 128", "c.hang", options)
    assert after.text.split()[-1] != fits.text.split()[-1]  # a fresh worker, not the one that ran out


def test_a_worker_without_a_ceiling_holds_what_it_needs():
    held = isolate.extract_isolated(MODULE, b"HANG HOG 640", "a.hang", ExtractOptions(time_limit_s=60, max_memory_bytes=None))
    assert held.text.startswith("held 640 MiB in ")
