"""A stop request seen after every document has ended still stops the re-index before its switch.

CI once saw Ctrl-C during a re-index end as "10 documents failed" (exit 1, not 130): the signal
made every running document raise Stopped within one poll of the wait, which then found nothing
left to wait for and never asked whether a stop had been requested.
"""
import signal
import threading

import pytest
from prefect import flow, task

from citeline.flows.reindex import wait_unless_stopped
from citeline.schemas import interrupt

pytestmark = pytest.mark.usefixtures("prefect_harness")


@task
def ends_at_once(n: int) -> int:
    return n


@pytest.fixture
def own_stop_flag(monkeypatch):
    """A stop flag of this test's own, so the one SIGINT would set is put back afterwards."""
    monkeypatch.setattr(interrupt, "_requested", threading.Event())
    monkeypatch.setattr(interrupt, "_signal", [])


@pytest.mark.parametrize("asked", [False, True])
def test_the_wait_says_stopped_when_asked_even_if_every_document_has_ended(own_stop_flag, asked):
    @flow
    def run() -> bool:
        futures = [ends_at_once.submit(n) for n in range(4)]
        for future in futures:
            future.wait()
        if asked:
            interrupt.request(signal.SIGINT)
        return wait_unless_stopped(futures)

    assert run() is (not asked)
