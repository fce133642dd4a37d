"""Process settings that must be in place before Prefect, Hugging Face or torch code is imported."""
from __future__ import annotations

import os
import sys

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
    # numpy's OpenBLAS wakes a second thread for every product over a few hundred kFLOP and
    # spins for its work; beside other jobs that thread waits for a core: MaxSim's 100 small
    # products per ask took 555 ms instead of 16 ms at load 9 (docs/benchmarks.md, section 9).
    # torch does its own threading (MKL, OpenMP) and does not read it.
    "OPENBLAS_NUM_THREADS": "1",
    # The temporary API server of a serverless run took over Prefect's 20 s default to start
    # at load 6 on two cores, failing the run before any work (docs/benchmarks.md).
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    # A flow run's heartbeat, every 30 s (Prefect's least; its default is 180): the automation
    # deploy/automations/zombie-runs.yaml marks a run Crashed after 120 s without one.
    "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30",
}


_defaulted: set[str] = set()  # the DEFAULTS this process put in its environment, not the operator


def apply() -> None:
    for key, value in DEFAULTS.items():
        if key not in os.environ:
            os.environ[key] = value
            _defaulted.add(key)
    _tell_loaded_openblas()


def set_by_operator(name: str) -> bool:
    """Whether ``name`` is in the environment other than as :func:`apply`'s default."""
    return name in os.environ and not (name in _defaulted and os.environ[name] == DEFAULTS[name])


def _tell_loaded_openblas() -> None:
    """OpenBLAS reads its variable when it loads; a numpy imported before ``apply`` (``from
    citeline import Index`` imports numpy) is given the value now."""
    threads = os.environ["OPENBLAS_NUM_THREADS"]
    if "numpy" in sys.modules and threads.isdigit() and int(threads) > 0:
        from threadpoolctl import ThreadpoolController

        # OpenBLAS only: "blas" would also take an MKL that some torch builds load.
        ThreadpoolController().select(internal_api="openblas").limit(limits=int(threads))
