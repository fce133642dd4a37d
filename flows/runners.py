"""Where per-document preparation runs: threads in this process, or a Dask cluster."""
from prefect.context import FlowRunContext
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


def groups_documents() -> bool:
    """Whether this flow run prepares small documents in groups (flows/ingest.py ``work_groups``):
    on a Dask cluster, where each task run is a scheduler round trip and a result shipped back,
    and a worker's encoder batch would otherwise hold one small document's one or two chunks.

    In process (threads) each document keeps its own task run, named by its path.
    """
    context = FlowRunContext.get()
    return context is not None and not isinstance(context.task_runner, ThreadPoolTaskRunner)
