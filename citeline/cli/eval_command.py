"""``citeline eval``: measure every chunking strategy and retriever on a corpus with ground truth."""
from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from typing import Iterator

import click

from citeline.cli.common import CitelineCommand, known_model, output_options, verbosity
from citeline.schemas.settings import ENV_MODEL
from citeline.schemas.retrieval import RETRIEVERS
from citeline.schemas.settings import DEFAULT_MODEL, DEFAULT_STRATEGY, STRATEGIES, IndexSettings

_SETTINGS = IndexSettings()  # the indexing defaults, as `citeline index` reads them


def _letters(ctx, param, value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = _split(value, param)
    bad = [s for s in items if s.upper() not in STRATEGIES]
    if bad:
        raise click.BadParameter(f"unknown strategies {bad}; choose from {','.join(STRATEGIES)}", ctx, param)
    return tuple(dict.fromkeys(s.upper() for s in items))


def _retrievers(ctx, param, value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = [s.lower() for s in _split(value, param)]
    bad = [s for s in items if s not in RETRIEVERS]
    if bad:
        raise click.BadParameter(f"unknown retrievers {bad}; choose from {','.join(RETRIEVERS)}", ctx, param)
    return tuple(dict.fromkeys(items))


def _formats(ctx, param, value: str | None) -> tuple[str, ...] | None:
    from citeline.evaluation.formats import parse_formats

    if value is None:
        return None
    try:
        return parse_formats(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _ks(ctx, param, value: str) -> tuple[int, ...]:
    items = _split(value, param)
    try:
        ks = sorted({int(k) for k in items})
    except ValueError:
        raise click.BadParameter(f"cut-offs must be whole numbers, got {value!r}", ctx, param) from None
    if ks[0] < 1:
        raise click.BadParameter(f"cut-offs must be >= 1, got {value!r}", ctx, param)
    return tuple(ks)


def _rerank_configs(ctx, param, value: str | None):
    if not value:
        return ()
    from citeline.schemas.retrieval import RerankConfig

    try:
        return tuple(dict.fromkeys(RerankConfig.parse(spec) for spec in _split(value, param)))
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def _split(value: str, param) -> list[str]:
    items = [s.strip() for s in value.split(",") if s.strip()]
    if not items:
        raise click.BadParameter("give at least one value, comma-separated", param=param)
    return items


@click.command("eval", cls=CitelineCommand)
@click.argument("corpus_dir", type=click.Path(exists=True, file_okay=False, dir_okay=True))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder for report.md, results.json and the plots.")
@click.option("--strategies", default=None, callback=_letters,
              help=f"Chunking strategies to index, comma-separated [default: {','.join(STRATEGIES)}; "
                   f"with --formats, {DEFAULT_STRATEGY}, the one index uses, since every format is indexed "
                   "once per strategy].")
@click.option("--retrievers", default=None, callback=_retrievers,
              help=f"Retrievers, comma-separated from {','.join(RETRIEVERS)} "
                   "[default: all that work here; rerank is skipped with a note when unavailable].")
@click.option("--k", "ks", default="1,4,8,20", show_default=True, callback=_ks,
              help="Recall cut-offs, comma-separated (at most the depth, 20).")
@click.option("--db-dir", type=click.Path(file_okay=False),
              help="Keep the per-strategy indexes here (<DIR>/<strategy>) instead of a temporary folder.")
@click.option("--model", envvar=ENV_MODEL, default=DEFAULT_MODEL, show_default=True, callback=known_model,
              help="Embedding model: a packaged alias or a local sentence-transformers folder.")
@click.option("--precision", default=_SETTINGS.precision, show_default=True,
              type=click.Choice(["auto", "fp32", "bf16"]),
              help="Encoder precision; auto uses bf16 where the CPU has native support.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=_SETTINGS.timeout_s,
              show_default=True,
              help="Seconds one document may take to be read, chunked and embedded (as for index).")
@click.option("--cut", type=click.FloatRange(0, 2), default=None,
              help="The cosine cut for 'answered honestly' (default: the one ask uses for the model).")
@click.option("--answerability", is_flag=True,
              help="Calibrate each index with the answerability score, as `calibrate --answerability` does, "
                   "so rerank's 'answered honestly' is gated by it.")
@click.option("--name-check/--no-name-check", "check_names", default=True, show_default=True,
              help="Gate as ask does, refusing a question that names what no passage mentions; "
                   "--no-name-check measures the gate without it.")
@click.option("--rerank-configs", "rerank_configs", default=None, callback=_rerank_configs,
              help="More rerank configurations to run beside the default and compare with it, "
                   "comma-separated LIST[*W]@N[+cosW], e.g. dense@50,union@25,hybrid*2@50+cos0.25.")
@click.option("--formats", default=None, callback=_formats,
              help="Render every document into these formats (md,pdf,scan,docx,html,speech), evaluate each "
                   "and compare it with Markdown; writes formats.md and formats.json.")
@click.option("--documents", default=None, callback=lambda ctx, param, value: value and _split(value, param),
              help="Measure only these documents of the corpus (file names, comma-separated) and their "
                   "needles, e.g. to evaluate speech, which takes minutes per document.")
@click.option("--whisper-model", default="", type=click.Path(file_okay=False),
              help="Speech: the Whisper model to transcribe with, as for index (default: the packaged one).")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr.")
@output_options
def eval_command(corpus_dir, out_dir, strategies, retrievers, ks, db_dir, model, precision, timeout_s, cut,
                 answerability, check_names, rerank_configs, formats, documents, whisper_model, progress, as_json):
    """Index CORPUS_DIR once per strategy, run every retriever over its queries, and report.

    CORPUS_DIR holds docs/, ground_truth.jsonl and out_of_domain.jsonl. Writes
    report.md, results.json and PNG plots into --out. Identical inputs give
    identical numbers; only the timings differ between runs.
    """
    from citeline.evaluation.dataset import load_corpus
    from citeline.evaluation.harness import EvalConfig, EvalError, run_evaluation
    from citeline.evaluation.report import write
    from citeline.pipeline.embedder import ModelNotFound
    from citeline.schemas.errors import CitelineError

    if max(ks) > 20:
        raise click.UsageError(f"--k cut-offs must be at most the depth 20, got {max(ks)}")
    if strategies is None:
        strategies = (DEFAULT_STRATEGY,) if formats else STRATEGIES
    try:
        corpus = load_corpus(corpus_dir)
        if documents:
            corpus = corpus.only(documents)
        config = EvalConfig(strategies=strategies, retrievers=retrievers, ks=ks, model=model, precision=precision,
                            timeout_s=timeout_s, cut=cut, answerability=answerability,
                            check_names=check_names, rerank_variants=rerank_configs, whisper_model=whisper_model)
        with _bar(progress and verbosity() >= 0 and sys.stderr.isatty()) as bar:
            if formats:
                from citeline.evaluation.formats import run_formats, write as write_formats

                report = write_formats(run_formats(corpus, formats, config, db_dir=db_dir, progress=bar), out_dir)
                click.echo(json.dumps({"report": str(report)}) if as_json else f"wrote {report}")
                return
            results = run_evaluation(corpus, config, db_dir=db_dir, progress=bar)
    except (EvalError, CitelineError, ModelNotFound) as exc:  # ModelNotFound: e.g. --model's extra missing
        notes = "".join(f"\n{n}" for n in getattr(exc, "__notes__", []))
        raise click.ClickException(f"{exc}{notes}") from None
    report = write(results, out_dir)
    if as_json:
        click.echo(json.dumps({"report": str(report), "runs": results["runs"], "recommended": results["recommended"],
                               "skipped": results["skipped"]}, indent=2, default=str))
    else:
        _echo_summary(results, report)


def _echo_summary(results: dict, report) -> None:
    for note in results["skipped"]:
        click.echo(f"skipped {note['retriever']}: {note['reason']}")
    top = str(max(results["config"]["ks"]))
    for run in results["runs"]:
        click.echo(f"{run['strategy']}/{run['retriever']:<7} R@1 {run['recall'].get('1', float('nan')):.3f}  "
                   f"R@{top} {run['recall'][top]:.3f}  MRR {run['mrr']:.3f}  destroyed {run['destroyed']}")
    for e in results["answered_honestly"]:
        phrasings = "  ".join(f"{p} {h['answered']}/{h['queries']}" for p, h in e["by_phrasing"].items())
        click.echo(f"answered honestly {e['strategy']}/{e['retriever']}: {phrasings}  "
                   f"bluffs {e['all']['bluffs']}/{e['all']['ood']}")
    rec = results["recommended"]
    if rec:
        click.echo(f"recommended cosine cut {rec['cut']} ({rec['strategy']}/{rec['retriever']}): "
                   f"{rec['bluffs']}/{rec['ood']} bluffs, {rec['lost']}/{rec['answerable']} lost")
    click.echo(f"report: {report}  ({results['timings'].get('total_s', 0):.0f} s)")


class _RichProgress:
    """The harness's Progress, drawn by rich on stderr."""

    def __init__(self, progress):
        self.progress = progress
        self.task = progress.add_task("evaluating", total=None)

    def total(self, units: int) -> None:
        self.progress.update(self.task, total=units)

    def advance(self, description: str, units: int = 1) -> None:
        self.progress.update(self.task, advance=units, description=description[:40])


@contextmanager
def _bar(enabled: bool) -> Iterator[object | None]:
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True)) as progress:
        yield _RichProgress(progress)
