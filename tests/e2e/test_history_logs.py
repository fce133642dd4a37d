"""What docs/operations.md (section 6) says of Prefect 3.9's history, on `prefect server start`
with no vacuum of runs or orphans: deleting a flow run through the API deletes its logs; its
events stay (only their age removes them)."""
import time
from datetime import datetime, timezone

import pytest

from prefect_process import prefect_server

pytestmark = pytest.mark.slow


def wait_until(check, seconds: float, why: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, why
        time.sleep(1)


def test_deleting_a_flow_run_deletes_its_logs_but_not_its_events(tmp_path):
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import LogCreate
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.events.filters import EventAnyResourceFilter, EventFilter
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Running

    @flow(name="history-probe")
    def probe():
        pass

    # "events" only: no orphan vacuum, no flow-run vacuum; what deletes the logs is the deletion
    with prefect_server(tmp_path / "home", PREFECT_SERVER_SERVICES_DB_VACUUM_ENABLED="events") as (url, _), \
            temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        run = client.create_flow_run(probe)
        client.set_flow_run_state(run.id, Running())
        client.create_logs([LogCreate(name="probe", level=20, message=f"line {i}", timestamp=datetime.now(timezone.utc),
                                      flow_run_id=run.id) for i in range(3)])
        logs = LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id]))
        events = EventFilter(any_resource=EventAnyResourceFilter(id=[f"prefect.flow-run.{run.id}"]))
        assert len(client.read_logs(log_filter=logs)) == 3
        wait_until(lambda: client.read_events(events, limit=5).events, 60, "the run's state event was never stored")

        client.delete_flow_run(run.id)
        wait_until(lambda: not client.read_logs(log_filter=logs), 60, "the deleted run's logs are still there")
        assert client.read_events(events, limit=5).events, "the run's events went with it"
