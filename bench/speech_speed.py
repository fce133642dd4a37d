"""Speech recognition speed: citeline's Whisper settings against variations, in alternating rounds.

    .venv/bin/python bench/speech_speed.py [--seconds 120] [--rounds 3] [--document 04-dropout.md]
        [--variants base,beam1,...] [--model DIR] [--smoke]

``--smoke`` (tests/flows/test_bench_smoke.py): 5 s of speech, citeline's settings only, one round, on the
packaged tiny.en: runs, no figure.

About --seconds of a dev chapter is read aloud by espeak-ng exactly as the format
evaluation renders it (``evaluation.render.render_speech``, the chapter's first blocks),
then transcribed by every variant once per round, the variants in turn, so a change in
the machine's load hits all of them alike. Per variant: audio-seconds per wall-second
and per CPU-second (medians over rounds), the ratio of its wall time to citeline's own
settings in the same round (median), and the word recall of its transcripts against the
text that was spoken (normalised words, difflib's matching blocks: the share of spoken
words the transcript has, in order; mean over rounds, since a temperature fallback
samples), how often the chapter's needles that fall in the clip are still said by the
evaluation's rule (``speech_contains``, over all rounds), and the mean number of windows
decoded again at a higher temperature ("fallbacks").

"citeline" is what ``extractors.media._transcribe`` passes; every other variant changes
one thing (or, last, the combination the findings point to).
"""
from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citeline.runtime import env  # noqa: E402

if "--child" not in sys.argv:  # a child runs in the environment its parent made for the variant
    env.apply()

from citeline.evaluation.match import speech_contains, words  # noqa: E402
from citeline.evaluation.render import render_speech  # noqa: E402
from citeline.extractors import media  # noqa: E402
from citeline.schemas.options import ExtractOptions  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "corpora" / "dev"


@dataclass(frozen=True)
class Variant:
    name: str
    options: dict = field(default_factory=dict)  # transcribe() keyword arguments over citeline's
    threads: int = 2
    compute_type: str = "int8"
    env: dict = field(default_factory=dict)  # over citeline's process defaults (runtime/env.py)
    batch: int = 0  # > 0: faster-whisper's BatchedInferencePipeline (VAD chunks decoded in batches)


CITELINE = {"vad_filter": True, "word_timestamps": True, "condition_on_previous_text": False}
VARIANTS = {
    v.name: v for v in (
        Variant("citeline"),
        Variant("beam1", {"beam_size": 1}),
        Variant("no-words", {"word_timestamps": False}),
        Variant("no-vad", {"vad_filter": False}),
        Variant("condition", {"condition_on_previous_text": True}),
        Variant("no-fallback", {"temperature": 0.0}),
        Variant("threads1", threads=1),
        Variant("threads4", threads=4),
        Variant("float32", compute_type="float32"),
        Variant("int8_float32", compute_type="int8_float32"),
        Variant("beam1-no-fallback", {"beam_size": 1, "temperature": 0.0}),
        Variant("beam1-no-words", {"beam_size": 1, "word_timestamps": False}),
        Variant("omp-active", env={"OMP_WAIT_POLICY": "ACTIVE"}),
        Variant("omp-default", env={"OMP_WAIT_POLICY": ""}),
        Variant("best-of-1", {"best_of": 1}),
        Variant("logprob-1.5", {"log_prob_threshold": -1.5}),
        Variant("no-fallback-condition", {"temperature": 0.0, "condition_on_previous_text": True}),
        Variant("batched8", batch=8),
        Variant("batched4", batch=4),
        Variant("batched8-beam1", {"beam_size": 1}, batch=8),
    )
}


class Fallbacks(logging.Handler):
    """Counts faster-whisper's debug lines about decoding a window again at a higher temperature."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record):
        if "threshold is not met with temperature" in record.getMessage():
            self.count += 1


def clip(document: str, seconds: float, folder: Path, needle: str = "") -> tuple[Path, str, float]:
    """About ``seconds`` of the document read aloud, from its start or from the paragraph
    holding ``needle``: (wav, spoken text, seconds)."""
    markdown = (DEV / "docs" / document).read_text(encoding="utf-8")
    paragraphs = markdown.split("\n\n")
    if needle:
        at = next(i for i, p in enumerate(paragraphs) if speech_contains(needle, p))
        paragraphs = paragraphs[at:]
    wav = folder / "clip.wav"
    for n in range(1, len(paragraphs) + 1):
        spans = render_speech("\n\n".join(paragraphs[:n]), wav)
        if spans and spans[-1].end >= seconds:
            break
    return wav, " ".join(s.text for s in spans), spans[-1].end


def ground_truth() -> list[dict]:
    return [json.loads(line) for line in (DEV / "ground_truth.jsonl").read_text(encoding="utf-8").splitlines()]


def needles_in(document: str, spoken: str) -> list[str]:
    """The chapter's needles that the clip speaks (by the word rule against the spoken text)."""
    found = {q["needle"] for q in ground_truth() if q["doc"] == document}
    return sorted(n for n in found if speech_contains(n, spoken))


def recall(reference: str, transcript: str) -> float:
    said, heard = words(reference), words(transcript)
    matcher = difflib.SequenceMatcher(None, said, heard, autojunk=False)
    return sum(b.size for b in matcher.get_matching_blocks()) / max(len(said), 1)


def cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def transcribe(variant: Variant, wav: Path, model_dir: str) -> dict:
    """In the child: load the model, warm it on the first 5 s, time one transcription."""
    from faster_whisper import BatchedInferencePipeline, WhisperModel

    fallbacks = Fallbacks()
    logging.getLogger("faster_whisper").addHandler(fallbacks)
    logging.getLogger("faster_whisper").setLevel(logging.DEBUG)
    audio = media._decode(wav.read_bytes(), ExtractOptions().max_media_seconds, None)
    whisper = WhisperModel(model_dir, device="cpu", compute_type=variant.compute_type, cpu_threads=variant.threads)
    options = {**CITELINE, **variant.options}
    if variant.batch:
        whisper = BatchedInferencePipeline(whisper)
        options = {**options, "batch_size": variant.batch}
        options.pop("condition_on_previous_text")  # batches are decoded independently anyway
    list(whisper.transcribe(audio[:16000 * 5], language="en", **options)[0])
    fallbacks.count = 0
    wall, used = time.perf_counter(), cpu()
    segments, _info = whisper.transcribe(audio, language="en", **options)
    text = " ".join(s.text for s in segments)
    return {"wall": time.perf_counter() - wall, "cpu": cpu() - used, "text": text, "fallbacks": fallbacks.count}


def measure(variant: Variant, wav: Path, model_dir: str) -> dict:
    """One transcription in a fresh process (as the indexer's isolated worker runs it), in
    citeline's process environment changed by the variant's (an empty value unsets)."""
    child_env = dict(os.environ)
    for key, value in variant.env.items():
        if value:
            child_env[key] = value
        else:
            child_env.pop(key, None)
    done = subprocess.run([sys.executable, __file__, "--child", variant.name, "--wav", str(wav), "--model", model_dir],
                          env=child_env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--document", default="04-dropout.md")
    parser.add_argument("--needle", default="q08", help="start the clip at this query's needle ('' for the start)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--model", default="", help="a CTranslate2 Whisper folder (default: the packaged tiny.en)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--wav", help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="5 s, citeline's settings, one round")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.rounds, args.variants = 5.0, 1, "citeline"
    model_dir = args.model or media.default_model_path()
    if args.child:
        print(json.dumps(transcribe(VARIANTS[args.child], Path(args.wav), model_dir)))
        return
    chosen = [VARIANTS[name] for name in args.variants.split(",")]
    if chosen[0].name != "citeline":
        chosen.insert(0, VARIANTS["citeline"])

    with tempfile.TemporaryDirectory() as tmp:
        needle = next((q for q in ground_truth() if q["id"] == args.needle), None)
        document = needle["doc"] if needle else args.document
        wav, spoken, seconds = clip(document, args.seconds, Path(tmp), needle["needle"] if needle else "")
        needles = needles_in(document, spoken)
        print(f"{document}: {seconds:.0f} s of espeak-ng speech, {len(words(spoken))} words, "
              f"{len(needles)} needles; model {model_dir}; load average {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} CPUs", flush=True)
        results: dict[str, list[dict]] = {v.name: [] for v in chosen}
        for r in range(args.rounds):
            for variant in chosen:
                results[variant.name].append(measure(variant, wav, model_dir))
            print(f"round {r + 1} done, load average {os.getloadavg()[0]:.1f}", flush=True)

    base = results["citeline"]
    print("\n| variant | audio-s / wall-s | audio-s / CPU-s | speed vs citeline | word recall | needles said | fallbacks |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for variant in chosen:
        rows = results[variant.name]
        speed = statistics.median(seconds / row["wall"] for row in rows)
        per_cpu = statistics.median(seconds / row["cpu"] for row in rows)
        ratio = statistics.median(b["wall"] / row["wall"] for b, row in zip(base, rows))
        heard = statistics.mean(recall(spoken, row["text"]) for row in rows)
        said = sum(speech_contains(n, row["text"]) for n in needles for row in rows)
        fallbacks = statistics.mean(row["fallbacks"] for row in rows)
        print(f"| {variant.name} | {speed:.1f} | {per_cpu:.1f} | {ratio:.2f}x | {heard:.3f} | "
              f"{said}/{len(needles) * len(rows)} | {fallbacks:.1f} |")


if __name__ == "__main__":
    main()
