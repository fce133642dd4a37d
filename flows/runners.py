"""Where per-document preparation runs: threads in this process, or a Dask cluster; and the
Prefect settings of a flow run a command starts."""
import os
from collections.abc import Iterator
from contextlib import contextmanager

from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.task_runners import ThreadPoolTaskRunner

from citeline.schemas.settings import DOCUMENT_WORKERS

LOCAL = "local"


def task_runner_for(dask: str | None = None, workers: int = DOCUMENT_WORKERS):
    """ThreadPool by default; ``dask="local"`` starts a LocalCluster; else a scheduler address.

    Only preparation (extract, chunk, embed) runs on the cluster; writes stay in the
    flow's process. Workers must be non-daemonic so that extractors can start their
    killable child process (dask config ``distributed.worker.daemon: false``).
    """
    if dask is None:
        return ThreadPoolTaskRunner(max_workers=workers)
    import dask as dask_config
    from prefect_dask import DaskTaskRunner

    dask_config.config.set({"distributed.worker.daemon": False})
    if dask == LOCAL:
        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True})
    return DaskTaskRunner(address=dask)



HEARTBEAT_VARIABLES = ("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "PREFECT_RUNNER_HEARTBEAT_FREQUENCY")


@contextmanager
def command_run() -> Iterator[None]:
    """Settings for a flow run a command (CLI or ``Index``) starts and waits for: no heartbeats.

    Prefect 3.9 sends a flow run's heartbeat from a thread that sleeps a second at a time and is
    joined when the run ends, so every run waits up to a second for it to wake: a no-op sync of
    2,000 files took 1.23 s with it and 0.63 s without (docs/benchmarks.md). Heartbeats serve only
    a zombie-detection automation, which neither Prefect nor citeline's server creates, and a
    command that dies is seen by the person who ran it. Runs of a served schedule (``citeline
    serve``) keep them; an operator who set ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` keeps them too.
    """
    if any(name in os.environ for name in HEARTBEAT_VARIABLES):
        yield
        return
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield
