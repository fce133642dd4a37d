"""A real folder, as a person keeps it: every file's outcome, and questions in a person's words.

    .venv/bin/python bench/real_folder.py FOLDER --db DB [--questions FILE] [--index]

``--index`` first runs ``citeline index FOLDER --db DB`` in a fresh process (the real model unless
``--model``) and times it; otherwise DB must already index FOLDER. Then it prints, as Markdown:

- every file of the folder with its stored outcome (indexed with its chunk count, skipped as not a
  document with the kind, failed with the reason), or "not seen";
- for each question of ``--questions`` (JSON lines: ``q``, ``files``, ``needle``, ``format``;
  default bench/data/real_folder_questions.jsonl, 30 questions), the rank of the first
  search hit (default retriever, top 10) from one of ``files`` whose quote holds ``needle``
  (whitespace-insensitive), its locator, and whether ``ask`` passes that chunk as a source.

``--smoke`` (tests/flows/test_bench_smoke.py): bench/smokekit.py's tiny corpus and index on the fake
embedder, one question.

The questions were written from the files' text, one per file or format, before any was asked; they
are a measurement, not a target.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "data" / "real_folder_questions.jsonl"


def squeeze(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def outcomes(index, folder: Path) -> list[tuple[str, str, str]]:
    """(path, outcome, detail) for every file under ``folder``, as the index recorded it."""
    stored = {d.path: d for d in index.documents()}
    rows = []
    for path in sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()):
        doc = stored.get(path)
        if doc is None:
            rows.append((path, "not seen", ""))
        elif doc.status == "indexed":
            rows.append((path, "indexed", f"{doc.chunk_count} chunks"))
        else:
            rows.append((path, doc.status, (doc.reason or "").replace("|", "\\|")[:120]))
    return rows


def asked(index, question: dict) -> dict:
    needle, files = squeeze(question["needle"]), set(question["files"])
    hits = index.search(question["q"], k=10)
    rank = next((k for k, c in enumerate(hits, 1) if c.path in files and needle in squeeze(c.quote)), None)
    found = hits[rank - 1] if rank else None
    answer = index.ask(question["q"])
    sourced = next((c.index for c in answer.citations if c.path in files and needle in squeeze(c.quote)), None)
    return {"q": question["q"], "format": question["format"], "rank": rank,
            "where": f"{found.path}{found.fragment}" if found else "",
            "answered": sourced, "refused": answer.refused}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?")
    parser.add_argument("--db")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--index", action="store_true", help="index the folder first (a fresh process, timed)")
    parser.add_argument("--model", default=None)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        import tempfile

        import smokekit

        with smokekit.fake_models(), tempfile.TemporaryDirectory() as tmp:
            args.folder, args.db = smokekit.tiny_corpus() / "docs", smokekit.tiny_index()
            args.questions = Path(tmp) / "questions.jsonl"
            args.questions.write_text(json.dumps({"q": "Why does dropout only apply during training?",
                                                  "files": ["04-dropout.md"], "needle": "dropout", "format": "md"}))
            report(args)
        return
    if args.folder is None or args.db is None:
        parser.error("FOLDER and --db are required (or --smoke)")
    if args.index:
        started = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "citeline", "index", str(args.folder), "--db", args.db,
                              "--no-progress", *(["--model", args.model] if args.model else [])],
                             capture_output=True, text=True)
        print(f"# citeline index: exit {run.returncode} in {time.perf_counter() - started:.0f} s; "
              f"load {os.getloadavg()[0]:.1f}\n\n{run.stdout.strip()}\n")
    report(args)


def report(args) -> None:
    from citeline.library import Index

    index = Index.open(args.db, args.model)
    rows = outcomes(index, args.folder)
    counts: dict[str, int] = {}
    for _, outcome, _ in rows:
        counts[outcome] = counts.get(outcome, 0) + 1
    print("| file | outcome | detail |\n|---|---|---|")
    for path, outcome, detail in rows:
        print(f"| `{path}` | {outcome} | {detail} |")
    print("\n" + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + f" of {len(rows)} files\n")
    questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    results = [asked(index, q) for q in questions]
    print("| # | format | question | search rank (top 10) | where | ask: source [n] |\n|---|---|---|---|---|---|")
    for k, r in enumerate(results, 1):
        source = f"[{r['answered']}]" if r["answered"] else ("refused" if r["refused"] else "not among sources")
        print(f"| {k} | {r['format']} | {r['q']} | {r['rank'] or '—'} | `{r['where']}` | {source} |")
    top1 = sum(r["rank"] == 1 for r in results)
    top10 = sum(r["rank"] is not None for r in results)
    sourced = sum(bool(r["answered"]) for r in results)
    print(f"\nfound at rank 1: {top1}/{len(results)}; in the top 10: {top10}/{len(results)}; "
          f"cited by ask: {sourced}/{len(results)}")


if __name__ == "__main__":
    main()
