"""Settings an extractor may need; one value passed through unchanged to every extractor."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExtractOptions:
    ocr_lang: str = "eng"
