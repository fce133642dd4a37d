"""Process settings that must be in place before Prefect or Hugging Face code is imported."""
from __future__ import annotations

import os

DEFAULTS = {
    # Our structlog output goes through the stdlib logger "citeline"; Prefect ships it to the UI.
    "PREFECT_LOGGING_EXTRA_LOGGERS": "citeline",
    # citeline logs outside a flow run (CLI search, a task called directly) stay local, silently.
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
    # Offline machines: no telemetry, no hub look-ups (every model loads from a local folder).
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def apply() -> None:
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
