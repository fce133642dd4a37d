"""What operators see in the Prefect UI after a run: a summary, the failed documents, a
``failed-documents`` tag on the run and one ``citeline.document.failed`` event per failed
document (deploy/automations/failed-documents.yaml notifies on them)."""
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

from citeline.schemas.paths import absolute
from citeline.schemas.status import Failure, RunSummary
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
def publish_report(summary: RunSummary, root: str, db: str) -> None:
    """The ``failed-documents`` table (with the ``retry-failed`` parameters of each) and the
    ``index-summary`` Markdown; with failures, the run's tag and one event per document."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    create_table_artifact(
        key="failed-documents",
        table=failure_rows(summary, db, now),
        description=f"Documents of {markdown_text(root)} that failed in this run. Once a file is fixed, run the "
                    f"deployment {RETRY_DEPLOYMENT} with the parameters of its row (or with only db, for every "
                    f"failed document of the index); `citeline retry --db {markdown_text(absolute(db))}` "
                    "does the same.",
    )
    create_markdown_artifact(key="index-summary", markdown=_markdown(summary, root),
                             description=f"Index run over {markdown_text(root)}")
    if summary.failures:
        tag_flow_run(FAILED_TAG)
        for failure in summary.failures:
            emit_failure(failure, root, db)


def failure_rows(summary: RunSummary, db: str, now: str) -> list[dict]:
    """The ``failed-documents`` table. The Prefect UI renders every cell (and the description) as
    Markdown: a file named ``![b](http://host/x.png).pdf``, or a reason quoting a file's first
    bytes, made the operator's browser fetch that URL (issue 42, item 6), so each cell that
    carries a name or a document's bytes is ``markdown_text``; it renders as the text itself,
    the retry parameters still copyable JSON."""
    return [{"path": markdown_text(f.path), "stage": f.stage, "reason": markdown_text(f.reason),
             "attempts": f.attempts, "last_attempt": now,
             f"{RETRY_DEPLOYMENT} parameters": markdown_text(retry_parameters(db, f.source or f.path))}
            for f in summary.failures]


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


def _markdown(summary: RunSummary, root: str) -> str:
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
                      f"The deployment {RETRY_DEPLOYMENT} (or `citeline retry`) indexes them again."]
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
