"""What operators see in the Prefect UI after a run: a summary, the documents that failed in it,
a ``failed-documents`` tag on the run and one ``citeline.document.failed`` event per failed
document (deploy/automations/failed-documents.yaml notifies on them); and, per index, what is
true of it now: the ``failing-documents-…`` table and the ``index-health-…`` page (``publish_health``)."""
from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone

from prefect import task
from prefect.context import TaskRunContext
from prefect.events import emit_event
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from citeline.schemas.health import IndexHealth
from citeline.schemas.paths import absolute, escape
from citeline.schemas.status import DocStatus, Failure, RunSummary
from citeline.schemas.text import visible

FAILED_TAG = "failed-documents"  # on a flow run in which documents failed: filterable in the runs list
FAILED_EVENT = "citeline.document.failed"
# prefect.yaml's deployment that indexes failed documents again (flows/operations.py retry_failed_documents)
RETRY_DEPLOYMENT = "retry-failed/retry-failed"

# Markdown that text from a document could use to end a table cell (|), make a link ([]()),
# open code or emphasis, or start a heading; each is written backslash-escaped. So are ``:`` and
# ``@``, and the dot of ``www.``: the Prefect UI links a bare URL, address or www name (GFM autolinks).
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+!|~:@]|(?<=www)\.)", re.IGNORECASE)
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def retry_parameters(db: str, source: str) -> str:
    r"""The ``retry-failed`` deployment's parameters that index this one document again, as the
    UI's Run form and ``prefect deployment run --params`` take them (JSON: a file's name with
    control characters comes out escaped, and still exact).

    >>> retry_parameters("/data/index", "/data/docs/a\u202e.pdf")
    '{"db": "/data/index", "path": "/data/docs/a\\u202e.pdf"}'
    """
    return json.dumps({"db": absolute(db), "path": source})


def retry_hint(db: str, source: str) -> str:
    """What a failed document's task-run message ends with: how to index it again once fixed."""
    return f"retry it: deployment {RETRY_DEPLOYMENT} with parameters {retry_parameters(db, source)}"


@task(name="publish-report", cache_policy=NO_CACHE, persist_result=False)
def publish_report(summary: RunSummary, root: str, db: str, by: str | None = None) -> None:
    """The ``index-summary`` Markdown and, when documents failed in the run, the ``failed-documents``
    table (with the ``retry-failed`` parameters of each), the run's tag and one event per document;
    with ``by`` (the run, in words), the index's health artifacts too (``publish_health``: in
    this task run, so a sync's history grows by no task run for them)."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if summary.failures:  # none: no table, so the key's latest version is never an empty list
        create_table_artifact(
            key="failed-documents",
            table=failure_rows(summary, db, now),
            description=f"Documents of {markdown_text(root)} that failed in this run (every document failing now: "
                        f"the artifact {artifact_keys(db)[0]}). Once a file is fixed, run the "
                        f"deployment {RETRY_DEPLOYMENT} with the parameters of its row (or with only db, for every "
                        f"failed document of the index); `citeline retry --db {markdown_text(absolute(db))}` "
                        "does the same.",
        )
    create_markdown_artifact(key="index-summary", markdown=_markdown(summary, root, db),
                             description=f"Index run over {markdown_text(root)}")
    if summary.failures:
        tag_flow_run(FAILED_TAG)
        for failure in summary.failures:
            emit_failure(failure, root, db)
    if by is not None:
        health_artifacts(db, by)


def failure_rows(summary: RunSummary, db: str, now: str) -> list[dict]:
    """The ``failed-documents`` table. The Prefect UI renders every cell (and the description) as
    Markdown: a file named ``![b](http://host/x.png).pdf``, or a reason quoting a file's first
    bytes, made the operator's browser fetch that URL, so each cell that
    carries a name or a document's bytes is ``markdown_text``; it renders as the text itself,
    the retry parameters still copyable JSON."""
    return [{"path": markdown_text(f.path), "stage": f.stage, "reason": markdown_text(f.reason),
             "attempts": f.attempts, "last_attempt": now,
             f"{RETRY_DEPLOYMENT} parameters": markdown_text(retry_parameters(db, f.source or f.path))}
            for f in summary.failures]


def artifact_keys(db: str) -> tuple[str, str]:
    """The index's ``failing-documents-…`` and ``index-health-…`` artifact keys: each run that
    writes the index publishes a new version of both, so the key's latest is the index now.

    Prefect takes lowercase letters, digits and dashes: the index folder's name so written (the
    UI lists keys), then 12 hex digits of its whole path (two folders named index differ).

    >>> artifact_keys("/data/Index_2024")
    ('failing-documents-index-2024-520d5a989d7f', 'index-health-index-2024-520d5a989d7f')
    """
    path = escape(absolute(db))
    name = re.sub(r"[^a-z0-9]+", "-", path.rstrip("/").rsplit("/", 1)[-1].lower()).strip("-")[:40].strip("-")
    suffix = f"{name}-{hashlib.sha256(path.encode()).hexdigest()[:12]}" if name else \
        hashlib.sha256(path.encode()).hexdigest()[:12]
    return f"failing-documents-{suffix}", f"index-health-{suffix}"


@task(name="publish-health", cache_policy=NO_CACHE, persist_result=False)
def publish_health(db: str, by: str) -> None:
    """``health_artifacts`` as a task run of its own: for a run that publishes no report (check
    and repair, re-index)."""
    health_artifacts(db, by)


def health_artifacts(db: str, by: str) -> None:
    """The index's ``failing-documents-…`` table and ``index-health-…`` page, read from the index
    now (its records and notes, index/health.py); ``by``: the run that wrote it, in words."""
    from citeline.index.health import read_health
    from citeline.index.store import Store

    health = read_health(Store(db), absolute(db))
    failing_key, health_key = artifact_keys(db)
    create_table_artifact(
        key=failing_key, table=failing_rows(health),
        description=f"Every document of the index {markdown_text(health.db)} that is failing now "
                    f"({len(health.failing)}), from its records after {markdown_text(by)}: since is the time of "
                    f"the attempt that failed last. Once a file is fixed, run the deployment {RETRY_DEPLOYMENT} "
                    "with the parameters of its row (or with only db, for all of them).")
    create_markdown_artifact(key=health_key, markdown=health_markdown(health, by),
                             description=f"The index {markdown_text(health.db)} after {markdown_text(by)}")


def failing_rows(health: IndexHealth) -> list[dict]:
    """The ``failing-documents-…`` table: every cell Markdown-escaped (``failure_rows`` says why)."""
    return [{"path": markdown_text(d.path), "stage": markdown_text(d.stage), "reason": markdown_text(d.reason),
             "attempts": d.attempts, "since": markdown_text(d.since),
             f"{RETRY_DEPLOYMENT} parameters": markdown_text(retry_parameters(health.db, d.source or d.path))}
            for d in health.failing]


# A record's status as the health page names it (the run's summary says "skipped as not documents").
_STATE_WORDS = {DocStatus.INDEXED: "indexed", DocStatus.FAILED: "failing", DocStatus.NOT_DOCUMENT: "not documents"}


def health_markdown(health: IndexHealth, by: str) -> str:
    """The ``index-health-…`` page: documents by state, rows, model and strategy, the last good
    sync, the last check and the failing documents' count; every value from the index escaped."""
    states = {_STATE_WORDS.get(k, k): v for k, v in health.by_state.items()}
    total = sum(health.by_state.values())
    model = (f"{markdown_text(health.model)} ({health.dim}-d), strategy {markdown_text(health.strategy)}"
             if health.model else "none yet (no document indexed)")
    lines = [
        f"# Index health: {markdown_text(health.db)}", "",
        f"After {markdown_text(by)}.", "",
        "| documents | " + " | ".join(markdown_text(k) for k in states) + " | chunk rows |",
        "|---:|" + "---:|" * len(states) + "---:|",
        f"| {total} | " + " | ".join(str(v) for v in states.values()) + f" | {health.rows} |", "",
        f"- model: {model}",
    ]
    if health.rebuilding:
        lines.append(f"- a re-index builds {markdown_text(health.rebuilding)} and has not switched to it yet "
                     "(run the same reindex again to finish it)")
    lines.append(f"- last good sync: {_sync_words(health.last_good_sync)}")
    if health.last_sync is not None and health.last_sync != health.last_good_sync:
        lines.append(f"- last sync: {_sync_words(health.last_sync)}")
    lines.append(f"- last check: {_check_words(health.last_check)}")
    failing = len(health.failing)
    failing_key = artifact_keys(health.db)[0]
    lines += ["", f"{failing} documents failing now: the artifact {failing_key} lists them with their reasons."
              if failing else "No document is failing."]
    return "\n".join(lines)


def _sync_words(note) -> str:
    if note is None:
        return "none noted yet (a sync notes its end from this version of citeline on)"
    return (f"{markdown_text(note.at)}, {markdown_text(note.root)}: {markdown_text(note.state)}; "
            f"{markdown_text(note.line)}")


def _check_words(note) -> str:
    if note is None:
        return "none noted yet (the check-repair deployment, or `citeline check --repair`)"
    left = f"{note.remaining} violations remain ({markdown_text(', '.join(note.rules))})" if note.remaining \
        else "0 violations remain"
    return f"{markdown_text(note.at)}: {note.found} violations found, {note.repairs} repairs, {left}"


def tag_flow_run(tag: str) -> None:
    """Add ``tag`` to the flow run this task runs in (tags show in the UI's runs list)."""
    from prefect.client.orchestration import get_client

    context = TaskRunContext.get()
    if context is None:  # called outside a run (``.fn()`` in a test): nothing to tag
        return
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(context.task_run.flow_run_id)
        if tag not in run.tags:
            client.update_flow_run(run.id, tags=[*run.tags, tag])


def emit_failure(failure: Failure, root: str, db: str) -> None:
    """One event per failed document; Prefect relates it to this flow run and task run.

    Path and reason are written ``visible``: an Automation prints them into a notification
    (the event feed and the resource name too), where a file's name is hostile text.
    """
    key = hashlib.sha256(failure.path.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    path = visible(failure.path)
    emit_event(
        event=FAILED_EVENT,
        resource={"prefect.resource.id": f"citeline.document.{key}", "prefect.resource.name": path,
                  "citeline.stage": failure.stage, "citeline.root": visible(root)},
        payload={"path": path, "stage": failure.stage, "reason": visible(failure.reason),
                 "attempts": failure.attempts, "retry": retry_parameters(db, failure.source or failure.path)},
    )


def _markdown(summary: RunSummary, root: str, db: str = "") -> str:
    lines = [
        f"# Index run: {markdown_text(root)}",
        "",
        "| indexed | skipped | failed | deleted | chunks written | truncated | rows in index | not documents |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {summary.indexed} | {summary.skipped} | {summary.failed} | {summary.deleted} "
        f"| {summary.chunks} | {summary.truncated} | {summary.rows} | {len(summary.not_documents)} |",
        "", f"In words: {summary.words()}.",
    ]
    if summary.still_failing:
        lines += ["", f"{summary.still_failing} documents are still failing: they failed before and have not "
                      "changed since, so they were not read again (not counted as failed in this run). "
                      + (f"The artifact {artifact_keys(db)[0]} lists them. " if db else "")
                      + f"The deployment {RETRY_DEPLOYMENT} (or `citeline retry`) indexes them again."]
    if summary.truncated:
        lines += ["", f"{summary.truncated} chunks are longer than the encoder's window and were "
                      "embedded truncated: their tails are not searchable by meaning."]
    if summary.held:  # a folder that could not be listed, a share that came up empty (pipeline/plan.py)
        lines += ["", "## Deletions held back", ""] + [f"- {markdown_text(line)}" for line in summary.held]
        lines += ["", "The documents stay indexed: under a folder that could not be listed until it can be; "
                      "for a folder that came up empty or a large deletion that is meant, run the sync once "
                      "with allow_mass_delete (`citeline index --allow-mass-delete`)."]
    if summary.failures:
        lines += ["", "## Failed documents", "", "| path | stage | reason |", "|---|---|---|"]
        lines += [f"| {markdown_text(f.path)} | {f.stage} | {markdown_text(f.reason)} |" for f in summary.failures]
    if summary.not_documents:  # not failures: no tag, no event, listed so an operator sees them
        lines += ["", "## Skipped: not documents", "",
                  "Files that are no documents (archives, source code, a photo with no text, a recording with no "
                  "speech): not indexed and not failed; read again when they change.", "", "| path | what it is |",
                  "|---|---|"]
        lines += [f"| {markdown_text(d.path)} | {markdown_text(d.what)} |" for d in summary.not_documents]
    return "\n".join(lines)


def markdown_text(text: str) -> str:
    """``text`` shown literally inside Markdown: one line, no HTML, no Markdown syntax.

    >>> markdown_text("a|b <i>\\n[x](y)")
    'a\\\\|b &lt;i&gt;\\\\\\\\n\\\\[x\\\\]\\\\(y\\\\)'
    """
    text = "".join(_HTML.get(ch, ch) for ch in visible(text))
    return _MARKDOWN.sub(r"\\\1", text)
