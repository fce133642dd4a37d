"""What operators see in the Prefect UI after a run: a summary and the failed documents."""
from __future__ import annotations

import re
from datetime import datetime, timezone

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from citeline.schemas.status import RunSummary
from citeline.schemas.text import visible

# Markdown that text from a document could use to end a table cell (|), make a link ([]()),
# open code or emphasis, or start a heading; each is written backslash-escaped.
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+!|~])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


@task(name="publish-report", cache_policy=NO_CACHE, persist_result=False)
def publish_report(summary: RunSummary, root: str) -> None:
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    create_table_artifact(
        key="failed-documents",
        table=[
            {"path": f.path, "stage": f.stage, "reason": f.reason, "attempts": f.attempts, "last_attempt": now}
            for f in summary.failures
        ],
        description=f"Documents of {root} that failed in this run",
    )
    create_markdown_artifact(key="index-summary", markdown=_markdown(summary, root),
                             description=f"Index run over {root}")


def _markdown(summary: RunSummary, root: str) -> str:
    lines = [
        f"# Index run: {markdown_text(root)}",
        "",
        "| indexed | skipped | failed | deleted | chunks written | truncated | rows in index |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {summary.indexed} | {summary.skipped} | {summary.failed} | {summary.deleted} "
        f"| {summary.chunks} | {summary.truncated} | {summary.rows} |",
    ]
    if summary.truncated:
        lines += ["", f"{summary.truncated} chunks are longer than the encoder's window and were "
                      "embedded truncated: their tails are not searchable by meaning."]
    if summary.failures:
        lines += ["", "## Failed documents", "", "| path | stage | reason |", "|---|---|---|"]
        lines += [f"| {markdown_text(f.path)} | {f.stage} | {markdown_text(f.reason)} |" for f in summary.failures]
    return "\n".join(lines)


def markdown_text(text: str) -> str:
    """``text`` shown literally inside Markdown: one line, no HTML, no Markdown syntax.

    >>> markdown_text("a|b <i>\\n[x](y)")
    'a\\\\|b &lt;i&gt;\\\\\\\\n\\\\[x\\\\]\\\\(y\\\\)'
    """
    text = "".join(_HTML.get(ch, ch) for ch in visible(text))
    return _MARKDOWN.sub(r"\\\1", text)
