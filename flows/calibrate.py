"""``citeline calibrate``: measure the index's refusal cut again from the index itself."""
# No `from __future__ import annotations`: Prefect validates flow parameters from the annotations.
from prefect import flow
from prefect.states import Completed, Failed

from citeline.index.lock import writer_lock
from citeline.schemas.settings import IndexSettings
from citeline.tasks.calibrate import calibrate_gate
from citeline.runtime.handles import store_for


@flow(name="calibrate", flow_run_name="calibrate {settings.db}")
def calibrate_index(settings: IndexSettings, wait_s: float = 0.0, answerability: bool = False):
    """Calibrate the active chunks table's gate (query/calibrate.py) and store it in ``meta``;
    ``answerability`` also fits the opt-in answerability score.

    Returns:
        Completed with the Calibration; Failed when the index holds nothing to calibrate on.
    """
    with writer_lock(settings.db, wait_s):
        stamp = store_for(settings.db).require_stamp()
        found = calibrate_gate(settings, stamp, force=True, answerability=answerability)
    if found is None:
        return Failed(message="nothing to calibrate on: no chunk holds a sentence to ask about")
    return Completed(message=found.line(), data=found)
