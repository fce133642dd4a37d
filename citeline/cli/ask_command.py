"""``citeline ask``: sources and prompt for a question, or a refusal; optionally a checked answer.

The orchestration lives in query/ask.py; this module parses options and prints.
Register it with ``cli.add_command(ask)``.
"""
from __future__ import annotations

import json

import click

from citeline.cli.common import (CitelineCommand, best_line, cli_errors, db_option, filter_options,
                                 model_option, output_options, served_by)
from citeline.schemas.retrieval import (
    ASK_K, CLOSEST_NOTE, DEFAULT_RERANK, DEFAULT_RETRIEVER, ENV_RERANKER, RERANK, RETRIEVERS,
)
from citeline.schemas.text import visible, visible_lines



@click.command("ask", cls=CitelineCommand)
@click.argument("query")
@db_option
@model_option
@click.option("-k", default=ASK_K, show_default=True, type=click.IntRange(1, 20),
              help="At most this many sources pass the gate; the rest of the first k are shown as closest passages.")
@click.option("--retriever", default=DEFAULT_RETRIEVER, show_default=True, type=click.Choice(RETRIEVERS),
              help=f"rerank = MaxSim over the {DEFAULT_RERANK.candidates} top {DEFAULT_RERANK.depth} "
                   "(best R@1/MRR on dev; see docs/query.md).")
@click.option("--rerank", "rerank_flag", is_flag=True,
              help=f"Rerank the top {DEFAULT_RERANK.depth} of --retriever (implied by --retriever rerank).")
@click.option("--reranker", envvar=ENV_RERANKER, default="maxsim", show_default=True,
              help="maxsim (no extra weights), cross-encoder, or a CrossEncoder folder / cached model name "
                   f"[env {ENV_RERANKER}].")
@click.option("--cosine-weight", type=click.FloatRange(0, 1), default=None,
              help="Mix the z-scored cosine into the rerank order with this weight "
                   f"(default {DEFAULT_RERANK.cosine_weight:g}; 0: rerank score only).")
@click.option("--cut", type=click.FloatRange(0, 2), default=None,
              help="Cosine-distance cut: sources must be strictly under it (default: calibrated for the model).")
@click.option("--min-rerank-score", type=float, default=None,
              help="Also require a rerank score strictly over this (only when reranking).")
@click.option("--name-check/--no-name-check", "check_names", default=True, show_default=True,
              help="Refuse a question that names something no passage mentions (GRU, cargo-nextest), "
                   "whatever the distances.")
@click.option("--generate", is_flag=True,
              help="Send the prompt to CITELINE_LLM_URL / CITELINE_LLM_MODEL and check the answer's citations.")
@click.option("--prompt", "show_prompt", is_flag=True,
              help="Also print the prompt a model would get (with --generate it is sent, not printed).")
@click.option("--local", is_flag=True,
              help="Answer in this process even when a `citeline api` on this machine serves the index "
                   "(by default the question is sent there: no model to load).")
@filter_options
@output_options
def ask(query, db, model, as_json, k, retriever, rerank_flag, reranker, cosine_weight, cut, min_rerank_score,
        check_names, generate, show_prompt, local, filters):
    """Answer QUERY from the index with numbered, located sources, or refuse.

    Prints each source that passes the gate with its locator and, in full, the line of it that
    best matches the question, then the closest passages that did not pass; --prompt adds the
    prompt a model would get. When no source passes the gate it prints NO ANSWER and exits 0:
    refusing is an answer.
    """
    reranking = rerank_flag or retriever == RERANK
    if not query.strip():
        raise click.UsageError("QUERY is empty")
    if min_rerank_score is not None and not reranking:
        raise click.UsageError("--min-rerank-score needs reranking: add --rerank or use --retriever rerank")
    # What a service answers as this process would: its own model and reranker, no generation here.
    served = not (local or generate or model or min_rerank_score is not None or cosine_weight is not None
                  or reranker != "maxsim")
    service = served_by(db) if served else None
    data = None
    if service is not None:
        from citeline.runtime.running_service import request_filters

        try:
            data = service.ask({"query": query, "k": k, "retriever": retriever, "rerank": rerank_flag, "cut": cut,
                                "check_names": check_names, **request_filters(filters)})
        except OSError:  # gone since its /health, or it refused the request: this process says why
            data = None
    if data is not None:
        from citeline.schemas.retrieval import Answer  # the records only: no index, no model

        answer = Answer.from_dict(data)
        if as_json:
            click.echo(json.dumps(data, indent=2))
        else:
            _print(answer, False, show_prompt)
        return
    from citeline.library import Index
    from citeline.pipeline.embed import ModelNotFound

    with cli_errors():
        try:
            answer = Index(db, model, warm=False).ask(
                query, generate=generate, filters=filters, reranker=reranker if reranking else None,
                cosine_weight=cosine_weight, k=k, retriever=retriever, rerank=rerank_flag, cut=cut,
                min_rerank_score=min_rerank_score, check_names=check_names)
        except ModelNotFound as exc:
            raise click.UsageError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(answer.to_dict(), indent=2))  # \uXXXX: no raw U+202E or C1 reaches a terminal
    else:
        _print(answer, generate, show_prompt)


def _print(answer, generated: bool, show_prompt: bool = False) -> None:
    if answer.refused:
        click.echo(answer.refusal.message())
        if answer.closest:
            click.echo(f"\nNOT AN ANSWER: {CLOSEST_NOTE}")
            _print_sources(answer.closest)
        return
    click.echo(f"SOURCES ({len(answer.citations)} under cosine distance {answer.threshold:g})")
    _print_sources(answer.citations)
    if answer.closest:
        click.echo(f"\nNOT AN ANSWER: {CLOSEST_NOTE}")
        _print_sources(answer.closest)
    if not generated:
        if show_prompt:
            click.echo("\nPROMPT")
            click.echo("\n".join(visible_lines(answer.prompt)), nl=False)
        return
    click.echo("\nANSWER")
    click.echo("\n".join(visible_lines(answer.answer)))
    check = answer.check
    if check.unknown:
        click.echo(f"\nREMOVED citations of sources that do not exist: {', '.join(f'[{n}]' for n in check.unknown)}")
    for sentence in check.uncited:
        click.echo(f"UNCITED: {visible(sentence)}")
    if check.ok:
        click.echo("\nevery sentence cites a source that exists")


def _print_sources(citations) -> None:
    """Each citation's header line, then the line of its quote that best matches the question, whole."""
    for c in citations:
        rerank = "" if c.rerank_score is None else f"  rerank {c.rerank_score:.3f}"
        distance = "" if c.distance is None else f"  distance {c.distance:.3f}"
        click.echo(f"[{c.index}] {visible(c.document)}  {visible(c.label)}  {visible(c.fragment)}{distance}{rerank}")
        click.echo(best_line(c))
