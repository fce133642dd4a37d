"""What operators see in the Prefect UI after a run: a summary and the failed documents."""
from __future__ import annotations

from datetime import datetime, timezone

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from citeline.schemas.status import RunSummary


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
        f"# Index run: `{root}`",
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
        lines += [f"| {f.path} | {f.stage} | {f.reason} |" for f in summary.failures]
    return "\n".join(lines)
