"""Thin Prefect tasks around the pure pipeline steps."""
from tasks import env as _env

_env.apply()
