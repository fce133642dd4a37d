"""A flow run a command starts sends no heartbeats (flows/runners.py ``command_run``): Prefect joins
the heartbeat thread when the run ends, and the thread sleeps a second at a time, so every run
waited up to a second for nothing that reads the heartbeats. An operator's setting wins; citeline's
own default (runtime/env.py, for the runs of ``citeline serve``) does not."""
from prefect import flow
from prefect.flow_engine import FlowRunEngine

from citeline.flows.runners import HEARTBEAT_VARIABLES, command_run
from citeline.runtime import env


@flow
def nothing() -> None:
    return None


def heartbeat_seconds():
    return FlowRunEngine(flow=nothing).heartbeat_seconds  # what the engine reads to start the thread


def test_a_command_run_has_no_heartbeat_and_the_setting_is_restored_after(monkeypatch):
    for name in HEARTBEAT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    before = heartbeat_seconds()
    assert before is not None  # Prefect 3.9 sends them by default (every 180 s)
    with command_run():
        assert heartbeat_seconds() is None
    assert heartbeat_seconds() == before


def test_citeline_own_heartbeat_default_does_not_count_as_the_operators(monkeypatch):
    """Every command applies runtime/env.py's defaults first, the served runs' 30 s heartbeat
    among them; read as an operator's setting, it gave every command's run the wait back."""
    for name in HEARTBEAT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(env, "_defaulted", set())
    env.apply()
    with command_run():
        assert heartbeat_seconds() is None


def test_an_operator_who_set_the_heartbeat_keeps_it(monkeypatch):
    monkeypatch.setenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "60")
    with command_run():
        assert heartbeat_seconds() is not None


def test_an_operator_who_set_citeline_default_value_keeps_it_too(monkeypatch):
    monkeypatch.setattr(env, "_defaulted", set())
    monkeypatch.setenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", env.DEFAULTS["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"])
    env.apply()
    with command_run():
        assert heartbeat_seconds() is not None
