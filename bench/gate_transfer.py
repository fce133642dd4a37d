"""Does a gate fitted on one corpus hold on another? Each rule fitted on A, applied unchanged to B.

    .venv/bin/python bench/gate_transfer.py NAME=RESULTS.json NAME=RESULTS.json [--bluffs 2]
    .venv/bin/python bench/gate_transfer.py --smoke

``--smoke`` (tests/flows/test_bench_smoke.py) first runs the evaluation on a tiny corpus (bench/smokekit.py)
with the tests' two fake embedders and reads those two results.json as the two corpora: runs, no figure.

Each RESULTS.json is ``citeline eval CORPUS --strategies E --retrievers dense,rerank --out DIR``'s
results.json (per query: the top 4 with distances, relevance and, for rerank, MaxSim scores). A
rule has one threshold; "fitted on A" is the loosest threshold that lets at most ``--bluffs`` of A's
out-of-domain questions through, the seed's plain method's own fitting. For every ordered pair
(A, B) and every rule it prints what ``ask`` would give a person on B: course and ticket questions
answered (the needle among the sources after the gate), within reach (among the sources, or among
the closest passages a refusal shows), bluffs, and the paired sign test of answered against the
plain method fitted on the other corpus. The calibrated gate the evaluation ran with (labels never seen) is listed too;
its "within reach" counts the needle anywhere in the top 4, so it can exceed the report's by the questions
answered without the needle while the gate cut it (the report's number is exact).

Rules:
- plain: dense top 4, a source passes under the cosine cut (the seed's method);
- source-cos: the default rerank's top 4, a source passes under the cosine cut (today's shape);
- question-cos: the rerank top 4 all cited when its nearest source is under the cut;
- question-maxsim: the rerank top 4 all cited when its best MaxSim score is over the cut.
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass

from citeline.evaluation.stats import sign_test

WINDOW = 4
PHRASINGS = ("course", "ticket")


@dataclass(frozen=True)
class Question:
    id: str
    phrasing: str  # course, ticket, or the out-of-domain kind
    in_domain: bool
    values: tuple[float, ...]  # what the rule reads, per source of the top window
    relevant: tuple[bool, ...]


@dataclass(frozen=True)
class Rule:
    name: str
    retriever: str
    per_source: bool  # gate each source (True) or the question by its best source (False)
    higher_passes: bool  # MaxSim scores pass over the cut, distances under it
    field: str

    def kept(self, q: Question, cut: float) -> tuple[bool, ...]:
        passes = [(v > cut) if self.higher_passes else (v < cut) for v in q.values]
        if self.per_source:
            return tuple(r for r, ok in zip(q.relevant, passes) if ok)
        return q.relevant if any(passes) else ()

    def questions(self, results: dict) -> list[Question]:
        run = next(r for r in results["runs"] if r["strategy"] == "E" and r["retriever"] == self.retriever)
        out = []
        for entry, in_domain in [*((q, True) for q in run["per_query"]), *((q, False) for q in run["ood"])]:
            values = tuple(entry[self.field][:WINDOW])
            out.append(Question(entry["id"], entry["phrasing"] if in_domain else entry["kind"], in_domain,
                                values, tuple(entry["top_relevant"][:WINDOW])))
        return out

    def fit(self, questions: list[Question], bluffs: int) -> float:
        """The loosest cut with at most ``bluffs`` out-of-domain questions let through."""
        values = sorted({v for q in questions for v in q.values if not math.isnan(v)})
        cuts = [(a + b) / 2 for a, b in zip(values, values[1:])]
        cuts = [values[0] - 1e-6, *cuts, values[-1] + 1e-6]
        ok = [c for c in cuts if sum(bool(self.kept(q, c)) for q in questions if not q.in_domain) <= bluffs]
        return (min(ok) if self.higher_passes else max(ok)) if ok else math.nan


RULES = (
    Rule("plain", "dense", True, False, "top_distances"),
    Rule("source-cos", "rerank", True, False, "top_distances"),
    Rule("question-cos", "rerank", False, False, "top_distances"),
    Rule("question-maxsim", "rerank", False, True, "top_scores"),
)


def outcome(rule: Rule, questions: list[Question], cut: float) -> dict:
    per = {}
    for q in questions:
        kept = rule.kept(q, cut)
        answered = q.in_domain and any(kept)
        reach = answered or (q.in_domain and not kept and any(q.relevant))
        per[q.id] = (q.phrasing, q.in_domain, answered, reach, bool(kept))
    return per


def calibrated(results: dict) -> dict:
    """What the evaluation's own run (the calibrated gate, default rerank) gave per question."""
    run = next(r for r in results["runs"] if r["strategy"] == "E" and r["retriever"] == "rerank")
    per = {}
    for q in run["per_query"]:
        if "answered" in q:
            reach = q["answered"] or any(q["top_relevant"][:WINDOW])  # refused or answered: top 4 shown
            per[q["id"]] = (q["phrasing"], True, q["answered"], reach, None)
    for q in run["ood"]:
        if "bluff" in q:
            per[q["id"]] = (q["kind"], False, False, False, q["bluff"])
    return per


def summary(per: dict) -> dict:
    row = {}
    for p in PHRASINGS:
        inside = [v for v in per.values() if v[1] and v[0] == p]
        row[p] = (sum(v[2] for v in inside), sum(v[3] for v in inside), len(inside))
    outside = [v for v in per.values() if not v[1]]
    row["bluffs"] = (sum(bool(v[4]) for v in outside), len(outside))
    return row


def versus(per: dict, base: dict, phrasing: str) -> str:
    ids = [i for i, v in per.items() if v[1] and v[0] == phrasing and i in base]
    wins = sum(per[i][2] and not base[i][2] for i in ids)
    losses = sum(base[i][2] and not per[i][2] for i in ids)
    return f"+{wins}/-{losses} p={sign_test(wins, losses):.2g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", help="NAME=results.json")
    parser.add_argument("--bluffs", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="two fake-embedder evaluations of a tiny corpus")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            args.runs = [f"{name}={smokekit.eval_results(name)}" for name in (smokekit.FAKE, smokekit.SECOND_FAKE)]
    if len(args.runs) < 1:
        parser.error("give NAME=results.json at least once")
    corpora = {name: json.load(open(path)) for name, path in (r.split("=", 1) for r in args.runs)}
    print("| fitted on | measured on | rule | cut | course answered | ticket answered | course within reach "
          "| ticket within reach | bluffs | course vs plain | ticket vs plain |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    for target, results in corpora.items():
        other = next((r for n, r in corpora.items() if n != target), results)
        plain_rule = RULES[0]
        plain = outcome(plain_rule, plain_rule.questions(results),
                        plain_rule.fit(plain_rule.questions(other), args.bluffs))
        for source, fitted in corpora.items():
            for rule in RULES:
                cut = rule.fit(rule.questions(fitted), args.bluffs)
                per = outcome(rule, rule.questions(results), cut)
                rows = summary(per)
                print(_row(source, target, rule.name, f"{cut:.3f}", rows, per, plain))
        per = calibrated(results)
        if per:
            print(_row("itself, no labels", target, "calibrated (default)", "", summary(per), per, plain))


def _row(source, target, name, cut, rows, per, plain) -> str:
    c, t, b = rows["course"], rows["ticket"], rows["bluffs"]
    tests = [versus(per, plain, p) for p in PHRASINGS]
    return (f"| {source} | {target} | {name} | {cut} | {c[0]}/{c[2]} | {t[0]}/{t[2]} | {c[1]}/{c[2]} "
            f"| {t[1]}/{t[2]} | {b[0]}/{b[1]} | {tests[0]} | {tests[1]} |")


if __name__ == "__main__":
    main()
