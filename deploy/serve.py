"""Serve the index flow on a schedule against a running Prefect server.

    prefect server start &                      # UI at http://127.0.0.1:4200
    export PREFECT_API_URL=http://127.0.0.1:4200/api
    .venv/bin/python deploy/serve.py /data/docs --db /data/index --cron "*/15 * * * *"

Each scheduled run re-syncs the folder (unchanged files are skipped by content hash).
``global_limit=1`` keeps one run of this deployment at a time, so one sync per index.
Nothing in the package imports this file.
"""
from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from tasks import env

env.apply()

from flows.ingest import index_folder  # noqa: E402
from schemas.settings import IndexSettings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve citeline's index flow on a schedule.")
    parser.add_argument("root", help="folder to keep indexed")
    parser.add_argument("--db", default=".citeline")
    parser.add_argument("--cron", default="*/15 * * * *")
    parser.add_argument("--strategy", default="E")
    parser.add_argument("--name", default=None, help="deployment name (default: sync-<folder name>)")
    args = parser.parse_args()

    root = str(Path(args.root).resolve())
    settings = IndexSettings(db=str(Path(args.db).resolve()), strategy=args.strategy)
    index_folder.serve(
        name=args.name or f"sync-{Path(root).name}",
        cron=args.cron,
        parameters={"root": root, "settings": asdict(settings)},
        global_limit=1,
        description=f"Keep {root} indexed in {settings.db}",
    )


if __name__ == "__main__":
    main()
