"""A refusal cut calibrated from the index itself, for any embedding model.

A cosine distance means something only for the model that produced it, and a cut
hand-fitted to one corpus and one model leaves every other model without one. Here
the index supplies its own two sides:

- **in domain**: pseudo-questions drawn from indexed chunks (:func:`pseudo_question`):
  a salient phrase of one sentence of the chunk's ``content`` (never its header), its
  stopwords dropped, so the question does not simply repeat the passage;
- **out of domain**: the off-topic bank shipped with citeline (``data/offtopic.txt``,
  several hundred everyday questions written for this purpose).

Each question is searched densely; its top :data:`~query.refuse.MAX_CHUNKS` distances
become a :class:`~query.thresholds.GateQuery` and the evaluation's own sweep counts
bluffs and lost answers at every cut. The cut is the evaluation's rule applied to
*rates* (the two samples differ in size; see :func:`choose_cut`).

Pseudo-questions are easier than real ones: they copy words of the chunk they were
drawn from, so their distances run lower than a person's question would. The rule
therefore never cuts at the pseudo-questions' own edge: among cuts that meet the
bank's tolerated bluff rate it keeps the loosest one, i.e. it spends everything the
out-of-domain side allows on keeping answers. An everyday bank cannot see *adjacent*
questions (same field, answer absent), which sit much closer; they are simulated by
leaving the source document out (:func:`adjacent_cut`), and the cut is lowered to let at
most :data:`ADJACENT_RATE` of those through. A chunk that copies the question's phrase
(:func:`copies`) answers it and is skipped; a question drawn from a table chunk is not
simulated at all; one that names what no other document mentions is refused by ask's name
check (query/unmentioned.py) and so passes at no cut (:data:`NEVER_PASSES`). Table chunks get
their own cut, bounded by the bank only
(:func:`table_cut`). docs/query.md, "How the gate calibrates itself", has the
measurements and the limits.
"""
from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from importlib import resources

import numpy as np

from citeline.pipeline.sentences import sentence_spans
from citeline.query.answerability import Answerability, Evidence, evidence, fit, rate_threshold
from citeline.query.refuse import MAX_CHUNKS
from citeline.query.rerank import MaxSimReranker, TokenCache
from citeline.query.thresholds import COSINE_CUTS, GatePoint, GateQuery, Uncalibrated, gate_point, sweep
from citeline.query.unmentioned import unmentioned
from citeline.query.words import content_words
from citeline.schemas.document import tabular
from citeline.schemas.retrieval import COSINE

# Bump when the sample, the bank or the rule of the cosine cut changes (2: copies, tables; 3: sample
# keyed by content; 4: adjacent questions the name check refuses never pass).
CALIBRATION_VERSION = "4"
SEED = 16
SAMPLE = 300  # pseudo-questions at most: cheap (one batch of query embeddings), stable to ~0.01
PHRASE_WORDS = 8  # content words in a pseudo-question
MIN_WORDS = 5  # a sentence with fewer content words says too little to be asked about
# The share of off-topic questions allowed through. Not zero: a bank question may be on
# topic for some corpus (a cookbook index answers the cooking questions), and one stray
# question must not drag the cut down for everyone.
BLUFF_RATE = 0.01
GRID_STEP = 0.005
# Adjacent questions (same field, answer not in the index) sit far closer than the bank.
# Simulated by leave-one-document-out: a pseudo-question's nearest chunk in *another*
# document. The cut lets at most this share of them through. Chosen with the dev corpus
# in view, then held against cargo-reference: 15 % and 20 % buy answers on both with one or
# two more bluffs on dev (docs/query.md, "Names no passage mentions"), so 10 % stays.
ADJACENT_RATE = 0.10
ADJACENT_DEPTH = 50  # chunks searched to find one of another document
NEVER_PASSES = 2.0  # the farthest cosine distance: an adjacent question the name check refuses
# A chunk holding at least this share of a pseudo-question's words as one run, in order,
# copies the sentence it was drawn from: shared boilerplate, the same table in a .csv
# and an .ods, one PDF saved twice. Such a chunk answers the question, so it is no
# adjacent question; counted as one, copies pulled a small folder's cut below its own
# answers (0.34, against 0.42 without them).
COPY_SHARE = 0.5
# The answerability score reranks its questions as ``ask`` does: fewer than the cosine
# calibration's, since each one costs a rerank (docs/query.md has the cost).
SCORED_SAMPLE = 150
SCORED_BANK = 200


@dataclass(frozen=True)
class Calibration:
    """A calibrated cosine cut, stamped with what it was measured on (stored in ``meta``).

    Attributes:
        cut: the cosine-distance cut (a source passes when ``distance < cut``).
        model: the embedding model (``IndexStamp.embed_model``) the distances came from.
        pipeline_version, strategy: the rest of the index stamp.
        table: the chunks table measured (one per stamp).
        created_at: ISO time of the calibration.
        chunks: rows of the table; ``sampled`` pseudo-questions were drawn from them.
        offtopic: questions of the bank.
        bluffs, lost, answerable: at ``cut``: bank questions let through, pseudo-questions
            whose own chunk was in the window but cut, pseudo-questions whose chunk was in it.
        refused_in_domain: pseudo-questions with nothing under the cut.
        rule: how the cut was chosen.
    """

    cut: float
    model: str
    pipeline_version: str
    strategy: str
    table: str
    created_at: str
    chunks: int
    sampled: int
    offtopic: int
    bluffs: int
    lost: int
    answerable: int
    refused_in_domain: int
    rule: str
    version: str = CALIBRATION_VERSION
    seed: int = SEED
    answerability: dict | None = None  # the fitted score (query/answerability.py) for reranked answers
    table_cut: float | None = None  # the cut for table chunks (:func:`table_cut`); None: no table

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str) -> "Calibration":
        return cls(**json.loads(raw))

    def line(self) -> str:
        scored = "" if self.answerability is None else (
            f"; reranked answers pass an answerability score over {self.answerability['threshold']:.3f}")
        if self.table_cut is not None:
            scored += f"; table chunks pass under {self.table_cut:.3f}"
        return (f"cut {self.cut:.3f} calibrated {self.created_at} for {self.model}: "
                f"{self.sampled} pseudo-questions from {self.chunks} chunks "
                f"(lost {self.lost}/{self.answerable}, refused {self.refused_in_domain}), "
                f"{self.offtopic} off-topic questions ({self.bluffs} let through){scored}")


RULE = (f"the loosest cut letting at most {BLUFF_RATE:.0%} of the off-topic bank through "
        "(fewest lost pseudo-questions within that), lowered to the cut letting at most "
        f"{ADJACENT_RATE:.0%} of pseudo-questions through on another document's chunk (adjacent questions; "
        "copies of the question's sentence and questions from tables left out); table chunks: the loosest cut "
        f"letting at most {BLUFF_RATE:.0%} of the bank through on a table, never below the cut")


def offtopic_questions() -> list[str]:
    """The off-topic bank that ships with citeline, in file order (comments dropped)."""
    text = resources.files("citeline.query").joinpath("data/offtopic.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def pseudo_question(content: str, rng: random.Random, words: int = PHRASE_WORDS) -> str | None:
    """A salient phrase of one sentence of ``content``: what a reader might ask about it.

    One sentence with at least :data:`MIN_WORDS` content words is picked at random, and a
    window of ``words`` of its content words (stopwords dropped, so the phrase is not a
    verbatim copy of the passage) at a random offset is the question. A table row, a
    transcript line or an OCR'd page is treated like any other text: its kind is no
    reason to skip it, or the cut would not be measured on it.

    Returns:
        The phrase, or None when the chunk holds no sentence long enough.

    >>> pseudo_question("Tiny. The forget gate decides which parts of the cell state to keep.",
    ...                 random.Random(0), words=4)
    'parts cell state keep'
    """
    sentences = [content_words(content[a:b]) for a, b in sentence_spans(content)]
    sentences = [s for s in sentences if len(s) >= MIN_WORDS]
    if not sentences:
        return None
    chosen = rng.choice(sentences)
    start = rng.randrange(max(len(chosen) - words, 0) + 1)
    return " ".join(chosen[start:start + words])


def sample_chunks(keys: Sequence, size: int = SAMPLE, seed: int = SEED) -> list[int]:
    """Positions of a seeded sample of chunks, drawn in the order of their ``keys``: independent
    of the order rows were read in, and of anything the keys leave out.

    >>> sample_chunks(["c", "a", "b"], size=2, seed=1) == sample_chunks(["a", "b", "c"], size=2, seed=1)
    False
    >>> sorted(sample_chunks(["a", "b"], size=5))
    [0, 1]
    """
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    rng = random.Random(seed)
    return sorted(rng.sample(order, min(size, len(order))), key=lambda i: keys[i])


def out_of_domain_queries(questions: Iterable[str], search: Callable[[str], Sequence[tuple[str, float]]]
                          ) -> list[GateQuery]:
    """Gate views of the off-topic bank: every chunk in the window is a wrong one."""
    return [GateQuery(tuple(d for _, d in top), (False,) * len(top), False)
            for top in map(search, questions)]


def cut_grid(queries: Sequence[GateQuery], step: float = GRID_STEP) -> list[float]:
    """Cuts from the nearest distance seen to just past the farthest, ``step`` apart."""
    values = np.array([v for q in queries for v in q.values], dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return []
    lo, hi = np.floor(values.min() / step) * step, np.ceil(values.max() / step) * step + step
    return [round(float(c), 6) for c in np.arange(lo, hi + step / 2, step)]


def choose_cut(points: Sequence[GatePoint], bluff_rate: float = BLUFF_RATE) -> GatePoint:
    """The loosest cut whose bluff rate stays within ``bluff_rate`` (see :data:`RULE`).

    The evaluation's rule (fewest bluffs + lost) is kept as a tiebreak: among the
    points within the bluff budget the one with the fewest lost answers wins, ties to
    the looser cut. Looser, because pseudo-questions are closer to their chunks than a
    real question: the lost count they report understates what a person would lose.

    Raises:
        ValueError: ``points`` is empty.

    >>> pts = [GatePoint(COSINE, c, b, 100, l, 50, 0, 50) for c, b, l in [(0.4, 0, 9), (0.5, 1, 4), (0.6, 5, 1)]]
    >>> choose_cut(pts).cut
    0.5
    """
    if not points:
        raise ValueError("no cut to choose from: the calibration found no distances")
    allowed = [p for p in points if p.bluffs <= bluff_rate * max(p.ood, 1)]
    if not allowed:  # even the strictest cut lets too much through: take the strictest
        return min(points, key=lambda p: p.cut)
    return min(allowed, key=lambda p: (p.lost, -p.cut))


def calibrate_queries(in_domain: Sequence[GateQuery], out_of_domain: Sequence[GateQuery],
                      window: int = MAX_CHUNKS) -> GatePoint:
    """The chosen gate point for these two samples (the pure core of :func:`calibrate`)."""
    queries = [*in_domain, *out_of_domain]
    return choose_cut(sweep(queries, cut_grid(queries), COSINE, window))


@dataclass(frozen=True)
class Views:
    """What the calibration measured: both samples as the gate sees them."""

    in_domain: tuple[GateQuery, ...]
    out_of_domain: tuple[GateQuery, ...]
    chunks: int
    # Per in-domain question, in its order: the nearest chunk of another document that is
    # not a copy (None: a table row's question, or none within reach; NEVER_PASSES: the
    # question names what no other document mentions, so ask refuses it whatever the distance).
    adjacent: tuple[float | None, ...] = ()
    # Per bank question: its nearest table chunk's distance, or where none is within reach the
    # farthest distance reached (a lower bound). Empty: the index holds no table chunk.
    bank_tables: tuple[float, ...] = ()


def measure(searcher, size: int = SAMPLE, seed: int = SEED, window: int = MAX_CHUNKS, check_names: bool = True
            ) -> Views:
    """Search the pseudo-questions and the off-topic bank densely over ``searcher``'s index.

    Dense, not the default rerank: it is what the cosine gate reads at its most generous
    (the window holds the nearest chunks), so a bank question that fails here fails
    under every retriever; the questions are embedded in batches, which took a 600-question
    calibration from 28 s to a few at load 7.
    """
    rows = searcher.store.chunk_rows(["chunk_id", "content", "doc_id"])
    asked, bank = _asked(rows, size, seed), offtopic_questions()
    deep = searcher.dense_many([*(q for q, _, _ in asked), *bank], ADJACENT_DEPTH)

    def search(question: str) -> list[tuple[str, float]]:
        return [(hit.chunk_id, float(hit.distance)) for hit in deep[question][:window]]

    tops = [(search(q), chunk) for q, _, chunk in asked]
    in_domain = tuple(GateQuery(tuple(d for _, d in top), tuple(c == chunk for c, _ in top), True) for top, chunk in tops)
    doc_of = {r["chunk_id"]: r["doc_id"] for r in rows}
    content_of = {r["chunk_id"]: r["content"] for r in rows}
    # A table row's pseudo-question is a run of cell values, near every table of the same
    # shape whatever its values: leaving its document out measures how alike tables look.
    # ask refuses a question naming what no passage mentions (query/unmentioned.py), whatever its
    # distance: with its document left out, such a pseudo-question cannot bluff at any cut.
    def refused_by_names(question: str, doc: str) -> bool:
        return bool(unmentioned(question, lambda word: searcher.mentions(word, outside=doc)))

    adjacent = tuple(None if tabular(content_of[chunk]) else
                     NEVER_PASSES if check_names and refused_by_names(q, doc) else
                     next((float(h.distance) for h in deep[q]
                           if doc_of.get(h.chunk_id) != doc and not copies(q, content_of.get(h.chunk_id, ""))), None)
                     for q, doc, chunk in asked)
    tables = {r["chunk_id"] for r in rows if tabular(r["content"])}
    bank_tables = tuple(next((float(h.distance) for h in deep[q] if h.chunk_id in tables),
                             float(deep[q][-1].distance) if deep[q] else 2.0)
                        for q in bank) if tables else ()
    return Views(in_domain, tuple(out_of_domain_queries(bank, search)), len(rows), adjacent, bank_tables)


def _asked(rows: Sequence[dict], size: int, seed: int) -> list[tuple[str, str, str]]:
    """(question, source doc id, source chunk id) of each pseudo-question, in the order they were asked."""
    rng = random.Random(seed)
    asked = []
    # Keyed by content, not by chunk id: an id hashes the document's absolute path, and the
    # same folder elsewhere drew another sample (dev's cut moved by 0.02, docs/eval-formats.md).
    for i in sample_chunks([(r["content"], r["chunk_id"]) for r in rows], size, seed):
        question = pseudo_question(rows[i]["content"], rng)
        if question is not None:
            asked.append((question, rows[i]["doc_id"], rows[i]["chunk_id"]))
    return asked


def copies(question: str, content: str, share: float = COPY_SHARE) -> bool:
    """Whether ``content`` holds at least ``share`` of a pseudo-question's words as one run, in order.

    The question is a window of content words (:func:`pseudo_question`), so a passage that
    repeats the sentence it came from repeats that run; a passage on the same topic shares
    words, rarely half of them in the same order.

    >>> copies("harbour committee meets Fridays pier office", "The harbour committee meets on Fridays.")
    True
    >>> copies("harbour committee meets Fridays pier office", "The committee of the harbour meets in the pier office.")
    False
    """
    asked = question.lower().split()
    words = [w.lower() for w in content_words(content)]
    need = max(1, math.ceil(share * len(asked)))
    grams = {tuple(words[i:i + need]) for i in range(len(words) - need + 1)}
    return any(tuple(asked[i:i + need]) in grams for i in range(len(asked) - need + 1))


def adjacent_cut(distances: Sequence[float | None], rate: float = ADJACENT_RATE) -> float | None:
    """The cut letting at most ``rate`` of the adjacent (other-document) distances through
    (None, a question with no adjacent distance, is left out).

    >>> adjacent_cut([0.5, 0.3, 0.7, 0.4, 0.6, 0.8, 0.9, 0.35, 0.65, 0.75], rate=0.1)
    0.35
    """
    ordered = sorted(d for d in distances if d is not None)
    if not ordered:
        return None
    return round(float(ordered[int(rate * len(ordered))]), 6)


def calibrate(searcher, created_at: str, size: int = SAMPLE, seed: int = SEED,
              answerability: bool = False) -> Calibration:
    """Calibrate the cosine cut of ``searcher``'s index (see the module docstring).

    Args:
        searcher: an open searcher over the index, with the embedder it was built with.
        created_at: the time to stamp on the result (ISO 8601).
        size, seed: the pseudo-question sample.
        answerability: also fit the answerability score (:func:`calibrate_answerability`;
            opt-in: it reranks hundreds of questions, and docs/query.md has why it is not
            the default).

    Raises:
        Uncalibrated: the index holds no chunk with a sentence to draw a question from.
    """
    views = measure(searcher, size, seed)
    if not views.in_domain:
        raise Uncalibrated(f"none of the index's {views.chunks} chunks holds a sentence of at least "
                           f"{MIN_WORDS} words to draw a calibration question from")
    point = calibrate_queries(views.in_domain, views.out_of_domain)
    adjacent = adjacent_cut(views.adjacent)
    if adjacent is not None and adjacent < point.cut:
        point = gate_point([*views.in_domain, *views.out_of_domain], adjacent)
    stamp = searcher.stamp
    scored = calibrate_answerability(searcher, seed) if answerability else None
    return Calibration(
        cut=point.cut, model=stamp.embed_model, pipeline_version=stamp.pipeline_version, strategy=stamp.strategy,
        table=searcher.store.active_table(), created_at=created_at, chunks=views.chunks,
        sampled=len(views.in_domain), offtopic=len(views.out_of_domain), bluffs=point.bluffs, lost=point.lost,
        answerable=point.answerable, refused_in_domain=point.refused_in_domain, rule=RULE, seed=seed,
        answerability=None if scored is None else scored.to_dict(),
        table_cut=table_cut(views.bank_tables, point.cut),
    )


def table_cut(bank_tables: Sequence[float], cut: float, rate: float = BLUFF_RATE) -> float | None:
    """The cut for table chunks: the loosest letting at most ``rate`` of the bank through on a
    table, never stricter than ``cut`` (None: the index holds no table).

    A table chunk sits farther from the question it answers than prose does (cells, no
    sentence: 0.47–0.65 measured on real sheets), so the prose cut refuses every lookup.
    The adjacent simulation cannot place a table cut (tables of one shape sit close
    whatever their values), so only the bank bounds it: an adjacent question that lands
    on a table is not stopped by it (docs/query.md).

    >>> table_cut([0.9, 0.62, 0.8, 0.7] * 25, 0.45), table_cut([0.9] * 100, 0.95), table_cut([], 0.45)
    (0.62, 0.95, None)
    """
    if not bank_tables:
        return None
    ordered = sorted(bank_tables)
    return round(max(cut, float(ordered[int(rate * len(ordered))])), 6)


@dataclass(frozen=True)
class ScoredViews:
    """The evidence of reranked sources (query/answerability.py) the score is fitted on.

    ``answered``: each pseudo-question's own chunk, where the reranked window holds it.
    ``adjacent``: per pseudo-question, the window reranked without its source document.
    ``offtopic``: per bank question, its reranked window.
    """

    answered: tuple[Evidence, ...]
    adjacent: tuple[tuple[Evidence, ...], ...]
    offtopic: tuple[tuple[Evidence, ...], ...]


def measure_scored(searcher, size: int = SCORED_SAMPLE, bank: int = SCORED_BANK, seed: int = SEED,
                   window: int = MAX_CHUNKS) -> ScoredViews:
    """Rerank a sample of pseudo-questions and of the bank as ``ask`` does (its default candidates).

    Without stored word-piece vectors MaxSim encodes every candidate; the calibration asks
    hundreds of questions of one index, so each chunk is encoded once (``TokenCache``).
    """
    reranker = searcher.default_reranker()
    if isinstance(reranker, MaxSimReranker) and searcher.reader.tokens is None:
        reranker = TokenCache(reranker)
    depth = 2 * searcher.rerank_config.depth  # the whole pool: the adjacent view needs more than the window
    rows = searcher.store.chunk_rows(["chunk_id", "content", "doc_id"])
    content_of = {r["chunk_id"]: r["content"] for r in rows}
    answered, adjacent = [], []
    for question, doc, chunk in _asked(rows, size, seed):
        hits = searcher.rerank(question, depth, reranker=reranker)
        top = hits[:window]
        answered += [e for h, e in zip(top, evidence(question, top)) if h.chunk_id == chunk]
        if tabular(content_of[chunk]):
            continue
        others = [h for h in hits if h.chunk.doc_id != doc and not copies(question, h.chunk.content)][:window]
        adjacent.append(tuple(evidence(question, others)))
    rng = random.Random(seed)
    questions = offtopic_questions()
    offtopic = [tuple(evidence(q, searcher.rerank(q, window, reranker=reranker)))
                for q in rng.sample(questions, min(bank, len(questions)))]
    return ScoredViews(tuple(answered), tuple(adjacent), tuple(offtopic))


def fit_answerability(views: ScoredViews, reranker: str, bluff_rate: float = BLUFF_RATE,
                      adjacent_rate: float = ADJACENT_RATE) -> Answerability:
    """The score fitted on ``views`` and its threshold, chosen by the cosine cut's rule.

    The threshold lets at most ``bluff_rate`` of the bank and ``adjacent_rate`` of the
    simulated adjacent questions through (the higher of the two thresholds).

    Raises:
        ValueError: no answered or no unanswerable example to fit on.
    """
    negatives = [e for window in (*views.adjacent, *views.offtopic) for e in window]
    weights, bias = fit(views.answered, negatives)
    model = Answerability(weights, bias, threshold=0.0, reranker=reranker)

    def best(windows):
        return [max(map(model.score, w)) for w in windows if w]

    threshold = max(rate_threshold(best(views.offtopic), bluff_rate), rate_threshold(best(views.adjacent), adjacent_rate))
    return replace(model, threshold=threshold)  # unrounded: rounding down would let one more through


def calibrate_answerability(searcher, seed: int = SEED) -> Answerability | None:
    """Fit the index's answerability score; None when its sample holds nothing to fit on."""
    views = measure_scored(searcher, seed=seed)
    try:
        return fit_answerability(views, searcher.default_reranker().name)
    except ValueError:
        return None


# How the cut in use was obtained (``citeline status``, ``ask --json``).
CALIBRATED, OVERRIDE, LEGACY = "calibrated", "override", "legacy"


@dataclass(frozen=True)
class CutInUse:
    """The cosine cut ``ask`` applies to an index, and where it came from.

    ``how`` is "override" (``--cut``), "calibrated" (this index's stored calibration) or
    "legacy" (the hand-fitted table of :mod:`query.thresholds`, for an index built
    before calibration existed and not calibrated since).
    """

    cut: float
    how: str
    calibration: Calibration | None = None

    @property
    def answerability(self) -> Answerability | None:
        """The calibrated answerability score, unless ``--cut`` overrides the gate or none was fitted."""
        if self.how != CALIBRATED or self.calibration is None or self.calibration.answerability is None:
            return None
        return Answerability.from_dict(self.calibration.answerability)

    @property
    def table_cut(self) -> float | None:
        """The calibrated cut for table chunks, unless ``--cut`` overrides the gate or the index holds none."""
        if self.how != CALIBRATED or self.calibration is None:
            return None
        return self.calibration.table_cut

    def answerability_for(self, reranker: str) -> Answerability | None:
        """The calibrated score if it was fitted on ``reranker``'s scores (another's are on another scale)."""
        scored = self.answerability
        return scored if scored is not None and scored.reranker == reranker else None

    def to_dict(self) -> dict:
        return {"cut": self.cut, "table_cut": self.table_cut, "how": self.how,
                "calibration": None if self.calibration is None else asdict(self.calibration)}

    def line(self) -> str:
        if self.calibration is not None and self.how == CALIBRATED:
            return f"gate: {self.calibration.line()}"
        if self.how == OVERRIDE:
            return f"gate: cut {self.cut:.3f} given with --cut"
        return (f"gate: cut {self.cut:.3f} from the hand-fitted table (legacy: this index is not "
                "calibrated; `citeline calibrate` measures its own)")


def stored_calibration(source, stamp) -> Calibration | None:
    """The active table's calibration, if one is stored and was measured with ``stamp``'s model.

    ``source``: a Store (read now) or a Searcher (read once, for its table).
    """
    raw = source.calibration()
    if raw is None:
        return None
    found = Calibration.from_json(raw)
    return found if found.model == stamp.embed_model else None


# A calibration measured on a much smaller (or larger) index is measured again: its
# pseudo-questions no longer sample what the index holds.
GROWTH = 2.0


def needs_calibration(calibrated_rows: int | None, rows: int) -> bool:
    """Whether an index of ``rows`` chunks, calibrated at ``calibrated_rows`` (None: never), needs it (again).

    >>> needs_calibration(None, 10), needs_calibration(100, 150), needs_calibration(100, 250), needs_calibration(None, 0)
    (True, False, True, False)
    """
    if rows == 0:
        return False
    return not calibrated_rows or max(rows / calibrated_rows, calibrated_rows / rows) > GROWTH


def calibration_due(store, stamp) -> bool:
    """Whether the index's gate must be measured (again): no calibration stored for ``stamp``'s
    model, one measured under another rule version, or on an index more than :data:`GROWTH`
    times smaller or larger than it is now."""
    found = stored_calibration(store, stamp)
    if found is not None and found.version != CALIBRATION_VERSION:
        return True
    return needs_calibration(found and found.chunks, store.count_chunks())


def cut_in_use(source, stamp, override: float | None = None) -> CutInUse:
    """The cut for ``ask``: ``override``, else the index's calibration (``source``: a Store or a
    Searcher, see :func:`stored_calibration`), else the legacy table.

    Raises:
        Uncalibrated: no override, no calibration and no legacy cut for the model.
    """
    if override is not None:
        return CutInUse(override, OVERRIDE)
    if (found := stored_calibration(source, stamp)) is not None:
        return CutInUse(found.cut, CALIBRATED, found)
    if (legacy := COSINE_CUTS.get(stamp.embed_model)) is not None:
        return CutInUse(legacy, LEGACY)
    err = Uncalibrated(f"the index's refusal gate is not calibrated for {stamp.embed_model!r}")
    err.add_note("Help: run `citeline calibrate` (it measures the cut from the index itself, in seconds), "
                 "or pass --cut X.")
    raise err
