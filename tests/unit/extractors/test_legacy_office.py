"""Legacy .doc and .ppt converted by LibreOffice headless (Debian's packages,
`make setup`) and read by the .docx/.pptx extractors; before, both failed "unsupported-type".
Real conversions: each takes a few seconds."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import make
import pytest

from citeline import extractors
from citeline.extractors import legacy
from citeline.schemas.errors import Timeout, UnsupportedType
from citeline.schemas.locator import Passage, Slide
from citeline.schemas.options import ExtractOptions

FILES = Path(__file__).parents[2] / "fixtures" / "unstructured"


def _read(name: str, data: bytes, options: ExtractOptions | None = None):
    module = extractors.for_bytes(data[:8192], name)
    assert module is legacy
    return module.extract(data, name, options or ExtractOptions())


def test_two_word_documents_convert_at_once_each_in_its_own_profile(h):
    with ThreadPoolExecutor(2) as pool:
        simple, fake = pool.map(lambda n: _read(n, (FILES / n).read_bytes()), ["simple.doc", "fake.doc"])
    h.check_segments(simple)
    assert h.locators_of(simple, "This is my third thought.") == [Passage("These are a few of my favorite things:")]
    assert fake.text == "Lorem ipsum dolor sit amet." and fake.extractor == "legacy-office"


def test_a_ppt_is_read_by_slide(tmp_path, h):
    (tmp_path / "deck.pptx").write_bytes(make.deck_pptx())
    subprocess.run(["soffice", "--headless", f"-env:UserInstallation=file://{tmp_path}/profile", "--convert-to", "ppt",
                    "--outdir", str(tmp_path), str(tmp_path / "deck.pptx")], check=True, capture_output=True, timeout=120)
    deck = _read("deck.ppt", (tmp_path / "deck.ppt").read_bytes())
    h.check_segments(deck)
    assert all(isinstance(s.locator, Slide) for s in deck.segments) and len(deck.segments) >= 2


def test_a_conversion_past_the_time_limit_is_killed_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # its folder, so only its processes are looked for
    started = time.monotonic()
    with pytest.raises(Timeout, match="LibreOffice took longer"):
        _read("simple.doc", (FILES / "simple.doc").read_bytes(), ExtractOptions(time_limit_s=0.3))
    assert time.monotonic() - started < 2.5  # not after the conversion (a warm start took 1-1.5 s here, a cold one 4-7 s)
    left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout.split()
    assert left == []
    assert list(tmp_path.iterdir()) == []  # its folder and private profile removed


def test_without_libreoffice_a_doc_fails_saying_what_it_needs(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)  # a machine without the Debian packages
    with pytest.raises(UnsupportedType, match="needs LibreOffice"):
        legacy.extract((FILES / "fake.doc").read_bytes(), "fake.doc")
