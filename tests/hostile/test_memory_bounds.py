"""Issue 42 item 5: a file's claims about its size are its word, and no document can take the machine.

A media file's header said 1 s and it held 5 hours: decoded whole, 6.8 GB. Decoding now stops at
``max_media_seconds`` of *decoded* audio, and every extraction worker runs under a memory ceiling
(``max_memory_bytes``). Growth is shown with two small inputs (tests/fixtures/growth.py).
"""
from __future__ import annotations

import io
from contextlib import suppress

import growth
import make
import numpy as np
import pytest
from fakes import HashEmbedder

from citeline.extractors import media
from citeline.pipeline.prepare import prepare
from citeline.pipeline.walk import SourceFile
from citeline.schemas.errors import OutOfMemory, TooLarge
from citeline.schemas.options import ExtractOptions
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp


def test_a_media_header_that_understates_its_length_stops_decoding_at_the_limit():
    # 10 and 40 minutes of silence at 8 kHz (114 KB and 439 KB), each claiming 1 s. Before: both
    # passed the 60 s limit on their claim and were decoded whole, 4x the file 4x the memory
    # (then Whisper ran over the silence).
    small, large = make.lying_flac(600), make.lying_flac(2400)
    options = ExtractOptions(max_media_seconds=60)
    for data in (small, large):
        with pytest.raises(TooLarge, match=r"more than 60 s of audio decoded, over the limit .*claims 1 s"):
            media.extract(data, "quiet.flac", options)

    def extract(data: bytes) -> None:
        with suppress(TooLarge):
            media.extract(data, "quiet.flac", options)

    assert growth.memory_ratio(extract, small, large) < 1.5
    assert growth.ratio(extract, small, large, repeat=3) < 2


@pytest.mark.parametrize("fmt", ["ogg", "wav", "mp3", "mp4"])
def test_honest_media_decodes_as_faster_whisper_decodes_it_up_to_its_limit(fmt):
    from faster_whisper import decode_audio

    data = make.speech(fmt)
    _channels, claimed = media._probe(data)
    mono = media._decode(data, claimed, claimed)  # a file as long as the limit is read whole
    assert np.array_equal(mono, decode_audio(io.BytesIO(data), sampling_rate=16000))
    left, right = media._decode(data, claimed, claimed, split_stereo=True)
    theirs = decode_audio(io.BytesIO(data), sampling_rate=16000, split_stereo=True)
    assert np.array_equal(left, theirs[0]) and np.array_equal(right, theirs[1])
    with pytest.raises(TooLarge, match="decoding stopped there"):
        media._decode(data, claimed - 2, claimed)


def test_a_real_parser_past_the_memory_ceiling_fails_the_document_too_large(tmp_path):
    # Two hours of silence claiming 1 s (1.6 MB) under the 4-hour limit: decoded honestly it needs
    # ~0.7 GB over the worker's own ~0.23 GB. With a 0.5 GiB ceiling numpy (or FFmpeg) is refused
    # memory in the worker: the document fails too-large at extraction, not the machine; before
    # there was no ceiling and it was decoded whole (then Whisper ran over two hours of silence).
    path = tmp_path / "quiet.flac"
    path.write_bytes(make.lying_flac(7200))
    settings = IndexSettings(db=str(tmp_path / "index"), max_memory_bytes=512 << 20)
    with pytest.raises(OutOfMemory) as caught:
        prepare(SourceFile(str(path), str(tmp_path), "quiet.flac"), HashEmbedder(8), IndexStamp("fake", 8), settings)
    assert caught.value.stage == "extract" and caught.value.kind == "too-large"
    assert str(caught.value) == ("the media extractor needed more than 0.5 GiB of memory, the ceiling of an "
                                 "extraction worker (max_memory_bytes)")
