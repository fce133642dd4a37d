"""Calibrate an index's refusal gate from the index itself (query/calibrate.py) and store it."""
from __future__ import annotations

from datetime import datetime, timezone

from prefect import task
from prefect.cache_policies import NO_CACHE

from citeline.query.calibrate import Calibration, calibrate, calibration_due
from citeline.query.thresholds import Uncalibrated
from citeline.query.search import Searcher
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp
from citeline.runtime.log import get_logger
from citeline.runtime.handles import embedder_for, store_for


@task(task_run_name="calibrate-gate", cache_policy=NO_CACHE)
def calibrate_gate(settings: IndexSettings, stamp: IndexStamp, force: bool = False,
                   answerability: bool = False) -> Calibration | None:
    """Measure and store the active table's calibration; skipped when the stored one still fits
    (``query.calibrate.calibration_due``).

    ``answerability`` also fits the opt-in answerability score (query/answerability.py).

    Returns:
        The calibration stored by this call, or None when none was needed.
    """
    store = store_for(settings.db)
    if not force and not calibration_due(store, stamp):
        return None
    searcher = Searcher(store, embedder_for(settings), stamp)
    try:
        found = calibrate(searcher, datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          answerability=answerability)
    except Uncalibrated as exc:  # an index of bare numbers: nothing to ask about; ask says so
        get_logger().warning("gate.not_calibrated", reason=str(exc))
        return None
    store.set_calibration(store.active_table(), found.to_json())
    get_logger().info("gate.calibrated", cut=found.cut, model=found.model, sampled=found.sampled,
                      offtopic=found.offtopic, bluffs=found.bluffs, lost=found.lost)
    return found
