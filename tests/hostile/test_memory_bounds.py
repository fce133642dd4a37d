"""A file's claims about its size are its word, and no document can take the machine.

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

from citeline import extractors
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


# Every extractor that runs in the flow's own process (no ISOLATE: no worker, so no deadline that
# can kill it and no memory ceiling), with its two sizes. Such an extractor must be linear.
IN_PROCESS = {"html": 1000, "csv": 1000, "json": 1000, "markup": 1000, "text": 1000}


def test_every_extractor_in_the_flows_process_is_measured_here():
    running_here = {name for name, module in extractors.registered().items() if not getattr(module, "ISOLATE", False)}
    assert running_here == set(IN_PROCESS), "an extractor without ISOLATE needs its growth test here"


@pytest.mark.slow  # two fresh interpreters per extractor: ~2-7 s each
@pytest.mark.parametrize("name", sorted(IN_PROCESS))
def test_an_extractor_in_the_flows_process_is_linear_in_time_and_memory(name):
    # 4x the document: 4x the time and memory, loosely (a quadratic walk would be 16x). Memory is
    # the resident peak in a fresh interpreter (lxml's own allocations count); time is CPU time here.
    module = extractors.registered()[name]
    small, large = (make.in_process_sample(name, n) for n in (IN_PROCESS[name], 4 * IN_PROCESS[name]))
    assert growth.ratio(lambda doc: module.extract(doc[0], doc[1], ExtractOptions()), small, large, repeat=3) < 8
    setup = ("import make\nfrom citeline import extractors\nfrom citeline.schemas.options import ExtractOptions\n"
             f"module = extractors.registered()[{name!r}]\n")
    peaks = [growth.peak_rss(setup + f"data, file = make.in_process_sample({name!r}, {n})",
                             "module.extract(data, file, ExtractOptions())")
             for n in (IN_PROCESS[name], 4 * IN_PROCESS[name])]
    assert peaks[1] < 8 * max(peaks[0], 1 << 20), peaks
