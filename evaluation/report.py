"""The results document (``results.json``) and its readable form (``report.md``).

:func:`summarize` turns per-query outcomes into metrics, intervals, paired tests and
the refusal frontier; :func:`render` writes them as Markdown tables, with one plain
sentence per comparison; :func:`write` puts both, and the plots, in a folder.
Everything except ``timings`` depends only on the per-query outcomes.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from citeline.evaluation import gate as gates
from citeline.evaluation.dataset import PHRASINGS, Corpus
from citeline.evaluation.honest import Outcome, by_phrasing, tally
from citeline.evaluation.metrics import hits_at, mrr, recall_at, reciprocal_rank
from citeline.evaluation.stats import paired, wilson
from citeline.query.thresholds import GateQuery, sweep
from citeline.schemas.retrieval import BM25, COSINE, DENSE, HYBRID, RERANK
from citeline.schemas.settings import DEFAULT_STRATEGY

SCHEMA_VERSION = 1
ALPHA = 0.05  # a comparison "separates" two systems when the sign test's p is below this
PRIMARY_STRATEGY = DEFAULT_STRATEGY  # the index command's
STRATEGY_PAIRS = (("B", "A"), ("D", "C"), ("E", "A"), ("E", "C"), ("F", "E"))
STRATEGY_METRICS = ("R@8", "R@20")
RETRIEVER_PAIRS = (
    (HYBRID, DENSE, ("R@4",)),
    (HYBRID, BM25, ("R@4",)),
    (RERANK, HYBRID, ("R@1", "MRR")),
    (RERANK, DENSE, ("R@1", "R@20", "MRR", "answered")),
)
# A rerank configuration run beside the default ("rerank[dense@50]") is compared with it on
# these, over all queries and per phrasing, and with dense on R@20.
VARIANT_METRICS = ("R@1", "R@20", "MRR", "answered")
RESULTS = "results.json"
REPORT = "report.md"


# ---- the results document -------------------------------------------------------------


def summarize(corpus: Corpus, config, costs: Mapping, runs: Sequence, retrievers: Sequence[str],
              skipped: Mapping[str, str]) -> dict:
    """Assemble the results document from index costs and per-query outcomes.

    Args:
        corpus: the evaluated corpus.
        config: the ``EvalConfig`` used.
        costs: ``{strategy: IndexCost}``.
        runs: one ``Run`` per strategy and retriever, in evaluation order.
        retrievers: the retrievers that ran.
        skipped: ``{retriever: reason}`` for defaults that could not run.

    Returns:
        A JSON-ready dict: ``corpus``, ``config``, ``skipped``, ``index``, ``runs``,
        ``comparisons``, ``gate``, ``gate_summary``, ``recommended``, ``recommended_cut``,
        ``answered_honestly`` (the headline: see :func:`answered_honestly`) and ``timings``
        (the only part that varies between identical runs).
    """
    index = [_index_entry(costs[s], len(corpus.needles)) for s in config.strategies if s in costs]
    run_entries = [_run_entry(run, costs[run.strategy], config) for run in runs]
    gate, summary = _gates(runs, config)
    recommended = _recommended(summary, config.strategies, retrievers)
    return {
        "schema": SCHEMA_VERSION,
        "corpus": corpus.counts(),
        "config": {**config.to_dict(), "retrievers": list(retrievers)},
        "skipped": [{"retriever": name, "reason": why} for name, why in sorted(skipped.items())],
        "index": index,
        "runs": run_entries,
        "comparisons": comparisons(run_entries),
        "gate": gate,
        "gate_summary": summary,
        "recommended": recommended,
        "recommended_cut": recommended["cut"] if recommended else None,
        "answered_honestly": [entry for run in runs if (entry := answered_honestly(run)) is not None],
        "timings": {
            "index_s": {c.strategy: round(c.seconds, 1) for c in costs.values()},
            "query_ms": {f"{r.strategy}/{r.retriever}": round(1000 * r.seconds / _searches(r), 1) for r in runs},
        },
    }


def answered_honestly(run) -> dict | None:
    """What ``ask`` returns on this run, counted per phrasing (see :mod:`evaluation.honest`).

    None when the run carries no gate outcome (no cut is known for the model).
    """
    if any(q.kept is None for q in [*run.queries, *run.ood]):
        return None
    outcomes = [Outcome(q.phrasing, q.in_domain, tuple(q.top_relevant), tuple(q.kept))
                for q in [*run.queries, *run.ood]]
    return {
        "strategy": run.strategy, "retriever": run.retriever,
        "all": tally(outcomes).to_dict(),
        "by_phrasing": {p: h.to_dict() for p, h in by_phrasing(outcomes, PHRASINGS).items()},
    }


def _searches(run) -> int:
    return max(1, len(run.queries) + len(run.ood))


def _index_entry(cost, needles: int) -> dict:
    lost = len(cost.destroyed)
    return {
        "strategy": cost.strategy,
        "chunks": cost.chunks,
        "tokens": cost.tokens,
        "header_tokens": cost.header_tokens,
        "header_share": _round(cost.header_tokens / cost.tokens if cost.tokens else 0.0),
        "truncated": cost.truncated,
        "max_tokens": cost.max_tokens,
        "destroyed": lost,
        "destroyed_ci": _ci(lost, needles),
        "destroyed_needles": list(cost.destroyed),
    }


def _run_entry(run, cost, config) -> dict:
    ranks = [q.rank for q in run.queries]
    entry = {
        "strategy": run.strategy,
        "retriever": run.retriever,
        **_metrics(ranks, config.ks),
        "destroyed": len(cost.destroyed),
        "destroyed_ci": _ci(len(cost.destroyed), len({q.id.split(":")[0] for q in run.queries})),
        "needles": len({q.id.split(":")[0] for q in run.queries}),
        "queries": len(ranks),
        "by_phrasing": {
            p: {"queries": sum(q.phrasing == p for q in run.queries),
                **_metrics([q.rank for q in run.queries if q.phrasing == p], config.ks)}
            for p in PHRASINGS if any(q.phrasing == p for q in run.queries)
        },
        "per_query": [_query_entry(q) for q in run.queries],
        "ood": [_query_entry(q) for q in run.ood],
    }
    return entry


def _metrics(ranks: list, ks: Sequence[int]) -> dict:
    n = len(ranks)
    return {
        "recall": {str(k): _round(recall_at(ranks, k)) for k in ks},
        "recall_ci": {str(k): _ci(sum(hits_at(ranks, k)), n) for k in ks},
        "mrr": _round(mrr(ranks)),
    }


def _query_entry(q) -> dict:
    entry = {"id": q.id, "phrasing" if q.in_domain else "kind": q.phrasing}
    if q.in_domain:
        entry.update(needle=q.id.split(":")[0], rank=q.rank, rr=_round(reciprocal_rank(q.rank)),
                     distance=_round(q.distance))
    entry.update(top_distances=[_round(d) for d in q.top_distances], top_relevant=list(q.top_relevant))
    if q.kept is not None:  # what ask returns: the needle among its sources, or anything at all out of domain
        entry["answered" if q.in_domain else "bluff"] = any(q.kept) if q.in_domain else bool(q.kept)
    if q.top_scores is not None:
        entry["top_scores"] = [_round(s) for s in q.top_scores]
    if q.unmentioned:
        entry["unmentioned"] = list(q.unmentioned)
    return entry


def _ci(successes: int, n: int) -> list[float]:
    return [_round(x) for x in wilson(successes, n)]


def _round(value: float | None, digits: int = 6) -> float | None:
    if value is None or math.isnan(value):
        return None
    return round(float(value), digits)


# ---- paired comparisons ------------------------------------------------------------------


def per_query(run: dict, metric: str, phrasing: str | None = None) -> list[float]:
    """Per-query values of ``metric`` ("R@k" hit 1/0, "MRR": the reciprocal rank, or
    "answered": 1 when ``ask`` cites the needle after its gate), of one phrasing or all.

    >>> per_query({"per_query": [{"rank": 2, "rr": 0.5}, {"rank": None, "rr": 0.0}]}, "R@4")
    [1, 0]
    """
    queries = [q for q in run["per_query"] if phrasing is None or q["phrasing"] == phrasing]
    if metric == "MRR":
        return [q["rr"] for q in queries]
    if metric == "answered":
        return [int(q["answered"]) for q in queries]
    if not metric.startswith("R@"):
        raise ValueError(f"unknown metric {metric!r}; use 'R@k', 'MRR' or 'answered'")
    return hits_at([q["rank"] for q in queries], int(metric[2:]))


def compare(a: dict, b: dict, metric: str, phrasing: str | None = None) -> dict:
    """The exact sign test of run ``a`` against run ``b`` on the same queries (of one phrasing, if given).

    Returns:
        ``{"a", "b", "metric", "wins", "losses", "ties", "p", "separates"}``; ``a`` and
        ``b`` are ``"strategy/retriever"`` labels, wins count queries where a did better;
        ``metric`` names the phrasing too, e.g. "R@20 ticket".

    Raises:
        ValueError: the runs did not answer the same queries.
    """
    if [q["id"] for q in a["per_query"]] != [q["id"] for q in b["per_query"]]:
        raise ValueError(f"{_label(a)} and {_label(b)} did not answer the same queries")
    mine, theirs = per_query(a, metric, phrasing), per_query(b, metric, phrasing)
    result = paired(mine, theirs)
    return {
        "a": _label(a), "b": _label(b), "metric": metric if phrasing is None else f"{metric} {phrasing}",
        "wins": result.wins, "losses": result.losses,
        "ties": len(mine) - result.wins - result.losses,
        "p": _round(result.p), "separates": result.p < ALPHA,
    }


def comparisons(runs: Sequence[dict]) -> list[dict]:
    """The standing comparisons, for every pair of runs present.

    Strategies are compared under the same retriever (:data:`STRATEGY_PAIRS` at
    :data:`STRATEGY_METRICS`); retrievers under the same strategy (:data:`RETRIEVER_PAIRS`).
    """
    by = {(r["strategy"], r["retriever"]): r for r in runs}
    strategies = list(dict.fromkeys(r["strategy"] for r in runs))
    retrievers = list(dict.fromkeys(r["retriever"] for r in runs))
    found = []
    for retriever in retrievers:
        for a, b in STRATEGY_PAIRS:
            if (a, retriever) in by and (b, retriever) in by:
                found += [compare(by[a, retriever], by[b, retriever], m) for m in STRATEGY_METRICS]
    for strategy in strategies:
        for a, b, metrics in RETRIEVER_PAIRS:
            if (strategy, a) in by and (strategy, b) in by:
                found += [compare(by[strategy, a], by[strategy, b], m) for m in metrics if _has(by[strategy, a], m)]
        for variant in (r for r in retrievers if is_variant(r) and (strategy, r) in by):
            found += _variant_comparisons(by, strategy, variant)
    return found


def is_variant(retriever: str) -> bool:
    """A rerank configuration run beside the default, e.g. "rerank[union@50]"."""
    return retriever.startswith(f"{RERANK}[")


def _variant_comparisons(by: Mapping, strategy: str, variant: str) -> list[dict]:
    mine, found = by[strategy, variant], []
    if (strategy, RERANK) in by:
        default = by[strategy, RERANK]
        for metric in (m for m in VARIANT_METRICS if _has(mine, m)):
            found.append(compare(mine, default, metric))
            found += [compare(mine, default, metric, p) for p in PHRASINGS]
    if (strategy, DENSE) in by:
        found.append(compare(mine, by[strategy, DENSE], "R@20"))
    return found


def _has(run: dict, metric: str) -> bool:
    """Whether the run carries the metric's per-query values ("answered" needs a cut)."""
    return metric != "answered" or all("answered" in q for q in run["per_query"])


def _label(run: dict) -> str:
    return f"{run['strategy']}/{run['retriever']}"


def sentence(c: dict) -> str:
    """One plain sentence saying whether the evidence separates the two.

    >>> sentence({"a": "E/dense", "b": "A/dense", "metric": "R@20", "wins": 18, "losses": 3,
    ...           "ties": 43, "p": 0.0015, "separates": True})
    'E/dense vs A/dense at R@20: +18/-3 (43 ties), p = 0.0015: the evidence separates them; E/dense is better.'
    """
    head = f"{c['a']} vs {c['b']} at {c['metric']}: +{c['wins']}/-{c['losses']} ({c['ties']} ties), p = {_p(c['p'])}"
    if c["separates"]:
        better = c["a"] if c["wins"] > c["losses"] else c["b"]
        return f"{head}: the evidence separates them; {better} is better."
    if c["wins"] + c["losses"] == 0:
        return f"{head}: they answer every query alike; nothing to separate."
    return f"{head}: not distinguishable on these queries (p >= {ALPHA})."


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"


# ---- the refusal gate ------------------------------------------------------------------


def gate_queries(run, values: str = "top_distances") -> list[GateQuery]:
    """The gate's view of a run's queries, in-domain then out-of-domain."""
    attr = "top_scores" if values == "top_scores" else "top_distances"
    return [
        GateQuery(tuple(getattr(q, attr)), tuple(q.top_relevant), q.in_domain)
        for q in [*run.queries, *run.ood]
    ]


def _gates(runs: Sequence, config) -> tuple[list[dict], list[dict]]:
    points, summary = [], []
    for run in runs:
        kinds = []
        cosine = gate_queries(run)
        # BM25 rows carry no distance: a cosine gate over them would refuse everything.
        if any(not math.isnan(v) for q in cosine for v in q.values):
            kinds.append((COSINE, cosine, list(config.cosine_cuts)))
        if all(q.top_scores is not None for q in [*run.queries, *run.ood]):
            scored = gate_queries(run, "top_scores")
            kinds.append((RERANK, scored, gates.score_grid(v for q in scored for v in q.values)))
        for kind, queries, cuts in kinds:
            frontier = sweep(queries, cuts, kind, config.window)
            points += [{"strategy": run.strategy, "retriever": run.retriever, **p.to_dict()} for p in frontier]
            summary.append(_gate_summary(run, kind, queries, frontier, config.window))
    return points, summary


def _gate_summary(run, kind: str, queries, frontier, window: int) -> dict:
    worst = gates.worst_answer(queries, kind, window)
    best = gates.best_ood(queries, kind, window)
    chosen = gates.recommend(frontier)
    return {
        "strategy": run.strategy, "retriever": run.retriever, "kind": kind,
        "worst_in_domain": _round(worst), "best_ood": _round(best),
        "separable": gates.separable(worst, best, kind),
        "cut": chosen.cut if chosen else None,
        **({k: getattr(chosen, k) for k in ("bluffs", "ood", "lost", "answerable", "refused_in_domain",
                                            "in_domain")} if chosen else {}),
    }


def _recommended(summary: list[dict], strategies: Sequence[str], retrievers: Sequence[str]) -> dict | None:
    """The cosine cut for the default strategy (E) under dense, else the first run present."""
    cosine = [s for s in summary if s["kind"] == COSINE]
    if not cosine:
        return None
    strategy = PRIMARY_STRATEGY if PRIMARY_STRATEGY in strategies else strategies[0]
    retriever = DENSE if DENSE in retrievers else retrievers[0]
    chosen = next((s for s in cosine if (s["strategy"], s["retriever"]) == (strategy, retriever)), cosine[0])
    return {**chosen, "rule": gates.RULE}


# ---- files -------------------------------------------------------------------------------


def write(results: dict, out_dir: str | Path, plots: bool = True) -> Path:
    """Write ``results.json``, the plots and ``report.md`` into ``out_dir``; return the report path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / RESULTS).write_text(dumps(results) + "\n", encoding="utf-8")
    images = []
    if plots:
        from citeline.evaluation.plots import write_plots

        images = write_plots(results, out)
    report = out / REPORT
    report.write_text(render(results, images), encoding="utf-8")
    return report


def dumps(results: dict) -> str:
    """JSON with sorted keys and two-space indent; each query, comparison and gate point on one line."""
    records: list[str] = []

    def mark(record: dict) -> str:
        records.append(json.dumps(record, sort_keys=True, allow_nan=False))
        return f"@@record:{len(records) - 1}@@"

    folded = {**results, "runs": [
        {**run, "per_query": [mark(q) for q in run["per_query"]], "ood": [mark(q) for q in run["ood"]]}
        for run in results["runs"]
    ]}
    for key in ("comparisons", "gate"):
        folded[key] = [mark(item) for item in results.get(key, [])]
    text = json.dumps(folded, indent=2, sort_keys=True, allow_nan=False)
    return re.sub(r'"@@record:(\d+)@@"', lambda m: records[int(m.group(1))], text)


# ---- Markdown ----------------------------------------------------------------------------


def render(results: dict, images: Sequence[str] = ()) -> str:
    """The report: every table readable on its own, with intervals, p-values and verdicts."""
    sections = [
        _intro(results), _honest_section(results), _cost_table(results), _recall_table(results),
        _phrasing_table(results), _variant_section(results), _comparison_section(results),
        _gate_section(results), _images(images), _timings(results),
    ]
    return "\n\n".join(s for s in sections if s) + "\n"


def _intro(r: dict) -> str:
    c, cfg = r["corpus"], r["config"]
    lines = [
        f"# Retrieval evaluation: `{c['name']}`",
        "",
        f"{c['documents']} documents ({c['characters']:,} characters); {c['needles']} needles asked in two "
        f"phrasings ({c['queries']} queries); {c['ood']} out-of-domain queries "
        f"({c['ood_kinds'].get('adjacent', 0)} adjacent, {c['ood_kinds'].get('absurd', 0)} absurd).",
        "",
        f"Model `{cfg['model']}` ({cfg['precision']}); chunk budget {cfg['budget']} characters, overlap "
        f"{cfg['overlap']}; strategies {', '.join(cfg['strategies'])}; retrievers {', '.join(cfg['retrievers'])}; "
        f"depth {cfg['depth']}{_reranker(cfg)}. A query is answered at rank r when the r-th chunk's `content` contains the whole "
        f"needle (whitespace collapsed); MRR counts 0 beyond rank {cfg['depth']}. Intervals are Wilson 95%; "
        f"comparisons are exact two-sided sign tests on the discordant queries (separated when p < {ALPHA}).",
    ]
    for s in r["skipped"]:
        lines += ["", f"Not run: **{s['retriever']}** ({s['reason']})."]
    return "\n".join(lines)


def _reranker(cfg: dict) -> str:
    name = cfg.get("reranker")
    return f"; rerank = {name}" if name else ""


def _cost_table(r: dict) -> str:
    rows = ["## Index cost and answers destroyed by chunking", "",
            "| strategy | chunks | embedding tokens | header tokens (share) | over the encoder window | "
            "destroyed [95% CI] | index time |",
            "|---|---:|---:|---:|---:|---|---:|"]
    for e in r["index"]:
        seconds = r["timings"].get("index_s", {}).get(e["strategy"])
        rows.append(
            f"| {e['strategy']} | {e['chunks']} | {e['tokens']:,} | {e['header_tokens']:,} ({100 * e['header_share']:.1f}%) "
            f"| {e['truncated']} (> {e['max_tokens']}) | {e['destroyed']} of {r['corpus']['needles']} {_interval(e['destroyed_ci'])} "
            f"| {'' if seconds is None else f'{seconds:.1f} s'} |")
    rows += ["", "Destroyed: needles that no chunk contains whole, so no retriever can find them (recall "
             "ceiling 0). Chunks over the window are embedded truncated: their tails are invisible to dense search."]
    lost = [f"{e['strategy']}: {', '.join(e['destroyed_needles'])}" for e in r["index"] if e["destroyed_needles"]]
    if lost:
        rows += ["", "Destroyed needles — " + "; ".join(lost) + "."]
    return "\n".join(rows)


def _recall_table(r: dict) -> str:
    ks = [str(k) for k in r["config"]["ks"]]
    head = "| strategy | retriever | " + " | ".join(f"R@{k} [95% CI]" for k in ks) + " | MRR | destroyed |"
    rows = ["## Recall@k and MRR (all queries)", "", head, "|---|---|" + "---|" * len(ks) + "---:|---:|"]
    for run in r["runs"]:
        cells = [f"{run['recall'][k]:.3f} {_interval(run['recall_ci'][k])}" for k in ks]
        rows.append(f"| {run['strategy']} | {run['retriever']} | " + " | ".join(cells)
                    + f" | {run['mrr']:.3f} | {run['destroyed']} |")
    return "\n".join(rows)


def _phrasing_table(r: dict) -> str:
    ks = [str(k) for k in r["config"]["ks"]]
    first, last = ks[0], ks[-1]
    head = "| strategy | retriever | " + " | ".join(
        f"{p} R@{first} | {p} R@{last} | {p} MRR" for p in PHRASINGS) + " |"
    rows = ["## By phrasing (course: textbook wording; ticket: a user's wording)", "", head,
            "|---|---|" + "---:|" * (3 * len(PHRASINGS))]
    for run in r["runs"]:
        cells = []
        for p in PHRASINGS:
            m = run["by_phrasing"].get(p)
            cells += [f"{m['recall'][first]:.3f}", f"{m['recall'][last]:.3f}", f"{m['mrr']:.3f}"] if m else ["", "", ""]
        rows.append(f"| {run['strategy']} | {run['retriever']} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _honest_section(r: dict) -> str:
    entries = r.get("answered_honestly") or []
    if not entries:
        return ("## Answered honestly\n\nNot measured: no refusal cut is known for this model "
                "(pass --cut, as ask needs one).")
    cfg = r["config"]
    cut = f"cosine cut {cfg['cut']} (--cut)" if cfg.get("cut") is not None else "the cut ask uses for this model"
    # Older results carry no check_names: they were measured before the check existed.
    names = ("a question naming what no passage mentions refused (query/unmentioned.py)" if cfg.get("check_names")
             else "no name check (--no-name-check)")
    phrasings = [p for p in PHRASINGS if any(p in e["by_phrasing"] for e in entries)]
    head = ("| strategy | retriever | " + " | ".join(f"{p} answered" for p in phrasings)
            + " | " + " | ".join(f"{p} within reach" for p in phrasings)
            + " | all answered | refused in-domain | lost (of found in top " + str(cfg["gate_window"])
            + ") | bluffs |")
    rows = ["## Answered honestly", "",
            f"What `citeline ask` returns: the same retrieval, {cut}, {names}, and k = {cfg['gate_window']}. "
            "**Answered**: an "
            "in-domain question whose sources after the gate include a chunk holding the needle. **Refused**: "
            "nothing passed. **Lost**: the needle was in the top k but the gate cut it. **Within reach**: the "
            "needle is among the sources or the closest passages `ask` shows beside them or instead of them (the "
            "rest of its top k, marked as not an answer). **Bluffs**: out-of-domain questions with any source "
            "passing.", "",
            head, "|---|---|" + "---:|" * (2 * len(phrasings) + 4)]
    for e in entries:
        cells = [_share(e["by_phrasing"][p]) if p in e["by_phrasing"] else "" for p in phrasings]
        cells += [_reach(e["by_phrasing"][p]) if p in e["by_phrasing"] else "" for p in phrasings]
        a = e["all"]
        rows.append(f"| {e['strategy']} | {e['retriever']} | " + " | ".join(cells)
                    + f" | {_share(a)} | {a['refused']}/{a['queries']} | {a['lost']}/{a['found']} "
                    f"| {a['bluffs']}/{a['ood']} |")
    return "\n".join(rows)


def _share(h: dict) -> str:
    return f"{h['share']:.3f} ({h['answered']}/{h['queries']})"


def _reach(h: dict) -> str:
    return f"{h.get('within_reach', 0)}/{h['queries']}"


def _variant_section(r: dict) -> str:
    variants = [run for run in r["runs"] if is_variant(run["retriever"])]
    if not variants:
        return ""
    honest = {(e["strategy"], e["retriever"]): e for e in r.get("answered_honestly", [])}
    tests = {(c["a"], c["b"], c["metric"]): c for c in r["comparisons"]}
    top = "20" if "20" in variants[0]["recall"] else str(r["config"]["ks"][-1])
    rows = ["## Rerank configurations", "",
            f"The default `rerank` is `{r['config'].get('rerank_default', '')}`; each row reranks another "
            "candidate list (`LIST[*dense weight]@N[+cos mix weight]`) with the same MaxSim. "
            "Sign tests against the default (+wins/-losses, p) and, for R@20, against dense.", "",
            f"| strategy | configuration | R@1 | R@{top} | MRR | course answered | ticket answered | bluffs "
            "| R@1 vs default | R@20 vs default | MRR vs default | answered vs default | ticket answered vs default "
            "| R@20 vs dense |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|---|---|---|---|---|"]
    for run in [x for x in r["runs"] if x["retriever"] == RERANK] + variants:
        label, h = _label(run), honest.get((run["strategy"], run["retriever"]))
        phr = h["by_phrasing"] if h else {}
        bluffs = f"{h['all']['bluffs']}/{h['all']['ood']}" if h else ""
        default = f"{run['strategy']}/{RERANK}"
        cells = [_test(tests.get((label, default, m))) for m in ("R@1", "R@20", "MRR", "answered", "answered ticket")]
        cells.append(_test(tests.get((label, f"{run['strategy']}/{DENSE}", "R@20"))))
        rows.append(f"| {run['strategy']} | {run['retriever']} | {run['recall'].get('1', float('nan')):.3f} "
                    f"| {run['recall'][top]:.3f} | {run['mrr']:.3f} "
                    f"| {_share(phr['course']) if 'course' in phr else ''} "
                    f"| {_share(phr['ticket']) if 'ticket' in phr else ''} "
                    f"| {bluffs} | "
                    + " | ".join(cells) + " |")
    return "\n".join(rows)


def _test(c: dict | None) -> str:
    return "" if c is None else f"+{c['wins']}/-{c['losses']} p={_p(c['p'])}"


def _comparison_section(r: dict) -> str:
    plain = [c for c in r["comparisons"] if not is_variant(c["a"].split("/", 1)[1])]
    if not plain:
        return ""
    rows = ["## Paired comparisons (exact sign test)", "",
            "| A | B | metric | A wins | B wins | ties | p | separated? |", "|---|---|---|---:|---:|---:|---:|---|"]
    for c in plain:
        rows.append(f"| {c['a']} | {c['b']} | {c['metric']} | {c['wins']} | {c['losses']} | {c['ties']} "
                    f"| {_p(c['p'])} | {'yes' if c['separates'] else 'no'} |")
    rows += [""] + [f"- {sentence(c)}" for c in plain]
    return "\n".join(rows)


def _gate_section(r: dict) -> str:
    rec = r["recommended"]
    if not rec:
        return ""
    window = r["config"]["gate_window"]
    rows = [
        "## Refusal gate", "",
        f"The gate keeps at most {window} chunks of the retriever's list, only those under the cut (cosine "
        "distance `d < cut`; rerank score `s > cut`), and refuses when none pass. **Bluffs**: out-of-domain "
        f"queries with a chunk passing. **Lost**: in-domain queries whose answer is in the top {window} without "
        "a gate but filtered out by it. **Refused**: in-domain queries with nothing passing.", "",
        f"Recommended default: **cosine cut {rec['cut']}** (from {rec['strategy']}/{rec['retriever']}; rule: "
        f"{rec['rule']}). There {rec['bluffs']} of {rec['ood']} out-of-domain queries bluff, {rec['lost']} of "
        f"{rec['answerable']} answers found in the top {window} are lost, and {rec['refused_in_domain']} of "
        f"{rec['in_domain']} in-domain queries are refused.", "",
        _separation(rec), "",
        f"### Frontier for {rec['strategy']}/{rec['retriever']} (cosine)", "",
        "| cut | bluffs | lost | refused in-domain |", "|---:|---:|---:|---:|",
    ]
    for p in r["gate"]:
        if (p["strategy"], p["retriever"], p["kind"]) == (rec["strategy"], rec["retriever"], "cosine"):
            mark = " **←**" if p["cut"] == rec["cut"] else ""
            rows.append(f"| {p['cut']:.3f}{mark} | {p['bluffs']}/{p['ood']} | {p['lost']}/{p['answerable']} "
                        f"| {p['refused_in_domain']}/{p['in_domain']} |")
    rows += ["", "### Every strategy and retriever", "",
             "| strategy | retriever | gate | worst in-domain answer | best out-of-domain hit | one cut separates? "
             "| best cut | bluffs | lost |",
             "|---|---|---|---:|---:|---|---:|---:|---:|"]
    for s in r["gate_summary"]:
        rows.append(f"| {s['strategy']} | {s['retriever']} | {s['kind']} | {_num(s['worst_in_domain'])} "
                    f"| {_num(s['best_ood'])} | {'yes' if s['separable'] else 'no'} | {_num(s['cut'])} "
                    f"| {s.get('bluffs', '')}/{s.get('ood', '')} | {s.get('lost', '')}/{s.get('answerable', '')} |")
    return "\n".join(rows)


def _separation(rec: dict) -> str:
    worst, best = rec["worst_in_domain"], rec["best_ood"]
    if worst is None or best is None:
        return "Not enough answered or out-of-domain queries to compare distances."
    if rec["separable"]:
        return (f"The worst answered in-domain query sits at distance {worst:.3f}, closer than the best "
                f"out-of-domain hit ({best:.3f}): a cut between them separates the two groups on this corpus.")
    return (f"The worst answered in-domain query is further from its answer ({worst:.3f}) than the best "
            f"out-of-domain query from an irrelevant chunk ({best:.3f}): no single cosine cut separates them; "
            "where to cut is a product decision.")


def _images(images: Sequence[str]) -> str:
    if not images:
        return ""
    return "## Plots\n\n" + "\n\n".join(f"![{Path(i).stem}]({i})" for i in images)


def _timings(r: dict) -> str:
    t = r["timings"]
    lines = ["## Timings (vary between runs; not part of the compared results)", ""]
    if "total_s" in t:
        lines.append(f"Total wall time {t['total_s']:.1f} s.")
    if t.get("query_ms"):
        lines += ["", "Each question is embedded once, in the first strategy's dense run, and reused; MaxSim "
                  "word-piece vectors are computed once per chunk and question.",
                  "", "| run | ms per query |", "|---|---:|"]
        lines += [f"| {k} | {v:.1f} |" for k, v in t["query_ms"].items()]
    return "\n".join(lines)


def _interval(ci: Sequence[float]) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _num(value) -> str:
    return "" if value is None else f"{value:.3f}"
