"""What re-syncs cost, as ratios of a full index measured in the same run.

    .venv/bin/python bench/sync_costs.py [CORPUS_DOCS]
    .venv/bin/python bench/sync_costs.py --smoke   # the tests' two fake embedders, three documents

1. full index of the corpus (fresh index, strategy E, model already loaded);
2. no-op re-sync of the same folder (every file's stat unchanged: skipped unread);
3. no-op re-sync with ``verify`` (every file read and hashed: what a nightly check costs);
4. one file changed: re-sync;
5. re-index to a second model (int8 ONNX MiniLM) from the stored canonical text;
6. re-index to another chunking strategy (C) from the stored canonical text.

Every extraction is counted (``pipeline.prepare.extract_bytes`` wrapped): the re-indexes
must show 0. The load average is printed with the figures: ratios hold on a shared
machine, absolute seconds do not.
``--smoke`` (tests/flows/test_bench_smoke.py): examples/docs, the fake embedder re-indexed to the 32-d fake
in place of the int8 model (bench/smokekit.py): runs, no figure.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from citeline.runtime import env

env.apply()
# Prefect waits 20 s for its temporary server; on this loaded machine that once ran out.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

import citeline.pipeline.prepare  # noqa: E402
from citeline import pipeline  # noqa: E402
from citeline.flows.ingest import index_folder  # noqa: E402
from citeline.flows.reindex import reindex  # noqa: E402
from citeline.pipeline.embed import get_embedder  # noqa: E402
from citeline.schemas.settings import IndexSettings  # noqa: E402

DEFAULT_DOCS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev" / "docs"


EXTRACTIONS = [0]
_extract_bytes = pipeline.prepare.extract_bytes


def counted_extract(*args, **kwargs):
    EXTRACTIONS[0] += 1
    return _extract_bytes(*args, **kwargs)


pipeline.prepare.extract_bytes = counted_extract


def timed(fn, *args):
    EXTRACTIONS[0] = 0
    started = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - started, result, EXTRACTIONS[0]


def main(docs: Path, model: str = IndexSettings.model, second: str = "minilm-int8") -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        shutil.copytree(docs, folder)
        settings = IndexSettings(db=f"{tmp}/index", model=model)
        get_embedder(settings.model).embed_documents(["warm-up"])
        get_embedder(second).embed_documents(["warm-up"])
        index_folder(str(Path(tmp) / "docs" / next(p.name for p in folder.iterdir())),
                     IndexSettings(db=f"{tmp}/w", model=model))

        load = os.getloadavg()[0]
        full_s, full, full_x = timed(index_folder, str(folder), settings)
        noop_s, noop, noop_x = timed(index_folder, str(folder), settings)
        ver_s, ver, ver_x = timed(lambda: index_folder(str(folder), settings, verify=True))
        first = sorted(folder.iterdir())[0]
        first.write_text(first.read_text() + "\n\nOne more closing paragraph.\n")
        one_s, one, one_x = timed(index_folder, str(folder), settings)
        re_s, re, re_x = timed(reindex, IndexSettings(db=settings.db, model=second))
        st_s, st, st_x = timed(reindex, IndexSettings(db=settings.db, model=second, strategy="C"))
        load = (load, os.getloadavg()[0])

    print(f"corpus            {docs} ({full.indexed} documents, {full.chunks} chunks)")
    print(f"machine           {os.cpu_count()} cpus, load average {load[0]:.2f} at start, {load[1]:.2f} at end")
    print(f"full index        {full_s:8.2f} s   1.000  (extractions {full_x})")
    print(f"no-op re-sync     {noop_s:8.2f} s   {noop_s / full_s:.3f}  (skipped {noop.skipped}, extractions {noop_x})")
    print(f"no-op --verify    {ver_s:8.2f} s   {ver_s / full_s:.3f}  (skipped {ver.skipped}, extractions {ver_x})")
    print(f"one file changed  {one_s:8.2f} s   {one_s / full_s:.3f}  (indexed {one.indexed}, skipped {one.skipped}, "
          f"extractions {one_x})")
    print(f"re-index ({second.rsplit('-', 1)[-1]:>4})   {re_s:8.2f} s   {re_s / full_s:.3f}  ({re.rows} rows, switched={re.switched}, "
          f"extractions {re_x})")
    print(f"strategy E -> C   {st_s:8.2f} s   {st_s / full_s:.3f}  ({st.rows} rows, switched={st.switched}, "
          f"extractions {st_x})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--smoke"]:
        import smokekit

        with smokekit.fake_models() as fake:
            main(smokekit.EXAMPLES, fake, smokekit.SECOND_FAKE)
    else:
        main(Path(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DOCS))
