"""The citeline command line: parse, call one flow or function, print."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from dataclasses import asdict
from gc import freeze as freeze_objects
from pathlib import Path

import click

from citeline.cli.api_command import api
from citeline.cli.ask_command import ask
from citeline.cli.common import (CONTEXT_SETTINGS, EXIT_DELETIONS_HELD, EXIT_DOCUMENTS_FAILED, CitelineGroup, CliError,
                                 as_cli_error, best_line, cli_errors, db_option, error_text, filter_options,
                                 known_model, model_option, output_options, served_by, verbosity, wait_option,
                                 writable_db, writer_db_option)
from citeline.cli.eval_command import eval_command
from citeline.cli.server_command import server
from citeline.schemas.errors import CitelineError
from citeline.schemas.paths import absolute, escape, is_remote, os_path
from citeline.schemas.retrieval import DEFAULT_RERANK, DEFAULT_RETRIEVER, RETRIEVERS
from citeline.schemas.settings import ENV_MODEL, STRATEGIES, IndexSettings
from citeline.schemas.status import NOT_A_DOCUMENT, DocStatus
from citeline.schemas.text import visible, visible_lines

SETTINGS = IndexSettings()  # every indexing option's default, written once (schemas/settings.py)

@click.group(cls=CitelineGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="citeline")
def cli() -> None:
    """Index folders into LanceDB and search them with exact citations.

    Every option also reads CITELINE_<COMMAND>_<OPTION> (e.g. CITELINE_INDEX_STRATEGY=C);
    --db and --model read CITELINE_DB and CITELINE_MODEL. Exit codes: 0 fine, 1 error,
    2 bad arguments, 3 some documents failed, 4 a sync kept documents it could not tell
    were deleted (docs/usage.md, "Exit codes").
    """


class SourcePath(click.Path):
    """A local file or folder that must exist, or an object-storage URL (``s3://bucket/docs``)
    that must hold an object or a prefix of them."""

    def convert(self, value, param, ctx):
        if not (isinstance(value, str) and is_remote(value)):
            return super().convert(value, param, ctx)
        from citeline.pipeline.objects import exists  # fsspec: only when a URL is given

        if not exists(value):
            self.fail(f"{visible(value)!r}: no object and no prefix of objects there.", param, ctx)
        return value


@cli.command()
@click.argument("path", type=SourcePath(exists=True, file_okay=True, dir_okay=True))
@writer_db_option
@model_option
@click.option("--strategy", default=SETTINGS.strategy, show_default=True,
              type=click.Choice(STRATEGIES, case_sensitive=False),
              help="Chunking: A blind, B blind+overlap, C boundaries, D +overlap, E +header, F +header+overlap.")
@click.option("--budget", default=SETTINGS.budget, show_default=True, type=click.IntRange(min=32), help="Characters per chunk.")
@click.option("--overlap", default=SETTINGS.overlap, show_default=True, type=click.IntRange(min=0),
              help="Characters repeated from the previous chunk (B, D, F).")
@click.option("--precision", default=SETTINGS.precision, show_default=True, type=click.Choice(["auto", "fp32", "bf16"]),
              help="Encoder precision; auto uses bf16 where the CPU has native support.")
@click.option("--max-failed", type=click.IntRange(min=0), default=None,
              help="Fail the run when more documents than this fail (default: never).")
@click.option("--max-bytes", type=click.IntRange(min=1), default=SETTINGS.max_bytes, show_default=True,
              help="Larger files fail as too-large instead of being read.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=SETTINGS.timeout_s, show_default=True,
              help="Seconds one document may take to be read, extracted and chunked (an isolated "
                   "extractor is killed past it); embedding runs while it progresses, each group of "
                   "64 chunks within this limit.")
@click.option("--max-memory", "max_memory_bytes", type=click.IntRange(min=0), default=SETTINGS.max_memory_bytes,
              show_default=True,
              help="Bytes of memory one extraction worker may allocate (its writable memory, RLIMIT_DATA); a "
                   "document that needs more fails too-large and the worker is replaced. 0: no ceiling.")
@wait_option
@click.option("--ocr-lang", default=SETTINGS.ocr_lang, show_default=True,
              help="Tesseract language(s) for scans, e.g. eng or deu+eng (the traineddata must be installed), "
                   "or auto: each page's script by Tesseract's OSD, a Latin page's language by its words "
                   "(the notes say what was used).")
@click.option("--whisper-model", default="", type=click.Path(file_okay=False),
              help="A CTranslate2 Whisper model folder for audio/video, or base (the multilingual base of the "
                   "extra citeline[whisper-base]; default: packaged tiny.en).")
@click.option("--dask", default=None, metavar="ADDRESS",
              help="Prepare documents on the Dask cluster at ADDRESS ('local' starts a LocalCluster).")
@click.option("--token-vectors/--no-token-vectors", default=None,
              help="Store each chunk's word-piece vectors (int8, ~40 KiB per chunk, from the pass that embeds "
                   "it) so MaxSim reranking needs no forward pass per candidate [default: yes for a new index; "
                   "a sync keeps the index's choice]. --no-token-vectors drops them and stops storing them "
                   "(reranking then encodes candidates per question).")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr (a terminal only).")
@click.option("--include", multiple=True, metavar="GLOB",
              help="Index only files matching GLOB (gitignore syntax, relative to PATH); repeatable.")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Skip files and folders matching GLOB (gitignore syntax), after the defaults "
                   "(node_modules/, __pycache__/, venv/ …) and PATH/.citelineignore; repeatable. "
                   "Indexed files now excluded are forgotten.")
@click.option("--verify", is_flag=True,
              help="Hash every file, even those whose size and modification time are unchanged (by default an "
                   "unchanged size, modification time and inode skip a file unread).")
@click.option("--allow-mass-delete", is_flag=True,
              help="Forget the documents of vanished files even when PATH came up empty or more than half of "
                   "its documents would go (by default such a sync forgets nothing and exits 4).")
@click.option("--grace-days", type=click.FloatRange(min=0), default=SETTINGS.grace_days, show_default=True,
              help="A document whose file is gone is forgotten (never served) but its chunks are kept this "
                   "many days, so a file that comes back keeps their vectors (no re-embedding); the first "
                   "sync after that deletes them. 0 deletes them at once.")
@click.option("--always-run", is_flag=True,
              help="Start a Prefect flow run even when nothing changed (by default a sync that would write "
                   "nothing answers without one).")
@output_options
def index(path, db, model, strategy, budget, overlap, precision, max_failed, max_bytes, timeout_s, max_memory_bytes,
          wait_s, ocr_lang, whisper_model, dask, token_vectors, progress, include, exclude, verify, allow_mass_delete,
          grace_days, always_run, as_json):
    """Index (or re-sync) PATH: a folder or one file, local or on S3 (s3://bucket/prefix)."""
    if overlap >= budget:
        raise click.UsageError(f"--overlap ({overlap}) must be smaller than --budget ({budget})")
    from citeline.pipeline.walk import Selection, check_patterns

    try:
        check_patterns(Selection(tuple(include), tuple(exclude)))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    _check_ocr_lang(ocr_lang)
    from citeline.cli.progress import index_progress
    from citeline.runtime import temporary_server

    with _stops_on_signals(), index_progress(progress and verbosity() >= 0), cli_errors(db):
        temporary_server.start_early()  # done in main() for the console script; here for a CLI run in process
        from citeline.library import Index

        result = Index(db, model, warm=False).sync(
            path, max_failed=max_failed, wait_s=wait_s, verify=verify, allow_mass_delete=allow_mass_delete,
            include=include, exclude=exclude, dask=dask, always_run=always_run, return_result=True,
            strategy=strategy.upper(), budget=budget, overlap=overlap, precision=precision, max_bytes=max_bytes,
            timeout_s=timeout_s, max_memory_bytes=max_memory_bytes, ocr_lang=ocr_lang, whisper_model=whisper_model,
            token_vectors=token_vectors, grace_days=grace_days)
    _print_run(result, as_json)


def _run_report(state_name: str, summary) -> dict:
    """A run's ``--json`` report: its final state's name, its counts (and in words), its failures
    and the files it set aside as no documents."""
    counts = {k: v for k, v in asdict(summary).items() if k not in ("failures", "not_documents")}
    if not hasattr(summary, "words"):  # a re-index's summary: no files read, none set aside
        return {"state": state_name, "summary": counts, "failures": [asdict(f) for f in summary.failures]}
    return {"state": state_name, "summary": {**counts, "in_words": summary.words()},
            "failures": [asdict(f) for f in summary.failures],
            "not_documents": [asdict(d) for d in summary.not_documents]}


def _echo_not_documents(summary) -> None:
    """The run's files that are no documents, one line each, after its failures (not failures)."""
    for skipped in getattr(summary, "not_documents", ()):
        click.echo(f"  SKIPPED {visible(skipped.path)}: {NOT_A_DOCUMENT}{visible(skipped.what)}")


@contextlib.contextmanager
def _stops_on_signals():
    """SIGTERM and SIGINT stop the run within seconds (citeline.runtime.signals); one that comes
    before the flow reached its documents (the temporary Prefect server still starting) ends
    the command at once, with one line and the same exit code."""
    from citeline.schemas.interrupt import Stopped
    from citeline.runtime.signals import stop_on_signals

    try:
        with stop_on_signals():
            yield
    except Stopped as exc:
        _exit_stopped(f"{exc} before any document was done; nothing was written")


def _exit_stopped(message: str | None) -> None:
    """Exit as a process ended by the signal does, by shell convention: 128 + its number
    (143 for SIGTERM, 130 for SIGINT), after saying so on stderr."""
    from citeline.schemas import interrupt

    if message:
        click.echo(visible(message), err=True)
    sys.exit(128 + (interrupt.requested() or 0))


def _print_run(result, as_json: bool = False) -> None:
    """Print a run's summary and failures, then exit as README's "Exit codes" says.

    A bug's exception is raised again, so its traceback is printed and the exit is 1.
    """
    from citeline.schemas.status import DELETIONS_HELD, DOCUMENTS_FAILED, STOPPED
    from citeline.schemas.interrupt import Stopped

    summary = result.value
    if isinstance(summary, Stopped):  # raised before the flow's documents, inside Prefect's engine
        _exit_stopped(f"{summary} before any document was done; nothing was written")
    if isinstance(summary, CitelineError):
        raise as_cli_error(summary)
    if isinstance(summary, BaseException):
        raise summary
    if not hasattr(summary, "line"):
        raise CliError(f"the run failed: {result.message}", kind="run-failed")
    # past --max-failed, or stopped (disk full); held deletions are reported below
    error = result.failed and result.state not in (DOCUMENTS_FAILED, DELETIONS_HELD)
    if as_json:
        report = _run_report(result.state, summary)
        if error:
            report["error"] = {"kind": "stopped" if result.state == STOPPED else "run-failed",
                               "message": result.message, "help": ""}
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(summary.line())
        for failure in summary.failures:
            click.echo(f"  FAILED {visible(failure.path)} [{failure.stage}] {visible(failure.reason)}")
        for held in getattr(summary, "held", ()):  # a retry's summary holds none
            click.echo(f"citeline: {visible(held)}", err=True)
        _echo_not_documents(summary)
    if result.state == STOPPED:
        _exit_stopped(None if as_json else result.message)  # the JSON report holds the message
    if error:
        if as_json:
            sys.exit(1)
        raise CliError(result.message, kind="run-failed")
    if result.state == DELETIONS_HELD:
        sys.exit(EXIT_DELETIONS_HELD)
    if summary.failures:
        sys.exit(EXIT_DOCUMENTS_FAILED)


@cli.command()
@click.argument("path", type=SourcePath(exists=True, file_okay=False))
@writer_db_option
@model_option
@click.option("--cron", default="*/15 * * * *", show_default=True, help="When to re-sync (cron syntax).")
@click.option("--strategy", type=click.Choice(STRATEGIES, case_sensitive=False), default=SETTINGS.strategy,
              show_default=True)
@click.option("--name", default=None, help="Deployment name (default: sync-<folder name>).")
@click.option("--verify-cron", default="30 3 * * 0", show_default=True,
              help="When a run also hashes files whose size and modification time are unchanged (cron syntax; "
                   "'' for never).")
@click.option("--allow-mass-delete", is_flag=True,
              help="Let every scheduled run forget the documents of vanished files even when PATH came up empty or "
                   "more than half of them would go (prefer one `citeline index --allow-mass-delete`).")
@click.option("--include", multiple=True, metavar="GLOB",
              help="Index only files matching GLOB (gitignore syntax, relative to PATH); repeatable.")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Skip files and folders matching GLOB (gitignore syntax), after the defaults and "
                   "PATH/.citelineignore; repeatable. Indexed files now excluded are forgotten.")
@click.option("--grace-days", type=click.FloatRange(min=0), default=SETTINGS.grace_days, show_default=True,
              help="Keep a forgotten document's chunks, unserved, this many days: a file or share that comes "
                   "back is not embedded again (0: delete them at once).")
@output_options
def serve(path, db, model, cron, strategy, name, verify_cron, allow_mass_delete, include, exclude, grace_days,
          as_json):
    """Keep PATH (a folder, or an s3:// prefix) indexed on a schedule; needs a Prefect server (PREFECT_API_URL)."""
    from citeline.index.store import model_for
    from citeline.flows.serve import FolderSync
    from citeline.pipeline.walk import Selection, check_patterns
    from citeline.schemas.paths import absolute

    if not os.environ.get("PREFECT_API_URL"):
        raise click.UsageError("set PREFECT_API_URL to a running server (`prefect server start`): "
                               "without one, Prefect schedules nothing")
    _check_server(os.environ["PREFECT_API_URL"])
    settings = IndexSettings(db=absolute(db), model=model_for(db, model), strategy=strategy.upper(),
                             grace_days=grace_days)
    selection = Selection(tuple(include), tuple(exclude))
    try:
        check_patterns(selection)  # before the deployment exists: every scheduled run would fail
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    sync = FolderSync.of(path, settings, cron, name, verify_cron, allow_mass_delete, selection)
    if as_json:  # serving blocks: what is served is the one object printed
        click.echo(json.dumps({"deployment": f"index-folder/{sync.name}", "root": sync.root, "db": settings.db,
                               "cron": cron, "verify_cron": sync.verify_cron, "include": list(include),
                               "exclude": list(exclude), "grace_days": grace_days}, indent=2))
    sync.serve(announce=not as_json and verbosity() >= 0)  # under --json stdout holds the one object


def _check_server(api_url: str) -> None:
    """A server must answer at ``api_url`` (any HTTP reply will do: one behind auth answers 401),
    before a deployment is announced."""
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(f"{api_url.rstrip('/')}/health", timeout=10).close()
    except urllib.error.HTTPError:
        return
    except (OSError, ValueError) as exc:
        raise CliError(f"no Prefect server answers at PREFECT_API_URL={api_url}: {getattr(exc, 'reason', exc)}",
                       kind="no-server", help="Start one with `prefect server start`, or fix the URL.") from None


@cli.command()
@click.argument("path", required=False, type=click.Path())
@writer_db_option
@model_option
@wait_option
@output_options
def retry(path, db, model, wait_s, as_json):
    """Index again only the documents that failed (under PATH if given)."""
    from citeline.library import Index

    with _stops_on_signals(), cli_errors(db):
        result = Index(db, model, warm=False).retry(path, wait_s=wait_s, return_result=True)
    _print_run(result, as_json)


@cli.command()
@writer_db_option
@click.option("--model", required=True, envvar=ENV_MODEL, callback=known_model,
              help="The new embedding model: a packaged alias or a local sentence-transformers folder.")
@click.option("--strategy", type=click.Choice(STRATEGIES, case_sensitive=False), default=None,
              help="A new chunk strategy (default: keep the index's).")
@wait_option
@output_options
def reindex(db, model, strategy, wait_s, as_json):
    """Rebuild the index for another model or strategy beside the live one, then switch.

    Uses the stored canonical text (no re-extraction); queries use the old index until
    every document is done; an interrupted run resumes where it stopped.
    """
    from citeline.library import Index
    from citeline.pipeline.embed import ModelNotFound

    try:
        with _stops_on_signals(), cli_errors(db):
            result = Index(db, warm=False).reindex(model, strategy, wait_s=wait_s, return_result=True)
    except ModelNotFound as exc:  # an unknown name or a missing extra: one clear line, not a failed flow
        raise click.ClickException(error_text(exc)) from None
    _print_run(result, as_json)


@cli.command()
@writer_db_option
@click.option("--yes", is_flag=True, help="Drop them; without it, only list what would go.")
@wait_option
@click.option("--grace-days", type=click.FloatRange(min=0), default=SETTINGS.grace_days, show_default=True,
              help="Also delete the kept chunks of documents a sync forgot at least this many days ago "
                   "(0: all of them).")
@output_options
def gc(db, yes, wait_s, grace_days, as_json):
    """List (or with --yes drop) chunks tables that are not the active one, and the kept chunks
    of documents forgotten longer ago than --grace-days.

    The table a running or interrupted re-index is building is kept: `citeline reindex`
    resumes it. gc takes the writer lock, so it never runs beside another writer, and keeps
    a table a running `citeline api` still serves (its reader lease, index/readers.py).
    """
    from citeline.library import Index

    with cli_errors(db):
        tables, purged = Index(db, warm=False).collect_garbage(yes, grace_days, wait_s)
    forgotten = [{"path": p["path"], "rows": p["rows"], "forgotten_at": p["forgotten_at"].isoformat()} for p in purged]
    if as_json:
        click.echo(json.dumps({"tables": tables, "forgotten": forgotten}, indent=2))
        return
    if forgotten:
        noun = "document" if len(forgotten) == 1 else "documents"
        click.echo(f"{'deleting' if yes else 'would delete'} the kept chunks of {len(forgotten)} forgotten {noun} "
                   f"({sum(p['rows'] for p in forgotten)} rows), forgotten {grace_days:g} days ago or more")
    for t in tables:
        what = f"{t['table']}: {t['model']} ({t['dim']}-d), strategy {t['strategy']}, {t['rows']} rows"
        if t["action"] == "keep":
            click.echo(f"keeping {what}: a re-index to it has not switched yet "
                       "(run the same `citeline reindex` again to finish it)")
        elif t["action"] == "in-use":
            click.echo(f"keeping {what}: a running reader (citeline api) still serves it; "
                       "run gc again once it has followed the switch or stopped")
        else:
            click.echo(f"{'dropping' if yes else 'would drop'} {what}")
    if not [t for t in tables if t["action"] not in ("keep", "in-use")] and not forgotten:
        click.echo("nothing to drop: only the active chunks table exists" if not tables else "nothing else to drop")


@cli.command()
@click.argument("path", type=click.Path())
@writer_db_option
@wait_option
@output_options
def rm(path, db, wait_s, as_json):
    """Forget the documents under PATH: a file or folder (or s3:// URL), typically one renamed or deleted.

    A relative PATH under which nothing is indexed is read as the ending of one stored file or
    folder (`proj1/notes.md`, `proj1`); when several end with it they are listed, none removed.

    A sync forgets files gone from the folder it syncs; this removes what no sync reaches
    (the old name of a renamed folder), chunks and records, under the writer lock.
    """
    from citeline.index.lookup import Ambiguous
    from citeline.library import Index

    with cli_errors(db):
        try:
            removal = Index(db, warm=False).delete(path, wait_s)
        except Ambiguous as exc:
            raise CliError(visible(str(exc)), kind="ambiguous") from None
    if not removal.paths:
        roots = ", ".join(visible(r) for r in removal.known_roots) or "none"
        raise CliError(f"no document is indexed under {visible(removal.target)} (synced roots: {roots})",
                       kind="not-indexed")
    _publish_health(db, f"citeline rm {removal.target}")
    still_exists = _still_exists(path if removal.target == escape(absolute(path)) else os_path(removal.target))
    if as_json:
        click.echo(json.dumps({"target": removal.target, "removed": list(removal.paths),
                               "roots_forgotten": list(removal.roots), "still_exists": still_exists}, indent=2))
        return
    for source in removal.paths:
        click.echo(f"removed {visible(source)}")
    click.echo(f"removed {len(removal.paths)} documents under {visible(removal.target)}")
    if still_exists:
        click.echo(f"note: {visible(removal.target)} still exists: a sync of it, or of a folder above it, indexes it again")


def _publish_health(db: str, by: str) -> None:
    """The index's failing-documents and index-health artifacts, for a command that wrote it
    without a flow run (``rm``), when a Prefect server is configured: without PREFECT_API_URL
    Prefect would start a temporary server for them (seconds), and nobody would see them."""
    if not os.environ.get("PREFECT_API_URL"):
        return
    from citeline.tasks.report import health_artifacts

    try:
        health_artifacts(db, by)
    except Exception as exc:  # noqa: BLE001 - the documents are removed; the artifacts follow with the next run
        click.echo(f"citeline: the index's artifacts were not published to Prefect ({error_text(exc)}); "
                   "the next run that writes the index publishes them", err=True)


def _still_exists(path: str) -> bool:
    if is_remote(path):
        from citeline.pipeline.objects import exists  # fsspec: only when a URL is given

        return exists(path)
    return Path(path).expanduser().exists()


@cli.command()
@writer_db_option
@wait_option
@click.option("--answerability", is_flag=True,
              help="Also fit the experimental answerability score; reranked `ask` then gates with it "
                   "(slower: reranks 350 questions; docs/query.md, \"Answerability\").")
@output_options
def calibrate(db, wait_s, answerability, as_json):
    """Measure the index's refusal cut from the index itself (done by index and reindex too).

    Pseudo-questions drawn from the indexed chunks and a shipped bank of off-topic
    questions are searched; the cut lets at most 1% of the off-topic ones through
    (docs/query.md, "How the gate calibrates itself"). `ask --cut` still overrides it.
    """
    from citeline.library import Index

    with cli_errors(db):
        result = Index(db, warm=False).calibrate(wait_s=wait_s, answerability=answerability, return_result=True)
        found = result.value
        if isinstance(found, BaseException):
            raise found  # a citeline error as JSON or text (cli_errors); a bug with its traceback
    if result.failed or not hasattr(found, "cut"):
        raise click.ClickException(result.message or "the calibration failed")
    click.echo(json.dumps(asdict(found), indent=2) if as_json else found.line())


@cli.command()
@db_option
@click.option("--failed", is_flag=True, help="Only failed documents.")
@output_options
def status(db, failed, as_json):
    """Documents in the index: status, failure reason, chunk count, stamps."""
    from citeline.index import status_cache
    from citeline.pipeline.extractor_versions import extractor_versions  # read from source: no extractor imported

    versions = extractor_versions()
    # A local index unchanged since the last status answers from the report kept beside its
    # tables, without importing LanceDB (index/status_cache.py).
    index_dir = status_cache.local_dir(db)
    key = status_cache.cache_key(index_dir, {"extractors": versions}) if index_dir else None
    report = status_cache.load(index_dir, key) if key else None
    if report is None:
        from citeline.library import Index

        with cli_errors():
            report = Index(db, warm=False).status_report(versions)
        if key:
            status_cache.save(index_dir, key, report)
    gate_line = report.pop("gate_line")
    if failed:
        report["documents"] = [d for d in report["documents"] if d["status"] == DocStatus.FAILED]
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    if stamp := report["active"]:
        click.echo(f"index {db}: {stamp['embed_model']} ({stamp['embed_dim']}-d), strategy {stamp['strategy']}, "
                   f"pipeline v{stamp['pipeline_version']}; {report['rows']} chunk rows{_kept_words(report)}")
        click.echo(gate_line)
    for d in report["documents"]:
        aside = d["status"] == DocStatus.NOT_DOCUMENT  # shown "skipped", as the run's summary says
        # failed or set aside: no rows of its own
        rows = "-" if d["status"] == DocStatus.FAILED or aside else "current" if d["current"] else "STALE"
        shown = "skipped" if aside else d["status"]
        line = f"{shown:<8} {rows:<7} {d['chunk_count']:>5} chunks  {visible(d['name'])}"
        if d["status"] == DocStatus.FAILED:
            line += f"  [{d['stage']}] {visible(d['reason'] or '')} (attempts: {d['attempts']})"
        elif aside:
            line += f"  {visible(d['reason'] or NOT_A_DOCUMENT)}"
        click.echo(line)
        for note in visible_lines(d["notes"] or ""):
            if note:
                click.echo(f"{'':17}note: {note}")


def _kept_words(report: dict) -> str:
    """The rows of forgotten documents kept for the grace period, said apart from the index's."""
    kept = report.get("forgotten") or {}
    if not kept.get("rows"):
        return ""
    noun = "document" if kept["documents"] == 1 else "documents"
    return (f" (and {kept['rows']} rows of {kept['documents']} forgotten {noun} kept for the grace period, "
            "not served)")


@cli.command()
@click.argument("query")
@db_option
@model_option
@click.option("-k", default=8, show_default=True, type=click.IntRange(min=1, max=1000), help="How many chunks.")
@click.option("--retriever", default=DEFAULT_RETRIEVER, show_default=True, type=click.Choice(RETRIEVERS),
              help=f"rerank (MaxSim over the {DEFAULT_RERANK.candidates} top {DEFAULT_RERANK.depth}: a sentence "
                   "typed verbatim comes first, bench/phrase_probes.py), dense (cosine), bm25 (full text) or hybrid "
                   "(RRF of both), as in ask; no refusal gate here.")
@click.option("--local", is_flag=True,
              help="Search in this process even when a `citeline api` on this machine serves the index.")
@filter_options
@output_options
def search(query, db, model, k, retriever, as_json, local, filters):
    """The chunks nearest to QUERY by one retriever, with exact locators.

    --path, --type and --since keep only matching documents' chunks, before ranking: -k
    results come back whenever that many match. Each hit shows the line of its quote that best
    matches QUERY (--json: the whole quote). When a `citeline api` on this machine serves the
    index, the question is sent there (no model to load); --local searches here.
    """
    citations = None if local or model else _served_search(db, query, k, retriever, filters)
    if citations is None:
        from citeline.library import Index

        with cli_errors():
            citations = Index(db, model, warm=False).search(query, k, retriever, filters)
    if as_json:
        click.echo(json.dumps({"query": query, "retriever": retriever,
                               "results": [c.to_dict() for c in citations]}, indent=2))
        return
    for c in citations:  # each hit's line that best matches the question, whole (--json: the quote)
        rerank = "" if c.rerank_score is None else f", rerank {c.rerank_score:.3f}"
        click.echo(f"[{c.index}] {visible(c.document)}{visible(c.fragment)}  {visible(c.label)}  "
                   f"(cosine distance {c.distance:.3f}{rerank})")
        click.echo(best_line(c))


def _served_search(db, query, k, retriever, filters):
    """The service's citations for the search, or None when no service answers for ``db``."""
    from citeline.runtime.running_service import request_filters
    from citeline.schemas.retrieval import Citation

    service = served_by(db)
    if service is None:
        return None
    fields = request_filters(filters)
    params = [("q", query), ("k", str(k)), ("retriever", retriever), *(("path", p) for p in fields["path"]),
              *(("type", t) for t in fields["type"]), *((("since", fields["since"]),) if fields["since"] else ())]
    try:
        return [Citation.from_dict(c) for c in service.search(params)["results"]]
    except OSError:  # gone since its /health, or it refused the request: this process says why
        return None


@cli.command()
@click.argument("path")
@db_option
@output_options
def chunks(path, db, as_json):
    """The chunks of one document, in reading order: offsets, locator label, token count.

    PATH is the document's id, its absolute source path, any ending of that path that names
    one document (`notes.md`, `proj1/notes.md`; several are listed), or a file here that was indexed.
    """
    from citeline.library import Index

    with cli_errors():
        doc, rows = _document_chunks(Index(db, warm=False), path)
    if as_json:
        click.echo(json.dumps({"document_id": doc.document_id, "path": doc.path, "name": doc.name, "source": doc.source,
                               "chunks": [c.to_dict() for c in rows]}, indent=2))
        return
    click.echo(f"{visible(doc.name)}  {len(rows)} chunks  ({visible(doc.source)})")
    for c in rows:
        click.echo(f"#{c.ordinal:<4} {c.start:>7}-{c.end:<7} {c.tokens:>4} tokens  {visible(c.label)}  "
                   f"{visible(c.fragment)}")


def _document_chunks(index, path: str):
    """(document, its chunks): PATH as the index names it (an id, a source, any ending of a
    source that names one document), else as a file here resolved."""
    from citeline.index.lookup import Ambiguous

    try:
        doc = index.document(path)
    except KeyError as exc:
        local = Path(path).expanduser()
        try:
            doc = index.document(str(local.resolve())) if local.exists() else None
        except KeyError:
            doc = None
        if doc is None:
            ambiguous = isinstance(exc, Ambiguous)
            raise CliError(visible(str(exc)) if ambiguous else f"no document {visible(path)} in the index",
                           kind="ambiguous" if ambiguous else "not-indexed") from None
    return doc, index.chunks(doc.document_id)


@cli.command()
@db_option
@output_options
@click.option("--repair", is_flag=True,
              help="Fix what can be fixed safely (index affected documents again, delete orphan chunks, "
                   "rebuild the full-text index, remove a killed writer's temp files), then check again.")
@click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=0.0,
              help="With --repair: seconds to wait for another writer of the same index.")
def check(db, as_json, repair, wait_s):
    """Verify the index; exit 1 listing every violation (left after --repair)."""
    from citeline.library import Index

    if repair:
        writable_db(click.get_current_context(), None, db)  # a repair writes
        _check_and_repair(db, as_json, wait_s)
        return
    with cli_errors():
        report = Index(db, warm=False).check()
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        _print_violations(report.violations)
        for w in report.warnings:
            click.echo(f"warning: {w.rule}: {visible(w.subject)}: {visible(w.detail)}")
    if not report.ok:
        sys.exit(1)


def _check_and_repair(db: str, as_json: bool, wait_s: float) -> None:
    from citeline.library import Index

    with cli_errors(db):
        result = Index(db, warm=False).repair(wait_s=wait_s, return_result=True)
        report = result.value
        if isinstance(report, CitelineError):
            raise report
    if not hasattr(report, "remaining"):
        raise CliError(f"the repair run failed: {result.message}", kind="run-failed")
    if as_json:
        click.echo(json.dumps({
            "ok": not report.remaining,
            "found": [asdict(v) for v in report.found],
            "repairs": [asdict(r) for r in report.repairs],
            "violations": [asdict(v) for v in report.remaining],
        }, indent=2))
    else:
        if report.found:
            click.echo(f"found {len(report.found)} violations:")
            _print_violations(report.found, "  ")
        for r in report.repairs:
            click.echo(f"repair: {visible(r.line())}")
        if report.found or report.repairs:
            click.echo("after repair:")
        _print_violations(report.remaining)
    if report.remaining:
        sys.exit(1)


def _print_violations(violations, indent: str = "") -> None:
    for v in violations:
        click.echo(f"{indent}{v.rule}: {visible(v.subject)}: {visible(v.detail)}")
    if not indent:
        click.echo("index OK" if not violations else f"{len(violations)} violations")


def _check_ocr_lang(lang: str) -> None:
    """Every language of e.g. ``deu+eng`` must be installed, or every scan would fail."""
    if lang == "auto":  # each page's language is chosen among those installed: tesseract itself is enough
        if shutil.which("tesseract") is None:  # the command pytesseract runs by default
            raise click.UsageError("tesseract is not installed (Debian: apt-get install tesseract-ocr)")
        return
    import pytesseract

    try:
        installed = set(pytesseract.get_languages(config=""))
    except pytesseract.TesseractNotFoundError:
        raise click.UsageError("tesseract is not installed (Debian: apt-get install tesseract-ocr)") from None
    missing = [code for code in lang.split("+") if code not in installed]
    if missing:
        raise click.UsageError(f"--ocr-lang: {', '.join(missing)} not installed; installed: "
                               f"{', '.join(sorted(installed - {'osd'}))} (Debian: tesseract-ocr-<lang>)")


# Commands that live in their own modules (each imports its heavy parts lazily).
cli.add_command(ask)
cli.add_command(eval_command)
cli.add_command(api)
cli.add_command(server)


def main() -> None:
    """The console script: process settings first (they must precede Prefect's import), then the CLI."""
    from citeline.runtime import env, log, watchdog

    env.apply()
    log.configure()
    watchdog.start()  # what this command starts (the temporary Prefect server) dies with it
    if sys.argv[1:2] != ["server"]:
        from citeline.runtime import prefect_server

        prefect_server.connect()  # a running citeline server, if any: no temporary one
    if sys.argv[1:2] == ["index"]:
        from citeline.runtime import temporary_server

        # A writing sync waits for this server: started before the CLI's own imports and checks
        # (0.25-0.3 s), in its own session as `index` arms its signal handlers (runtime/signals.py).
        temporary_server.start_early(own_session=True)
    try:
        cli(prog_name="citeline")
    finally:
        # Shutdown's collections walk every object the imports made (torch, transformers, Prefect's
        # models): 0.7-1.2 s after the work was done (docs/benchmarks.md, "The exit, and PyMuPDF
        # left to the PDF worker"). Frozen objects are left to the OS; atexit handlers, flushes and
        # closes run as before.
        freeze_objects()
