"""The ``prune-history`` deployment: keep the Prefect server's database bounded.

Prefect keeps every flow run, with its task runs, states, logs and artifacts, until they
are deleted. This flow deletes, through the server's API, the flow runs that ended more
than ``days`` days ago (their task runs and states go with them, by the database's
cascade) and their artifacts. Their logs go too: Prefect 3.9's server deletes a deleted run's
logs in a background task (``delete_flow_run_logs``), and its orphan vacuum those that task
missed (``PREFECT_SERVER_SERVICES_DB_VACUUM_ENABLED`` including ``orphans``; docs/operations.md).
Their events stay until the server's event retention removes them by age. Prefect's flow-run vacuum
(``flow_runs``, ``..._DB_VACUUM_RETENTION_PERIOD``) does all of it server-side instead;
this flow is the same, started from the UI or a schedule with its own number of days.
"""
# No `from __future__ import annotations`: Prefect builds the Run form from the annotations.
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed

BATCH = 200  # flow runs read and deleted per round trip


@dataclass(frozen=True)
class Pruned:
    flow_runs: int
    artifacts: int
    before: str  # the cutoff, ISO 8601 UTC

    def line(self) -> str:
        return (f"deleted {self.flow_runs} flow runs (with their task runs and states) and {self.artifacts} "
                f"artifacts that ended before {self.before}")


def cutoff(days: float, now: datetime | None = None) -> datetime:
    """The end time before which a flow run is deleted.

    >>> cutoff(30, datetime(2026, 12, 31, tzinfo=timezone.utc)).isoformat()
    '2026-12-01T00:00:00+00:00'
    """
    if days < 0:
        raise ValueError(f"days must be 0 or more (got {days})")
    return (now or datetime.now(timezone.utc)) - timedelta(days=days)


@task(name="delete-flow-runs", cache_policy=NO_CACHE, persist_result=False)
def delete_ended_before(before: datetime, keep: str | None) -> Pruned:
    """Delete every flow run in a final state that ended before ``before``, with its artifacts;
    never ``keep`` (this run)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (ArtifactFilter, ArtifactFilterFlowRunId, FlowRunFilter,
                                                FlowRunFilterEndTime, FlowRunFilterId, FlowRunFilterState,
                                                FlowRunFilterStateType)
    from prefect.client.schemas.objects import TERMINAL_STATES
    from prefect.exceptions import ObjectNotFound

    runs = artifacts = 0
    ended = FlowRunFilter(end_time=FlowRunFilterEndTime(before_=before),
                          state=FlowRunFilterState(type=FlowRunFilterStateType(any_=list(TERMINAL_STATES))),
                          id=FlowRunFilterId(not_any_=[keep]) if keep else None)
    with get_client(sync_client=True) as client:
        while batch := client.read_flow_runs(flow_run_filter=ended, limit=BATCH):
            ids = [r.id for r in batch]
            for artifact in client.read_artifacts(
                    artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=ids))):
                client.delete_artifact(artifact.id)
                artifacts += 1
            for run_id in ids:
                try:
                    client.delete_flow_run(run_id)
                    runs += 1
                except ObjectNotFound:  # another prune got there first
                    pass
    return Pruned(runs, artifacts, before.isoformat(timespec="seconds"))


@flow(name="prune-history", flow_run_name="prune history older than {days} days")
def prune_history(days: float = 30.0):
    """Delete the flow runs (with their task runs, states and artifacts) that ended more than
    ``days`` days ago, so the Prefect database stays bounded. The server deletes their logs
    with them (docs/operations.md, section 6).

    Args:
        days: Keep the history of the last this many days (0: delete every finished run).
    """
    from prefect.runtime import flow_run

    pruned = delete_ended_before(cutoff(days), flow_run.get_id())
    return Completed(message=pruned.line(), data=pruned)
