"""What a sync encodes and extracts when most of the work is already stored.

    .venv/bin/python bench/reuse_costs.py [PAGES] [FILES]     # defaults: 300 pages, 1,000 files
    .venv/bin/python bench/reuse_costs.py --smoke             # 2 pages, 10 files: runs, no figure

1. Chunk-level reuse: a PDF of PAGES pages (generated here: a heading every two pages,
   four paragraphs a page) is indexed; one paragraph on the middle page is edited (a few
   words replaced) and the folder synced again: chunks encoded, chunks that kept their
   vector, seconds, against the first index.
2. Content identity: FILES Markdown notes (each with a ``# title``) are indexed; then
   every one is renamed, half of them into a new subfolder, and the folder synced again:
   extractions, chunks encoded, seconds, against the first index.

The tests' fake embedder (tests/fixtures/fakes.py, registered through the real registry)
stands in for the model and counts every text it encodes; every extraction is counted by
wrapping ``pipeline.prepare.extract_bytes`` (bench/sync_costs.py's counter). ``check_index`` runs after every sync.
"""
from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

from citeline.runtime import env

env.apply()
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))

import pymupdf  # noqa: E402
from fakes import FAKE  # noqa: E402
from smokekit import fake_models  # noqa: E402

from citeline.flows.ingest import index_folder  # noqa: E402
from citeline.index.check import check_index  # noqa: E402
from citeline.index.store import Store  # noqa: E402
from citeline.schemas.settings import IndexSettings  # noqa: E402
from citeline.runtime.handles import embedder_for  # noqa: E402

WORDS = ("the report board region revenue harbour column meeting budget contractor inspection interval "
         "warranty delivery committee project archive pump bridge tender audit ledger survey").split()
from sync_costs import EXTRACTIONS  # noqa: E402  # importing it counts every extract_bytes call


def long_pdf(pages: int, edited_page: int | None = None) -> bytes:
    """``pages`` pages of four paragraphs, a heading every two pages; on ``edited_page`` the
    second paragraph has three words replaced (same length class: one paragraph edited)."""
    rng = random.Random(15)
    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page(width=612, height=792)
        y = 60.0
        if number % 2 == 1:
            page.insert_text((54, y), f"Chapter {number // 2 + 1}: {rng.choice(WORDS).title()} matters",
                             fontname="hebo", fontsize=16)
            y += 34
        for k in range(4):
            lines = [" ".join(rng.choice(WORDS) for _ in range(11)) for _ in range(6)]
            lines[0] = lines[0].capitalize()
            if number == edited_page and k == 1:
                lines[2] = "an edited line names the new auditor and the new ledger"
            for line in lines:
                page.insert_text((54, y), line + ("." if line is lines[-1] else ""), fontname="helv", fontsize=10)
                y += 13
            y += 12
    return doc.tobytes(deflate=True)


def encoded() -> int:
    return embedder_for(IndexSettings(model=FAKE)).stats.texts


def synced(folder: Path, settings: IndexSettings):
    """One sync: (summary, seconds, texts encoded, extractions), with the index checked after it."""
    EXTRACTIONS[0], before, started = 0, encoded(), time.perf_counter()
    summary = index_folder(str(folder), settings)
    seconds = time.perf_counter() - started
    violations = check_index(Store(settings.db))
    assert violations == [], violations
    return summary, seconds, encoded() - before, EXTRACTIONS[0]


def edit_bench(tmp: Path, pages: int) -> None:
    folder = tmp / "long"
    folder.mkdir()
    pdf = folder / "report.pdf"
    pdf.write_bytes(long_pdf(pages))
    settings = IndexSettings(db=str(tmp / "long-index"), model=FAKE)
    first, first_s, first_n, _ = synced(folder, settings)
    pdf.write_bytes(long_pdf(pages, edited_page=pages // 2))
    again, again_s, again_n, extracted = synced(folder, settings)
    print(f"edit    {pages}-page PDF, {first.chunks} chunks: first index {first_s:.1f} s, {first_n} encoded; "
          f"one paragraph edited: {again_s:.1f} s, extracted {extracted}, encoded {again_n} "
          f"(summary {again.encoded}), kept {again.reused}, chunks now {again.chunks}")


def rename_bench(tmp: Path, files: int) -> None:
    folder = tmp / "notes"
    folder.mkdir()
    rng = random.Random(2)
    for i in range(files):
        body = " ".join(rng.choice(WORDS) for _ in range(40 + (i % 4) * 40))
        (folder / f"note-{i:05}.md").write_text(f"# Note {i}\n\n{body.capitalize()}.\n")
    settings = IndexSettings(db=str(tmp / "notes-index"), model=FAKE)
    first, first_s, first_n, first_x = synced(folder, settings)
    (folder / "moved").mkdir()
    for i in range(files):
        target = folder / "moved" if i % 2 else folder
        (folder / f"note-{i:05}.md").rename(target / f"renamed-{i:05}.md")
    again, again_s, again_n, extracted = synced(folder, settings)
    print(f"rename  {files} files, {first.chunks} chunks: first index {first_s:.1f} s, {first_x} extracted, "
          f"{first_n} encoded; all renamed (half moved into a subfolder): {again_s:.1f} s, indexed {again.indexed}, "
          f"deleted {again.deleted}, extracted {extracted}, encoded {again_n} (summary {again.encoded}), "
          f"kept {again.reused}")


def main(pages: int, files: int) -> None:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, fake_models():
        edit_bench(Path(tmp), pages)
        rename_bench(Path(tmp), files)
    print(f"machine {os.cpu_count()} cpus; load average {load:.2f} at start, {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--smoke"]:
        main(2, 10)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 300, int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
