"""Keep a folder indexed on a schedule, served from this process against a Prefect server.

``citeline serve`` is the single-process shortcut: the ``index-folder`` deployment lives while
the command runs and its flow runs run here (``flow.serve``). It serves the flow prefect.yaml's
``index-folder`` deployment runs (flows/operations.py ``sync_folder``: the same parameters, the
same one-run-per-index concurrency limit), without a work pool or a worker; docs/operations.md
has the production shape.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from prefect.schedules import Cron

from citeline.flows.operations import sync_folder
from citeline.pipeline.walk import Selection
from citeline.schemas.paths import absolute
from citeline.schemas.settings import IndexSettings


@dataclass(frozen=True)
class FolderSync:
    """The ``index-folder`` deployment that keeps one folder (local, or an ``s3://`` prefix) indexed."""

    name: str
    cron: str
    root: str  # absolute: a served run's working directory is not the caller's
    settings: IndexSettings
    # a second schedule whose runs hash every file (``verify``): the frequent syncs skip a file by
    # its stat, and miss an edit that kept its size and modification time; None: no such runs
    verify_cron: str | None = None
    allow_mass_delete: bool = False
    selection: Selection = Selection()  # the CLI's --include / --exclude patterns

    @classmethod
    def of(cls, root: str, settings: IndexSettings, cron: str, name: str | None = None,
           verify_cron: str | None = None, allow_mass_delete: bool = False,
           selection: Selection = Selection()) -> "FolderSync":
        folder = absolute(root)
        return cls(name or f"sync-{PurePosixPath(folder).name}", cron, folder, settings, verify_cron or None,
                   allow_mass_delete, selection)

    @property
    def parameters(self) -> dict:
        """Each scheduled run's parameters, as the Prefect server stores them (JSON)."""
        return {"folder": self.root, "db": self.settings.db, "model": self.settings.model,
                "strategy": self.settings.strategy, "allow_mass_delete": self.allow_mass_delete,
                "include": list(self.selection.include), "exclude": list(self.selection.exclude),
                "grace_days": self.settings.grace_days}

    @property
    def schedules(self) -> list:
        """The frequent sync's schedule, then the verifying one's (its runs take ``verify``)."""
        verifying = [Cron(self.verify_cron, parameters={**self.parameters, "verify": True})] if self.verify_cron else []
        return [Cron(self.cron), *verifying]

    def serve(self, announce: bool = True) -> None:
        """Register the deployment with its cron schedule and run its flow runs here; blocks until interrupted.

        ``global_limit=1`` lets one run of the deployment execute at a time; the flow's own
        concurrency limit keeps runs of other deployments off the same index, and the
        index lock any other writer.
        """
        # Tagged as prefect.yaml's deployments are: deploy/automations/ watch the runs tagged citeline.
        sync_folder.serve(name=self.name, schedules=self.schedules, parameters=self.parameters, global_limit=1,
                          tags=["citeline"],
                           description=f"Keep {self.root} indexed in {self.settings.db}",
                           print_starting_message=announce)  # Prefect's banner goes to stdout


def serve_folder(root: str, settings: IndexSettings, cron: str, name: str | None = None,
                 verify_cron: str | None = None) -> None:
    """Keep ``root`` indexed in ``settings.db`` on the ``cron`` schedule (``FolderSync.serve``)."""
    FolderSync.of(root, settings, cron, name, verify_cron).serve()
