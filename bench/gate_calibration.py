"""The self-calibrated gate against the dev corpus's real questions.

Dumps, for one index built from the dev corpus, the gate views of: the calibration's
pseudo-questions and off-topic bank (what ``citeline calibrate`` measures), and the
dev corpus's real in-domain and out-of-domain questions under dense and the default
rerank (what a person asks). Then prints, per rule, the cut the calibration picks and
what that cut does to the real questions: bluffs /30, lost of the answers found,
refused in-domain /64.

    .venv/bin/python bench/gate_calibration.py --db /tmp/devE [--dump /tmp/gate.json]
    .venv/bin/python bench/gate_calibration.py --smoke

``--smoke`` (tests/flows/test_bench_smoke.py): the tiny corpus of bench/smokekit.py, indexed with the
tests' fake embedder, in place of --db and --corpus: runs, no figure.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citeline.runtime import env  # noqa: E402

env.apply()

from citeline.evaluation.dataset import load_corpus  # noqa: E402
from citeline.evaluation.harness import EvalConfig, _cache_tokens, search_all  # noqa: E402
from citeline.pipeline.embed import get_embedder  # noqa: E402
from citeline.query.ask import AskOptions, retrieve  # noqa: E402
from citeline.query import calibrate as cal  # noqa: E402
from citeline.query.search import Searcher  # noqa: E402
from citeline.query.thresholds import GateQuery, gate_point  # noqa: E402
from citeline.schemas.retrieval import DENSE, RERANK  # noqa: E402

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "dev"


def real_queries(searcher, corpus, retriever: str) -> list[GateQuery]:
    """The corpus's questions through ``ask``'s own retrieval, as the evaluation runs them."""
    config = EvalConfig(strategies=("E",), retrievers=(retriever,))
    options = AskOptions(k=config.depth, retriever=retriever)
    queries, ood = search_all(corpus, lambda q: retrieve(searcher, q, options), config)
    return [GateQuery(q.top_distances, q.top_relevant, q.in_domain) for q in (*queries, *ood)]


def dump(args) -> dict:
    searcher = Searcher.open(args.db, get_embedder(args.model or searcher_model(args.db)))
    views = cal.measure(searcher)
    out = {"pseudo": [q.__dict__ for q in views.in_domain], "bank": [q.__dict__ for q in views.out_of_domain],
           "adjacent": list(views.adjacent)}
    corpus = load_corpus(args.corpus)
    _cache_tokens(searcher, {}, {})
    for retriever in (DENSE, RERANK):
        out[retriever] = [q.__dict__ for q in real_queries(searcher, corpus, retriever)]
    return out


def searcher_model(db: str) -> str:
    from citeline.index.store import Store

    return Store(db).require_stamp().embed_model


def load(raw: dict) -> dict[str, list[GateQuery]]:
    return {k: v if k == "adjacent" else [GateQuery(tuple(q["values"]), tuple(q["relevant"]), q["in_domain"])
                                          for q in v] for k, v in raw.items()}


def report(views: dict[str, list[GateQuery]]) -> None:
    chosen = cal.calibrate_queries(views["pseudo"], views["bank"])
    adjacent = cal.adjacent_cut(views.get("adjacent", []))
    if adjacent is not None and adjacent < chosen.cut:
        chosen = gate_point([*views["pseudo"], *views["bank"]], adjacent)
    print(f"calibration: {chosen.line()}  (pseudo {len(views['pseudo'])}, bank {len(views['bank'])})")
    for retriever in (DENSE, RERANK):
        for cut in (0.45, chosen.cut):
            print(f"  dev {retriever:<6} {gate_point(views[retriever], cut).line()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db")
    parser.add_argument("--model", default=None)
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--dump", default=None, help="read the views from here if it exists, else write them")
    parser.add_argument("--smoke", action="store_true", help="a tiny corpus on the fake embedder")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            args.db, args.corpus = smokekit.tiny_index(), str(smokekit.tiny_corpus())
            report(load(dump(args)))
        return
    if not args.db:
        parser.error("--db is required")
    path = Path(args.dump) if args.dump else None
    raw = json.loads(path.read_text()) if path and path.exists() else dump(args)
    if path and not path.exists():
        path.write_text(json.dumps(raw))
    report(load(raw))


if __name__ == "__main__":
    main()
