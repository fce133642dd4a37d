"""What the benches' ``--smoke`` modes share (tests/flows/test_bench_smoke.py runs them all).

A smoke runs a bench's own code on a tiny input so that ``make check`` sees it break: the
tests' fake embedder (tests/fixtures/fakes.py) in place of the model, three dev documents
(the ones examples/docs holds) with their needles and a few out-of-domain questions as the
corpus, and that corpus indexed once per process by the real index flow. No figure a smoke
prints means anything.
"""
from __future__ import annotations

import atexit
import json
import shutil
import sys
import tempfile
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
FAKE_CLI = FIXTURES / "fake_cli.py"  # `citeline` on the fake embedder, for benches that start the CLI or the API
DEV = ROOT.parent / "shared" / "corpora" / "dev"
EXAMPLES = ROOT / "examples" / "docs"  # the same three files as the dev corpus's
OUT_OF_DOMAIN = 6

if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))

from fakes import FAKE, HashEmbedder  # noqa: E402

SECOND_FAKE = "fake/hashed-bag-of-words-32"  # a second model, for the benches that compare or re-index to one


def register_fakes() -> list[str]:
    """Register the fakes not registered yet; their names."""
    from citeline.pipeline import embed

    added = []
    for name, dim in ((FAKE, 64), (SECOND_FAKE, 32)):
        if name not in embed.model_names():
            embed.register(name, lambda precision, batch_size, name=name, dim=dim: HashEmbedder(name, dim))
            added.append(name)
    return added


@contextmanager
def fake_models() -> Iterator[str]:
    """The fake embedder (and a 32-d second one) registered for the block, unless already there
    (the test session registers the first for itself); yields the first's name."""
    from citeline.pipeline import embed

    added = register_fakes()
    try:
        yield FAKE
    finally:
        for name in added:
            embed.unregister(name)


def dask_setup(worker) -> None:
    """Run by a Dask worker that preloads this file (``distributed.worker.preload``): the fakes
    registered there too, for as long as the worker lives."""
    register_fakes()


def _scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="citeline-smoke-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@lru_cache(maxsize=None)
def tiny_corpus() -> Path:
    """An evaluation corpus (docs/, ground_truth.jsonl, out_of_domain.jsonl): the dev corpus's
    needles in examples/docs's three documents, and its first out-of-domain questions."""
    if not (DEV / "ground_truth.jsonl").exists():
        raise SystemExit(f"the dev corpus is not at {DEV}: a smoke's tiny corpus takes its needles from there")
    corpus = _scratch() / "corpus"
    shutil.copytree(EXAMPLES, corpus / "docs", ignore=shutil.ignore_patterns("SOURCE.md"))
    held = {p.name for p in (corpus / "docs").iterdir()}
    needles = [line for line in (DEV / "ground_truth.jsonl").read_text().splitlines()
               if line.strip() and json.loads(line)["doc"] in held]
    (corpus / "ground_truth.jsonl").write_text("\n".join(needles) + "\n")
    ood = [line for line in (DEV / "out_of_domain.jsonl").read_text().splitlines() if line.strip()]
    (corpus / "out_of_domain.jsonl").write_text("\n".join(ood[:OUT_OF_DOMAIN]) + "\n")
    return corpus


@lru_cache(maxsize=None)
def tiny_index(model: str = FAKE) -> str:
    """The tiny corpus indexed by the index flow (strategy E) with ``model`` (registered by the
    caller), once per process; benches only read it."""
    from citeline.flows.ingest import index_folder
    from citeline.schemas.settings import IndexSettings

    db = str(_scratch() / "index")
    summary = index_folder(str(tiny_corpus() / "docs"), IndexSettings(db=db, model=model))
    assert summary.indexed == 3 and summary.failed == 0, summary.line()
    return db


@lru_cache(maxsize=None)
def eval_results(model: str = FAKE) -> Path:
    """``citeline eval``'s results.json for the tiny corpus (strategy E, dense and rerank) with ``model``."""
    from citeline.evaluation import report
    from citeline.evaluation.dataset import load_corpus
    from citeline.evaluation.harness import EvalConfig, run_evaluation

    out = _scratch() / "eval"
    config = EvalConfig(strategies=("E",), retrievers=("dense", "rerank"), model=model)
    report.write(run_evaluation(load_corpus(tiny_corpus()), config), out, plots=False)
    return out / report.RESULTS
