"""What every command shares: output options (--json, -q, -v), errors as text or JSON, exit
codes, the default model.

A new command gets the conventions with two lines: ``@output_options`` on it (it then
takes ``as_json``), and ``cli.add_command(it)``; its errors are rendered by the group.
"""
from __future__ import annotations

import functools
import json
import re
import sys

import click

from citeline.schemas.settings import DEFAULTS, ENV_DB, ENV_MODEL, ENV_PREFIX
from citeline.schemas.errors import CitelineError
from citeline.schemas.retrieval import Citation, Filters
from citeline.schemas.text import visible

# Exit codes (docs/usage.md, "Exit codes"): 0 every document fine, 1 an error (click's own for
# ClickException, Python's for a bug's traceback), 2 bad arguments (click's UsageError),
# 3 the run finished but some documents failed, 4 the sync finished but kept documents whose files
# it did not list (a folder it could not list, a root that came up empty, a mass deletion).
EXIT_DOCUMENTS_FAILED = 3
EXIT_DELETIONS_HELD = 4
JSON_FLAG = "--json"
JSON_META = "citeline.json"


class CliError(click.ClickException):
    """A known failure: printed as its message and help, or as ``{"error": {...}}`` under --json."""

    def __init__(self, message: str, kind: str = "error", help: str = ""):
        super().__init__(message)
        self.kind = kind
        self.help = help

    def format_message(self) -> str:
        return self.message + (f"\n{self.help}" if self.help else "")


def error_text(exc: BaseException) -> str:
    """The message with its ``Help:`` notes, as a user should read it."""
    return f"{exc}" + "".join(f"\n{n}" for n in getattr(exc, "__notes__", []))


def kind_of(exc: BaseException) -> str:
    """The error's class as a stable kind for scripts.

    >>> kind_of(KeyError()), kind_of(type("LLMError", (Exception,), {})())
    ('key-error', 'llm-error')
    """
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", type(exc).__name__).lower()


def as_cli_error(exc: CitelineError) -> CliError:
    return CliError(str(exc), kind_of(exc), "\n".join(getattr(exc, "__notes__", [])))


class cli_errors:
    """citeline's own errors become clean CLI failures (exit 1) with their help notes; with ``db``,
    so does the storage under that index refusing a write (a full disk, a lost permission)."""

    def __init__(self, db: str | None = None):
        self.db = db

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and isinstance(exc, CitelineError):
            raise as_cli_error(exc) from None
        if exc is not None and self.db is not None and isinstance(exc, Exception):
            from citeline.index.faults import is_storage_error, refused

            if is_storage_error(exc):
                raise as_cli_error(refused(self.db, exc)) from None
        return False


def error_json(exc: click.ClickException) -> dict:
    """``{"error": {"kind", "message", "help"}}`` for any click failure."""
    if isinstance(exc, CliError):
        return {"error": {"kind": exc.kind, "message": exc.message, "help": exc.help}}
    if isinstance(exc, click.UsageError):
        command = exc.ctx.command_path if exc.ctx else "citeline"
        return {"error": {"kind": "usage", "message": exc.format_message(),
                          "help": f"Try '{command} -h' for help."}}
    return {"error": {"kind": "error", "message": exc.format_message(), "help": ""}}


def _wants_json(args: list[str]) -> bool:
    return JSON_FLAG in args[: args.index("--")] if "--" in args else JSON_FLAG in args


HELP_OPTIONS = ["-h", "--help"]


class CitelineCommand(click.Command):
    """A command whose ``-h`` works however it is reached: click makes a command's help option once
    and keeps it, so one first made without the group's settings (the command invoked on its own,
    as a test does) lacked ``-h`` for good, and the generated reference with it."""

    def __init__(self, *args, **kwargs):
        settings = dict(kwargs.get("context_settings") or {})
        settings.setdefault("help_option_names", HELP_OPTIONS)
        super().__init__(*args, **{**kwargs, "context_settings": settings})


class CitelineGroup(click.Group):
    """The command group: ``-h``, ``CITELINE_*`` environment variables, errors as JSON on request."""

    command_class = CitelineCommand

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        args = list(sys.argv[1:] if args is None else args)
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as exc:
            if getattr(exc, "as_json", False) or _wants_json(args):
                click.echo(json.dumps(error_json(exc), indent=2))
            else:
                exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx):
        try:
            try:
                return super().invoke(ctx)
            except CitelineError as exc:  # raised outside a command's cli_errors block: still known
                raise as_cli_error(exc) from None
        except click.ClickException as exc:
            exc.as_json = ctx.meta.get(JSON_META, False)  # --json given, or CITELINE_<COMMAND>_JSON set
            raise


CONTEXT_SETTINGS = {"help_option_names": HELP_OPTIONS, "auto_envvar_prefix": ENV_PREFIX}


def _verbosity(ctx: click.Context, param, value) -> int:
    """-v/-q into the context; the terminal's log handler is set as soon as it is known."""
    from citeline.cli.progress import configure_terminal

    if param.name == "verbose":
        ctx.meta["citeline.verbose"] = value
    else:
        ctx.meta["citeline.quiet"] = value
    verbosity = -1 if ctx.meta.get("citeline.quiet") else ctx.meta.get("citeline.verbose", 0)
    ctx.meta["citeline.verbosity"] = verbosity
    configure_terminal(verbosity)
    return value


def verbosity() -> int:
    """-1 for -q, 0 by default, 1 for -v, 2 for -vv (the current command's)."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get("citeline.verbosity", 0) if ctx else 0


class _JsonOption(click.Option):
    """--json reads CITELINE_<COMMAND>_JSON, named for the flag, not for its ``as_json`` parameter."""

    def resolve_envvar_value(self, ctx: click.Context) -> str | None:
        if self.envvar is None and ctx.auto_envvar_prefix:
            return _env(f"{ctx.auto_envvar_prefix}_JSON")
        return super().resolve_envvar_value(ctx)


def _remember_json(ctx: click.Context, param, value: bool) -> bool:
    ctx.meta[JSON_META] = value  # meta is shared with the group's context, which renders errors
    return value


def _env(name: str) -> str | None:
    import os

    return os.environ.get(name) or None


def output_options(command):
    """--json (one JSON object on stdout, errors included), -q and -v."""
    command = click.option("-v", "--verbose", count=True, expose_value=False, callback=_verbosity,
                           is_eager=True, help="More on stderr: per-document lines and Prefect's own; -vv debug.")(command)
    command = click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_verbosity, is_eager=True,
                           help="Only errors and the final line.")(command)
    return click.option(JSON_FLAG, "as_json", is_flag=True, cls=_JsonOption, callback=_remember_json,
                        help="One JSON object on stdout; errors as {\"error\": {kind, message, help}}.")(command)


def known_model(ctx: click.Context, param, value: str | None) -> str | None:
    """--model's callback: an unknown name is a usage error (exit 2) before a run, a server or
    an index starts (resolving a name loads nothing)."""
    if value is None:
        return value
    from citeline.pipeline.embed import ModelNotFound, resolve_model

    try:
        resolve_model(value)
    except ModelNotFound as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    return value


def filter_options(command):
    """--path, --type and --since (repeatable but --since), handed to the command as one
    ``filters`` (``Filters``, empty when none is given); a bad value is a usage error (exit 2)."""
    @functools.wraps(command)
    def with_filters(*args, path_filters, type_filters, since, **kwargs):
        try:
            filters = Filters.parse(path_filters, type_filters, since)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        return command(*args, filters=filters, **kwargs)

    with_filters = click.option("--since", default=None, metavar="DATE",
                                help="Only documents whose file was modified at or after DATE (ISO 8601; "
                                     "UTC when no zone is given).")(with_filters)
    with_filters = click.option("--type", "type_filters", multiple=True, metavar="TYPE",
                                help="Only this file extension (pdf, md) or extractor (csv, image-ocr); "
                                     "repeat for any of several.")(with_filters)
    return click.option("--path", "path_filters", multiple=True, metavar="PREFIX|GLOB",
                        help="Only documents whose path under its synced folder starts with PREFIX or "
                             "matches GLOB (* any characters, / too; ? one); repeat for any of several.")(with_filters)


def served_by(db: str):
    """The `citeline api` serving ``db`` on this machine (runtime/running_service.py), said on
    stderr with -v; None when none answers."""
    from citeline.runtime import running_service

    service = running_service.find(db)
    if service is not None and verbosity() > 0:
        click.echo(f"asking the citeline api at {service.url} (it serves {db}; --local answers here)", err=True)
    return service


# The options every command that opens an index shares, declared once.
db_option = click.option("--db", envvar=ENV_DB, default=DEFAULTS["db"], show_default=True,
                         help="Index location: a local folder or any LanceDB URI.")


def writable_db(ctx, param, value: str) -> str:
    """--db of a writing command: refused at once on a store without a writer lock (index/lock.py)."""
    from citeline.index.lock import check_local_writable, check_writable
    from citeline.schemas.errors import IndexUnwritable, UnsupportedStore

    try:
        check_writable(value)
    except UnsupportedStore as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    try:
        check_local_writable(value)  # a read-only mount: one line, before any flow or server starts
    except IndexUnwritable as exc:
        raise as_cli_error(exc) from None
    return value


writer_db_option = click.option("--db", envvar=ENV_DB, default=DEFAULTS["db"], show_default=True,
                                callback=writable_db,
                                help="Index location: a local folder or s3://bucket/prefix.")
wait_option = click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=0.0,
                           help="Seconds to wait for another writer of the same index.")
model_option = click.option("--model", envvar=ENV_MODEL, default=None, callback=known_model,
                            help="Embedding model: a packaged alias or a local sentence-transformers folder "
                                 f"(default: the index's own model, else {DEFAULTS['model']}).")


def best_line(citation: Citation) -> str:
    """A source's best line as printed under it: whole, on one line, followed by its own place
    where that is not the source's (the row's cells on a sheet, its page in a PDF)."""
    own = citation.highlight_locator
    place = f"  ({visible(own)})" if own and own != citation.fragment else ""
    return f"    {visible(' '.join(citation.highlight.split()))}{place}"
