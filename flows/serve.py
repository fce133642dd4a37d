"""Keep a folder indexed on a schedule, served from this process against a Prefect server."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from citeline.flows.ingest import index_folder
from citeline.schemas.settings import IndexSettings


def serve_folder(root: str, settings: IndexSettings, cron: str, name: str | None = None) -> None:
    """Register an ``index-folder`` deployment with a cron schedule and run its flow runs here.

    ``global_limit=1`` lets one run of the deployment execute at a time: one sync per
    index, the single-writer rule held by the scheduler as well as by the index lock.
    Blocks until interrupted.
    """
    folder = str(Path(root).expanduser().resolve())
    index_folder.serve(
        name=name or f"sync-{Path(folder).name}",
        cron=cron,
        parameters={"root": folder, "settings": asdict(settings)},
        global_limit=1,
        description=f"Keep {folder} indexed in {settings.db}",
    )
