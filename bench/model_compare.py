"""Two `citeline eval` runs of different models, paired query by query, per phrasing.

    .venv/bin/citeline eval CORPUS --strategies E --model all-MiniLM-L6-v2 --out A
    .venv/bin/citeline eval CORPUS --strategies E --model all-mpnet-base-v2 --timeout 3000 --out B
    .venv/bin/python bench/model_compare.py A/results.json B/results.json
    .venv/bin/python bench/model_compare.py --smoke

``--smoke`` (tests/flows/test_bench_smoke.py): A and B are the evaluations of a tiny corpus
(bench/smokekit.py) with the tests' two fake embedders: runs, no figure.

For every (strategy, retriever) both runs hold, and for each phrasing (course: the
textbook's words; ticket: a user's) and both together: R@1, R@20, MRR and answered (the needle cited after the run's own gate: "answered
honestly") of each run, and
the exact sign test of B against A on the same queries (``evaluation.report.compare``;
wins are queries where B did better). Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from citeline.evaluation.report import compare

PHRASINGS = ("course", "ticket", "all")
METRICS = ("R@1", "R@20", "MRR", "answered")  # answered: the needle cited after each model's own gate


def subset(run: dict, phrasing: str) -> dict:
    queries = [q for q in run["per_query"] if phrasing == "all" or q["phrasing"] == phrasing]
    return {"strategy": run["strategy"], "retriever": run["retriever"], "per_query": queries}


def value(run: dict, metric: str) -> float:
    queries = run["per_query"]
    if metric == "MRR":
        return sum(q["rr"] for q in queries) / len(queries)
    if metric == "answered":
        return sum(q["answered"] for q in queries) / len(queries)
    k = int(metric[2:])
    return sum(q["rank"] is not None and q["rank"] <= k for q in queries) / len(queries)


def rows(a: dict, b: dict) -> list[str]:
    runs_b = {(r["strategy"], r["retriever"]): r for r in b["runs"]}
    out = []
    for run_a in a["runs"]:
        run_b = runs_b.get((run_a["strategy"], run_a["retriever"]))
        if run_b is None:
            continue
        for phrasing in PHRASINGS:
            sa, sb = subset(run_a, phrasing), subset(run_b, phrasing)
            cells = []
            for metric in METRICS:
                test = compare(sb, sa, metric)
                cells.append(f"{value(sa, metric):.3f} → {value(sb, metric):.3f} "
                             f"(+{test['wins']}/−{test['losses']}, p={test['p']:.3f})")
            out.append(f"| {run_a['strategy']}/{run_a['retriever']} | {phrasing} ({len(sa['per_query'])}) | "
                       + " | ".join(cells) + " |")
    return out


def bluffs(results: dict, run: dict) -> str:
    same = [r for r in results["answered_honestly"]
            if (r["strategy"], r["retriever"]) == (run["strategy"], run["retriever"])]
    return f"{same[0]['all']['bluffs']}/{same[0]['all']['ood']}" if same else "-"


def gate(results: dict) -> str:
    rec = results.get("recommended") or {}
    if not rec:
        return "no recommended cut"
    return (f"cut {rec['cut']} ({rec['strategy']}/{rec['retriever']}): {rec['bluffs']}/{rec['ood']} bluffs, "
            f"{rec['lost']}/{rec['answerable']} lost")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, nargs="?", help="results.json of the baseline model")
    parser.add_argument("b", type=Path, nargs="?", help="results.json of the other model")
    parser.add_argument("--smoke", action="store_true", help="two fake-embedder evaluations of a tiny corpus")
    args = parser.parse_args()
    if args.smoke:
        import smokekit

        with smokekit.fake_models():
            args.a, args.b = smokekit.eval_results(smokekit.FAKE), smokekit.eval_results(smokekit.SECOND_FAKE)
    if args.b is None:
        parser.error("give both results.json")
    a, b = (json.loads(p.read_text()) for p in (args.a, args.b))
    print(f"A = {a['config']['model']} ({a['config']['precision']}); B = {b['config']['model']} "
          f"({b['config']['precision']}); cells: A → B (B's wins/losses, sign-test p)\n")
    print("| run | phrasing (queries) | " + " | ".join(METRICS) + " |")
    print("|---|---|" + "---|" * len(METRICS))
    print("\n".join(rows(a, b)))
    print(f"\nbluffs (out-of-domain questions answered) at each model's own cut: "
          + "; ".join(f"{run['strategy']}/{run['retriever']} A {bluffs(a, run)} → B {bluffs(b, run)}"
                      for run in a["answered_honestly"]))
    print(f"\nrecommended gate: A {gate(a)}; B {gate(b)}")
    print(f"total time: A {a['timings'].get('total_s', 0):.0f} s, B {b['timings'].get('total_s', 0):.0f} s")


if __name__ == "__main__":
    main()
