"""A deployment's run as a worker starts it: ``python -m prefect.engine`` in its own process,
against the session's Prefect server; what its log in the UI says."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import FAKE

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "docs"
FIXTURES = ROOT / "tests" / "fixtures"
pytestmark = pytest.mark.usefixtures("prefect_harness")

SITECUSTOMIZE = f"""
import sys
sys.path.insert(0, {str(FIXTURES)!r})
from citeline.pipeline import embed
from fakes import FAKE, HashEmbedder
embed.register(FAKE, lambda precision, batch_size: HashEmbedder())
"""


def run_as_worker(tmp_path: Path, entrypoint: str, flow, **parameters):
    """Create a flow run of ``flow`` and execute it as a process worker does (the engine's own
    entry point, the flow loaded from ``entrypoint``): the final flow run, its logs, the exit code."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.settings import PREFECT_API_URL

    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    with get_client(sync_client=True) as client:
        flow_run = client.create_flow_run(flow, parameters=parameters)
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PREFECT__FLOW_RUN_ID": str(flow_run.id),
           "PREFECT__FLOW_ENTRYPOINT": entrypoint,
           "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "prefect.engine"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(flow_run.id)
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run.id])))
    return flow_run, logs, done


def test_a_failing_document_is_one_warning_not_a_crash(tmp_path):
    """A run Failed "DocumentsFailed" by a bad file: one WARNING line for the file, no ERROR, no
    traceback (the engine raised the state's exception and logged it as a crash), a task run
    that says it is not retried; then a retry that counts what it encoded."""
    from citeline.flows.operations import retry_failed_documents, sync_folder
    from citeline.tasks.document import prepare_document

    folder, db = tmp_path / "docs", str(tmp_path / "index")
    folder.mkdir()
    shutil.copy(EXAMPLES / "04-dropout.md", folder)
    # small: prepared in a group with note.md (its failed task run is document_failed's); large: alone
    (folder / "broken.md").write_bytes(b"caf\xe9 latin-1 bytes\x00\x01")
    (folder / "note.md").write_text("# Note\n\nThe pier office opens at nine.\n")
    (folder / "large.md").write_bytes(b"\x00\x01 not text " * 1000)
    flow_run, logs, done = run_as_worker(tmp_path, "citeline.flows.operations:sync_folder", sync_folder,
                                         folder=str(folder), db=db, model=FAKE)
    assert flow_run.state.name == "DocumentsFailed" and done.returncode == 0, done.stderr[-3000:]
    lines = [(log.level, log.message) for log in logs]
    assert [level for level, _ in lines if level >= 40] == [], lines
    assert "Traceback" not in done.stderr and "Traceback" not in "".join(m for _, m in lines)
    warnings = sorted(m for level, m in lines if level == 30)
    assert len(warnings) == 2 and all('"event": "document.failed"' in w for w in warnings), warnings
    assert '"path": "broken.md"' in warnings[0] and '"path": "large.md"' in warnings[1]
    assert any(m.startswith("Finished in state DocumentsFailed(") for _, m in lines)  # the run's end, as INFO

    # the UI's task run: its retry settings are numbers (a back-off list showed "Retry Delay NaNs")
    assert isinstance(prepare_document.retry_delay_seconds, (int, float))

    (folder / "broken.md").write_text("café, now UTF-8\n")
    (folder / "large.md").write_text("Large no more.\n")
    retried, logs, done = run_as_worker(tmp_path, "citeline.flows.operations:retry_failed_documents",
                                        retry_failed_documents, db=db)
    assert retried.state.is_completed(), done.stderr[-3000:]
    assert "2 encoded" in retried.state.message, retried.state.message  # said "0 encoded"
