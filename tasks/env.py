"""Process settings that must be in place before Prefect, Hugging Face or torch code is imported."""
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
    # PyTorch's OpenMP threads spin between kernels by default; on a core shared with other
    # work a spinning thread starves its sibling: one query embedding took 1.2 s instead of
    # 17 ms at load 10, and a batch twice the CPU (bench/omp_wait_policy.py). Read when torch loads.
    "OMP_WAIT_POLICY": "PASSIVE",
    # The temporary API server of a serverless run took over Prefect's 20 s default to start
    # at load 6 on two cores, failing the run before any work (docs/benchmarks.md).
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}


def apply() -> None:
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
