"""Retrieval per document format: one Markdown corpus rendered as PDF, scan, Word, HTML, speech.

``citeline eval CORPUS --formats md,pdf,scan,docx,html,speech`` renders every document
into each format (:mod:`evaluation.render`), indexes each rendering with the product's
own pipeline and runs the same questions over it (:mod:`evaluation.harness`, with the
needle rule of :mod:`evaluation.match`). Because the needles and the questions are the
same, every format is compared with the Markdown original query by query: an exact sign
test on R@20 and on the reciprocal rank (MRR), per strategy and retriever.

Citations are checked per format on the chunks that hold a needle: a PDF chunk's pages
must hold the needle in the PDF's own text layer; a scan chunk's pages must hold it in
the text layer of the PDF the scan was made from (up to OCR noise, the speech word rule);
a transcript chunk's ``#t=`` span must overlap the time at which the needle's block was
spoken (known exactly: :func:`evaluation.render.render_speech` synthesises block by block).
"""
from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from citeline.evaluation.dataset import DOCS, Corpus
from citeline.evaluation.harness import EvalConfig, load_embedder, run_evaluation, workspace
from citeline.evaluation.match import contains, normalise, speech_contains
from citeline.evaluation.plots import FORMAT_RECALL, format_recall
from citeline.evaluation.render import FORMATS, Rendered, Spoken, render_corpus, render_pdf, require_programs
from citeline.evaluation.report import compare
from citeline.index.store import Store
from citeline.query.cite import parse_locators
from citeline.schemas.locator import Page, TimeSpan

BASELINE = "md"
# The least per-document timeout a rendering gets: a chapter read aloud runs 20-40 minutes and
# Whisper needs a while; a scanned chapter of 30-odd pages is OCR'd page by page, twice where
# Tesseract's layout drops lines (minutes on a busy 2-core machine).
FORMAT_TIMEOUT_S = {"speech": 3600.0, "scan": 1800.0}
PARITY_METRICS = ("R@20", "MRR")
RENDERED = "rendered.json"  # beside the rendered docs/: marks a finished rendering, holds speech spans


@dataclass(frozen=True)
class CitationCheck:
    """Whether the chunks holding needles cite the place where the needle is."""

    checked: int
    correct: int
    wrong: tuple[str, ...]  # "<needle id>: <why>"


def parse_formats(value: str) -> tuple[str, ...]:
    """``"md,pdf"`` as a tuple of known formats, the baseline first.

    >>> parse_formats("pdf,md")
    ('md', 'pdf')
    >>> parse_formats("pdf")
    ('md', 'pdf')
    """
    wanted = [f.strip() for f in value.split(",") if f.strip()]
    unknown = [f for f in wanted if f not in FORMATS]
    if unknown or not wanted:
        raise ValueError(f"unknown formats {unknown}; choose from {', '.join(FORMATS)}")
    return (BASELINE,) + tuple(f for f in dict.fromkeys(wanted) if f != BASELINE)


def rendered_corpus(corpus: Corpus, fmt: str, root: Path) -> tuple[Corpus, list[Rendered]]:
    """``corpus`` with its documents rendered as ``fmt`` under ``root/<fmt>/docs``.

    A finished rendering of the same documents is reused (speech takes minutes to
    synthesise); an unfinished one (no ``rendered.json``), or one of other documents (the
    corpus narrowed with ``--documents``), is redone from scratch.
    """
    folder = root / fmt
    marker = folder / RENDERED
    done = _finished_rendering(marker)
    if [r.source for r in done] != [name for name, _ in corpus.documents]:
        marker.unlink(missing_ok=True)
        shutil.rmtree(folder / DOCS, ignore_errors=True)  # an index of the folder would keep the others
        done = render_corpus(fmt, corpus.documents, folder / DOCS)
        marker.write_text(json.dumps([{"source": r.source, "path": str(r.path),
                                       "spans": [asdict(s) for s in r.spans]} for r in done]))
    return replace(corpus, root=folder), done


def _finished_rendering(marker: Path) -> list[Rendered]:
    if not marker.exists():
        return []
    return [Rendered(d["source"], Path(d["path"]), tuple(Spoken(**s) for s in d["spans"]))
            for d in json.loads(marker.read_text())]


def run_formats(corpus: Corpus, formats: Sequence[str], config: EvalConfig = EvalConfig(), *,
                db_dir: str | Path | None = None, embedder=None, progress=None) -> dict:
    """Evaluate every format of ``formats`` (the baseline first) and compare each with it.

    Returns:
        ``{"formats": {fmt: results document}, "parity": [comparison...],
        "citations": {fmt: CitationCheck as dict}, "timings": {fmt: {"render_s"}}}``.
    """
    formats = parse_formats(",".join(formats))  # the baseline first, always
    require_programs(formats)
    embedder = embedder or load_embedder(config)
    results: dict[str, dict] = {}
    citations: dict[str, dict] = {}
    render_s: dict[str, float] = {}
    with workspace(db_dir) as root:
        for fmt in formats:
            started = time.perf_counter()
            rendered, files = rendered_corpus(corpus, fmt, root / "render")
            render_s[fmt] = round(time.perf_counter() - started, 1)
            fmt_config = replace(config, format=fmt,
                                 timeout_s=max(config.timeout_s, FORMAT_TIMEOUT_S.get(fmt, 0.0)))
            results[fmt] = run_evaluation(rendered, fmt_config, db_dir=root / "index" / fmt,
                                          embedder=embedder, progress=progress)
            checks = [check_citations(fmt, corpus, files, root / "index" / fmt / s) for s in config.strategies]
            citations[fmt] = asdict(_merge(checks))
    return {
        "formats": results,
        "parity": parity(results),
        "citations": citations,
        "timings": {fmt: {"render_s": render_s[fmt], "eval_s": results[fmt]["timings"]["total_s"]}
                    for fmt in formats},
    }


def parity(results: dict[str, dict], metrics: Sequence[str] = PARITY_METRICS) -> list[dict]:
    """Each format against the baseline, run by run (same strategy and retriever), per metric."""
    base = {(r["strategy"], r["retriever"]): r for r in results[BASELINE]["runs"]}
    found = []
    for fmt, result in results.items():
        if fmt == BASELINE:
            continue
        for run in result["runs"]:
            twin = base.get((run["strategy"], run["retriever"]))
            if twin is None:
                continue
            for metric in metrics:
                c = compare(run, twin, metric)
                found.append({**c, "format": fmt, "a": f"{fmt} {c['a']}", "b": f"{BASELINE} {c['b']}"})
    return found


def check_citations(fmt: str, corpus: Corpus, files: Sequence[Rendered], uri: Path) -> CitationCheck:
    """Check the locator of every chunk that holds a needle against where the needle really is."""
    if fmt not in ("pdf", "scan", "speech"):
        return CitationCheck(0, 0, ())
    by_stem = {Path(r.path).name: r for r in files}
    rows = Store(str(uri)).chunk_rows(["path", "content", "locators"])
    rule = speech_contains if fmt in ("scan", "speech") else contains
    pages_cache: dict[str, list[str]] = {}
    checked, wrong = 0, []
    for needle in corpus.needles:
        for row in rows:
            if not rule(needle.needle, row["content"]):
                continue
            rendered = by_stem.get(Path(row["path"]).name)
            if rendered is None:
                continue
            checked += 1
            locators = parse_locators(row["locators"] or "")
            why = (_time_wrong(needle.needle, locators, rendered) if fmt == "speech"
                   else _page_wrong(needle.needle, locators, rendered, corpus, fmt, pages_cache, rule))
            if why:
                wrong.append(f"{needle.id}: {why}")
    return CitationCheck(checked, checked - len(wrong), tuple(wrong))


def _page_wrong(needle: str, locators, rendered: Rendered, corpus: Corpus, fmt: str,
                cache: dict[str, list[str]], rule) -> str | None:
    pages = [loc.page for loc in locators if isinstance(loc, Page)]
    if not pages:
        return "no page locator"
    texts = cache.get(rendered.source)
    if texts is None:
        texts = cache[rendered.source] = _page_texts(rendered, corpus, fmt)
    cited = [texts[p - 1] for p in range(min(pages), max(pages) + 1) if 0 < p <= len(texts)]
    if rule(needle, " ".join(cited)) or any(_runs_over(needle, a, b, rule) for a, b in zip(cited, cited[1:])):
        return None
    return f"not on the cited pages {min(pages)}-{max(pages)}"


def _runs_over(needle: str, page: str, next_page: str, rule) -> bool:
    """Whether the needle starts on ``page`` and ends on ``next_page``: a page's text layer
    holds its running header and number, so the two halves are not adjacent in the pages' text."""
    words = needle.split()
    return any(rule(" ".join(words[:i]), page) and rule(" ".join(words[i:]), next_page) for i in range(1, len(words)))


def _page_texts(rendered: Rendered, corpus: Corpus, fmt: str) -> list[str]:
    """The text layer of each page: of the PDF itself, or of the PDF a scan was made from."""
    import pymupdf

    if fmt == "pdf":
        data = rendered.path.read_bytes()
    else:  # a scan has no text layer; its pages are those of the same deterministic PDF
        order = [name for name, _ in corpus.documents]
        index = order.index(rendered.source)
        data = render_pdf(rendered.source, dict(corpus.documents)[rendered.source], columns=2 if index % 2 else 1)
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        return [normalise(page.get_text()) for page in doc]


def _time_wrong(needle: str, locators, rendered: Rendered) -> str | None:
    spans = [loc for loc in locators if isinstance(loc, TimeSpan)]
    if not spans:
        return "no time locator"
    start, end = spans[0].start, max(s.end for s in spans)
    said = [s for s in rendered.spans if speech_contains(needle, s.text)]
    if not said:
        return "needle block not found in the rendering"
    if any(s.start < end and start < s.end for s in said):
        return None
    return f"cited {start:.1f}-{end:.1f} s, spoken at {said[0].start:.1f}-{said[0].end:.1f} s"


def _merge(checks: Sequence[CitationCheck]) -> CitationCheck:
    return CitationCheck(sum(c.checked for c in checks), sum(c.correct for c in checks),
                         tuple(w for c in checks for w in c.wrong))


# ---- the report ------------------------------------------------------------------------


def write(doc: dict, out_dir: str | Path) -> Path:
    """``formats.json`` and ``formats.md`` into ``out_dir``; returns the report's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "formats.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    format_recall(doc, out / FORMAT_RECALL, BASELINE)
    report = out / "formats.md"
    report.write_text(render(doc))
    return report


def render(doc: dict) -> str:
    """The per-format report: retrieval table, parity sign tests, gate, citations, timings."""
    lines = ["# Retrieval per format", "",
             "Every document of the corpus rendered into each format, indexed and asked the same",
             "questions. R@k and MRR over all in-domain queries (course and ticket phrasing), then",
             "per phrasing; destroyed = needles no chunk contains (by the format's needle rule).", "",
             f"![Recall@k per format]({FORMAT_RECALL})", "",
             "| format | strategy/retriever | R@1 | R@4 | R@8 | R@20 | MRR | course R@20 | ticket R@20 | destroyed |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for fmt, result in doc["formats"].items():
        for run in result["runs"]:
            rec, by = run["recall"], run["by_phrasing"]
            lines.append(
                f"| {fmt} | {run['strategy']}/{run['retriever']} | "
                + " | ".join(_num(rec.get(k)) for k in ("1", "4", "8", "20"))
                + f" | {_num(run['mrr'])} | {_num(by.get('course', {}).get('recall', {}).get('20'))}"
                + f" | {_num(by.get('ticket', {}).get('recall', {}).get('20'))} | {run['destroyed']} |")
    lines += _honest_rows(doc)
    lines += ["", "## Parity with Markdown (exact sign test, same queries)", "",
              "| format | run | metric | wins | losses | ties | p | separated |", "|---|---|---|---|---|---|---|---|"]
    for c in doc["parity"]:
        run = c["a"].split(" ", 1)[1]
        lines.append(f"| {c['format']} | {run} | {c['metric']} | {c['wins']} | {c['losses']} | {c['ties']} | "
                     f"{c['p']:.4g} | {'yes' if c['separates'] else 'no'} |")
    lines += ["", "## The refusal gate per format (cosine, best cut by the evaluation's rule)", "",
              "| format | run | cut | bluffs | lost | refused in-domain | worst answer | best out-of-domain |",
              "|---|---|---|---|---|---|---|---|"]
    for fmt, result in doc["formats"].items():
        for g in result["gate_summary"]:
            if g["kind"] != "cosine" or g.get("cut") is None:
                continue
            lines.append(f"| {fmt} | {g['strategy']}/{g['retriever']} | {g['cut']:.3f} | {g['bluffs']}/{g['ood']} | "
                         f"{g['lost']}/{g['answerable']} | {g['refused_in_domain']}/{g['in_domain']} | "
                         f"{_num(g['worst_in_domain'])} | {_num(g['best_ood'])} |")
    lines += ["", "## Citations", "",
              "Every chunk holding a needle: is the needle where its locator points?", "",
              "| format | checked | correct | wrong |", "|---|---|---|---|"]
    for fmt, c in doc["citations"].items():
        if c["checked"]:
            wrong = "; ".join(c["wrong"][:5]) + (" …" if len(c["wrong"]) > 5 else "")
            lines.append(f"| {fmt} | {c['checked']} | {c['correct']} | {wrong or '—'} |")
    lines += ["", "## Timings", "", "| format | render s | evaluation s |", "|---|---|---|"]
    for fmt, t in doc["timings"].items():
        lines.append(f"| {fmt} | {t['render_s']} | {t['eval_s']} |")
    return "\n".join(lines) + "\n"


def _honest_rows(doc: dict) -> list[str]:
    """What ``ask`` returns per format and phrasing (the gate and window of each format's run)."""
    entries = [(fmt, e) for fmt, result in doc["formats"].items() for e in result.get("answered_honestly", [])]
    if not entries:
        return []
    lines = ["", "## Answered honestly per format", "",
             "An in-domain question is answered when a chunk holding its needle passes `ask`'s gate",
             "(see report.md of an ordinary run); lost = found in the window but cut by the gate.", "",
             "| format | strategy/retriever | course answered | ticket answered | all answered | lost | bluffs |",
             "|---|---|---|---|---|---|---|"]
    for fmt, e in entries:
        by, a = e["by_phrasing"], e["all"]
        lines.append(f"| {fmt} | {e['strategy']}/{e['retriever']} | {_share(by.get('course'))} | "
                     f"{_share(by.get('ticket'))} | {_share(a)} | {a['lost']}/{a['found']} | {a['bluffs']}/{a['ood']} |")
    return lines


def _share(tally: dict | None) -> str:
    return "—" if tally is None else f"{tally['answered']}/{tally['queries']}"


def _num(value) -> str:
    return "—" if value is None else f"{value:.3f}"
