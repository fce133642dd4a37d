"""Settings from command-line options and CITELINE_* environment variables."""
from __future__ import annotations

from citeline.schemas.settings import DEFAULT_DB, DEFAULT_MODEL

ENV_PREFIX = "CITELINE"  # every option also reads CITELINE_<COMMAND>_<OPTION>
ENV_DB = "CITELINE_DB"
ENV_MODEL = "CITELINE_MODEL"
DEFAULTS = {"db": DEFAULT_DB, "model": DEFAULT_MODEL}
