"""Extraction speed: text-PDF pages/s, seconds per OCR page, speech real-time factor.

    .venv/bin/python bench/extract_speed.py [--pages 120] [--ocr-pages 3] [--speech-repeats 5] [--smoke]

Inputs are generated (tests/fixtures/make.py): a text PDF of --pages pages, full
letter-size scans rendered at 300 dpi (50 lines of text each, no text layer), and the
committed espeak-ng clip repeated --speech-repeats times. Tesseract runs with
OMP_THREAD_LIMIT=1; Whisper is tiny.en int8 on 2 threads. One-off costs (word list,
model load) are measured apart from the rates. ``--smoke`` (tests/flows/test_bench_smoke.py): 2 text pages,
1 scanned page, the clip once: runs, no figure.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pymupdf

from citeline.extractors import media, ocr, pdf

ROOT = Path(__file__).resolve().parents[1]


class Clock:
    """Wall time and CPU time (this process plus finished children, e.g. Tesseract).
    On a shared machine wall time includes waiting for a core; CPU time does not."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), self._cpu()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, self._cpu() - self.cpu

    @staticmethod
    def _cpu() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _make():
    spec = importlib.util.spec_from_file_location("citeline_fixtures_make", ROOT / "tests" / "fixtures" / "make.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def text_pdf(make, pages: int) -> None:
    data = make.text_pdf(pages)
    with Clock() as warm:
        ocr.vocabulary("eng")
    with Clock() as run:
        canonical = pdf.extract(data, "speed.pdf")
    print(f"text PDF   {pages / run.wall:6.0f} pages/s wall, {pages / run.cpu:6.0f} pages/s CPU "
          f"({pages} pages, {len(canonical.text):,} chars; word list {warm.wall:.2f} s once per process)")


def scanned_pdf(make, pages: int) -> None:
    source = pymupdf.open(stream=make.text_pdf(pages, seed=1), filetype="pdf")
    doc = pymupdf.open()
    for page in source:
        png = page.get_pixmap(dpi=300, colorspace=pymupdf.csGRAY).tobytes("png")
        doc.new_page(width=page.rect.width, height=page.rect.height).insert_image(page.rect, stream=png)
    data = doc.tobytes(deflate=True)
    with Clock() as run:
        canonical = pdf.extract(data, "scan.pdf")
    confs = [s.locator.ocr_confidence for s in canonical.segments]
    print(f"OCR        {run.wall / pages:6.2f} s/page wall, {run.cpu / pages:6.2f} s/page CPU "
          f"({pages} letter pages at 300 dpi, 50 lines each, mean confidence {np.mean(confs):.1f})")


def speech(make, repeats: int) -> None:
    with Clock() as load:
        media.model()
    clip = make._pcm(make.speech("ogg"))
    data = make._encode(np.tile(clip, repeats), "pcm_s16le", "wav")
    seconds = len(clip) * repeats / 16000
    with Clock() as run:
        canonical = media.extract(data, "speech.wav")
    print(f"speech     RTF {run.wall / seconds:.3f} wall ({seconds / run.wall:.0f}x real time), "
          f"{run.cpu / seconds:.3f} CPU-s per audio-s ({seconds:.0f} s of audio, "
          f"{len(canonical.segments)} utterances; model load {load.wall:.2f} s once per process)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=120)
    parser.add_argument("--ocr-pages", type=int, default=3)
    parser.add_argument("--speech-repeats", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="2 text pages, 1 scanned page, the clip once")
    args = parser.parse_args()
    if args.smoke:
        args.pages, args.ocr_pages, args.speech_repeats = 2, 1, 1
    make = _make()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    text_pdf(make, args.pages)
    scanned_pdf(make, args.ocr_pages)
    speech(make, args.speech_repeats)


if __name__ == "__main__":
    main()
