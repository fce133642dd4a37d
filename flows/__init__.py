"""Prefect flows composed from tasks/."""
from tasks import env as _env

_env.apply()
