"""Serve the index flow on a schedule (the same as `citeline serve`, for process managers).

    prefect server start &
    export PREFECT_API_URL=http://127.0.0.1:4200/api
    .venv/bin/python deploy/serve.py /data/docs /data/index "*/15 * * * *"

Nothing in the package imports this file.
"""
import sys

from citeline.tasks import env, log

env.apply()  # before Prefect is imported

from citeline.flows.serve import serve_folder  # noqa: E402
from citeline.schemas.paths import absolute  # noqa: E402
from citeline.schemas.settings import IndexSettings  # noqa: E402

if __name__ == "__main__":
    log.configure()
    root, db, cron = sys.argv[1:4]
    serve_folder(root, IndexSettings(db=absolute(db)), cron)
