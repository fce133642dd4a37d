"""A chunk scored by its best sentence: does it bring a user's question to its passage, and gate better?

A chunk of up to 512 characters holds two to five sentences; its one vector averages them,
so a question that matches one sentence well (a needle is one sentence) meets a vector
diluted by its neighbours. Here every candidate's sentences (``pipeline.sentences``) are
embedded on their own, with the chunk's ``[Title > Section]`` header in front as the chunk's
own text has it, and a chunk scores by its nearest sentence. Measured on the default
candidates (union of the dense and BM25 top 50):

- ranking, per phrasing: the needle in the top 4 and the reciprocal rank for the chunk
  cosine, MaxSim (the default), the best sentence, and reciprocal-rank fusions of them,
  with the paired sign test against MaxSim;
- the gate's evidence: with the labels placing the cut (a ceiling, not a rule), how many
  questions each distance answers at 0, 1 and 2 of the out-of-domain questions passing,
  the needle counted when it is in that ranking's top 4 and under the cut.

    .venv/bin/python bench/sentence_scoring.py CORPUS_DIR DB
    .venv/bin/python bench/sentence_scoring.py --smoke

DB is an index of CORPUS_DIR/docs (``citeline index CORPUS/docs --db DB``). Quote the CPU.
``--smoke``: the tiny corpus of bench/smokekit.py on the fake embedder: runs, no figure.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citeline.tasks import env  # noqa: E402

env.apply()

from citeline.evaluation.dataset import load_corpus  # noqa: E402
from citeline.evaluation.metrics import contains_needle  # noqa: E402
from citeline.evaluation.stats import paired  # noqa: E402
from citeline.index.store import Store  # noqa: E402
from citeline.pipeline.embed import get_embedder  # noqa: E402
from citeline.pipeline.sentences import sentence_spans  # noqa: E402
from citeline.query.fuse import rrf  # noqa: E402
from citeline.query.rerank import TokenCache, rerank  # noqa: E402
from citeline.query.search import Searcher  # noqa: E402

DEPTH = 50
TOP = 4


def header_of(text: str, content: str) -> str:
    """The embedded text's header: what stands before the content (empty for a chunk without one)."""
    at = text.rfind(content)
    return text[:at] if at > 0 else ""


def sentences(text: str, content: str) -> list[str]:
    head = header_of(text, content)
    parts = [content[a:b].strip() for a, b in sentence_spans(content)]
    return [head + p for p in parts if len(p) >= 3] or [text]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("db", nargs="?")
    parser.add_argument("--smoke", action="store_true", help="a tiny corpus on the fake embedder")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            measure(str(smokekit.tiny_corpus()), smokekit.tiny_index())
    elif args.db:
        measure(args.corpus, args.db)
    else:
        parser.error("give CORPUS_DIR and DB")


def _sign(result) -> str:
    return f"+{result.wins}/-{result.losses} p={result.p:.2g}"


def measure(corpus_dir: str, db: str) -> None:
    store = Store(db)
    stamp = store.require_stamp()
    embedder = get_embedder(stamp.embed_model, "fp32")
    searcher = Searcher(store, embedder, stamp)
    reranker = TokenCache(searcher.default_reranker())
    rows = store.chunk_rows(["chunk_id", "content", "text"])
    content = {r["chunk_id"]: r["content"] for r in rows}
    split = {r["chunk_id"]: sentences(r["text"], r["content"]) for r in rows}
    flat = [s for cid in split for s in split[cid]]
    vectors = np.asarray(embedder.embed_documents(flat), dtype=np.float32)
    owned, at = {}, 0
    for cid, parts in split.items():
        owned[cid] = vectors[at:at + len(parts)]
        at += len(parts)
    print(f"{len(rows)} chunks, {len(flat)} sentences")
    corpus = load_corpus(corpus_dir)

    def score(question: str) -> dict[str, list[tuple[str, float]]]:
        """Per ranking: (chunk id, cosine distance the gate would read) in ranked order."""
        q = np.asarray(searcher.query_vector(question), dtype=np.float32)
        pool = searcher.union(question, DEPTH)
        ranked = rerank(question, pool, reranker, len(pool), searcher.passages(pool, reranker))
        chunk = {h.chunk_id: h.distance for h in pool}
        sent = {h.chunk_id: float(1.0 - (owned[h.chunk_id] @ q).max()) for h in pool}
        by_chunk = sorted(chunk, key=chunk.get)
        by_sent = sorted(sent, key=sent.get)
        by_maxsim = [h.chunk_id for h in ranked]
        best = {c: min(chunk[c], sent[c]) for c in chunk}
        by_best = sorted(best, key=best.get)
        fused = [f.chunk_id for f in rrf([by_maxsim, by_sent], k=60, limit=len(pool))]
        fused3 = [f.chunk_id for f in rrf([by_maxsim, by_sent, by_chunk], k=60, limit=len(pool))]
        return {
            "dense (chunk)": [(c, chunk[c]) for c in by_chunk],
            "MaxSim (default)": [(c, chunk[c]) for c in by_maxsim],
            "best sentence": [(c, sent[c]) for c in by_sent],
            "min(chunk, sentence)": [(c, best[c]) for c in by_best],
            "RRF MaxSim + sentence": [(c, sent[c]) for c in fused],
            "RRF MaxSim + sentence + chunk": [(c, sent[c]) for c in fused3],
        }

    ranks: dict[str, dict[str, tuple[str, int | None, float]]] = {}
    for q in corpus.queries:
        for name, ranking in score(q.text).items():
            hit = next((i for i, (c, _) in enumerate(ranking, 1) if contains_needle(content[c], q.needle)), None)
            gate = min(d for _, d in ranking[:TOP])  # the nearest of the top 4 by that ranking's distance
            needle_d = ranking[hit - 1][1] if hit and hit <= TOP else None
            ranks.setdefault(name, {})[q.id] = (q.phrasing, hit, needle_d if needle_d is not None else gate, needle_d)
    ood: dict[str, list[float]] = {}
    for o in corpus.out_of_domain:
        for name, ranking in score(o.query).items():
            ood.setdefault(name, []).append(min(d for _, d in ranking[:TOP]))

    print("| ranking | phrasing | top 4 | MRR | top 4 vs MaxSim | RR vs MaxSim | answered at 0 / 1 / 2 bluffs (labels place the cut) |")
    print("|---|---|---:|---:|---|---|---|")
    base = ranks["MaxSim (default)"]
    for name, got in ranks.items():
        cuts = sorted(ood[name])
        for phrasing in ("course", "ticket"):
            ids = [i for i, v in got.items() if v[0] == phrasing]
            top = [float(got[i][1] is not None and got[i][1] <= TOP) for i in ids]
            rr = [1 / got[i][1] if got[i][1] else 0.0 for i in ids]
            btop = [float(base[i][1] is not None and base[i][1] <= TOP) for i in ids]
            brr = [1 / base[i][1] if base[i][1] else 0.0 for i in ids]
            vs = " | " if got is base else f"{_sign(paired(top, btop))} | {_sign(paired(rr, brr))}"
            frontier = []
            for bluffs in (0, 1, 2):
                cut = cuts[bluffs] if bluffs < len(cuts) else 2.0  # strictly under: that many OOD pass
                frontier.append(sum(1 for i in ids if got[i][3] is not None and got[i][3] < cut))
            print(f"| {name} | {phrasing} | {int(sum(top))}/{len(ids)} | {np.mean(rr):.3f} | {vs} | "
                  f"{' / '.join(map(str, frontier))} |")


if __name__ == "__main__":
    main()
