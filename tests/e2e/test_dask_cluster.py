"""A real cluster: `dask scheduler` and two `dask worker` processes on loopback, started
from the installed distributed package as an operator would, and a sync run through them.

The workers are started with none of citeline's process settings (no HF_HUB_OFFLINE, as a
worker on another machine would be): the prepare tasks apply them before the model loads.
They share the flow's Prefect server (``PREFECT_API_URL``, the test session's), so the task
runs they execute are the flow's, named in its UI; a worker without one starts a temporary
server of its own and its task runs are lost to the flow's UI. They need one more setting, ``DASK_DISTRIBUTED__WORKER__DAEMON=False``: the nanny
starts each worker as a daemonic process by default (distributed/nanny.py reads
``distributed.worker.daemon``), and a daemonic process may not start the child process an
isolated extractor (PDF, Office, OCR) runs in.
"""
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.runtime.env import DEFAULTS
from testkit import free_port

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

NOTES = ["Dropout zeroes activations at random while training.",
         "Weight decay shrinks every weight a little at each step.",
         "A warm-up raises the learning rate over the first steps.",
         "Early stopping ends training when validation loss rises."]


def api_url() -> str:
    """The test session's Prefect server, which the flow and the workers share."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


def worker_env() -> dict[str, str]:
    """This environment less citeline's defaults, with the shared Prefect server and non-daemonic workers."""
    env = {k: v for k, v in os.environ.items() if k not in DEFAULTS}
    return {**env, "PREFECT_API_URL": api_url(), "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}


@contextmanager
def cluster(logs: Path, workers: int = 2):
    """A scheduler and ``workers`` workers (one thread each), every one in its own process group;
    yields the scheduler's address and the groups, and kills every group on the way out."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    commands = [["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]]
    commands += [["worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard", "--name", f"w{i}"]
                 for i in range(workers)]
    processes = []
    try:
        for i, command in enumerate(commands):
            with open(logs / f"dask-{i}.log", "wb") as log:
                processes.append(subprocess.Popen([sys.executable, "-m", "dask", *command], env=worker_env(),
                                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        wait_for_workers(address, workers, processes)
        yield address, [p.pid for p in processes]
    finally:
        for process in processes:
            stop_group(process)


def wait_for_workers(address: str, workers: int, processes, timeout_s: float = 180) -> None:
    from distributed import Client

    deadline = time.monotonic() + timeout_s
    while True:
        assert all(p.poll() is None for p in processes), "a dask process exited at start (see dask-*.log)"
        try:
            with Client(address, timeout=10) as client:
                client.wait_for_workers(workers, timeout=max(1.0, deadline - time.monotonic()))
                return
        except OSError:
            assert time.monotonic() < deadline, f"no scheduler at {address}"
            time.sleep(1)


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the process's whole group (nanny, worker, extractor children), SIGKILL to what is left after 10 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while group_members(process.pid) and time.monotonic() < deadline:
            process.poll()  # reap the leader; the others are reaped by init
            time.sleep(0.2)
        if not group_members(process.pid):
            return


def group_members(pgid: int) -> list[str]:
    """The live processes (zombies aside) of a process group, as "pid name"."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, rest = stat.read_text().split(" (", 1)
        except OSError:  # gone meanwhile
            continue
        name, fields = rest.rsplit(") ", 1)
        state, _, group = fields.split()[:3]
        if int(group) == pgid and state != "Z":
            members.append(f"{pid} {name}")
    return members


def worker_settings(address: str) -> dict:
    """What each worker process's environment says now."""
    from distributed import Client

    with Client(address, timeout=30) as client:
        return client.run(lambda: {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")})


def index(folder: Path, db: Path, *extra: str) -> str:
    env = {**os.environ, "PREFECT_API_URL": api_url()}
    done = subprocess.run([sys.executable, "-m", "citeline", "index", str(folder), "--db", str(db),
                           "--no-progress", *extra], capture_output=True, text=True, timeout=1200, env=env)
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-3000:]  # 3: the run finished, bad.md failed
    return done.stdout


def failed_task_runs(folder: Path) -> list[tuple[str, str]]:
    """Every failed task run of the syncs of ``folder`` (flow runs named ``index FOLDER``): its
    name and message. The server is the session's: other modules' runs (test_dask's fail a
    bad.md too) are on it."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterName

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[f"index {folder}"])))
        these = FlowRunFilter(id=FlowRunFilterId(any_=[r.id for r in runs]))
        return [(t.name, t.state.message) for t in client.read_task_runs(flow_run_filter=these)
                if t.state and t.state.is_failed()]


def rows(db: Path) -> list[tuple[str, str]]:
    return sorted((r["chunk_id"], r["content"]) for r in Store(str(db)).chunk_rows(["chunk_id", "content"]))


def test_a_sync_through_a_scheduler_and_two_workers_matches_in_process(docs, make, tmp_path):
    for i, text in enumerate(NOTES):
        (docs / f"note-{i}.md").write_text(f"# Note {i}\n\n{text}\n")
    (docs / "report.pdf").write_bytes(make.text_pdf(1))  # an isolated extractor: a child of the worker
    (docs / "bad.md").write_bytes(b"caf\xe9 latin-1\x00\x01")
    here, there = tmp_path / "threads", tmp_path / "cluster"
    threads_out = index(docs, here)
    with cluster(tmp_path) as (address, groups):
        cluster_out = index(docs, there, "--dask", address)
        seen = worker_settings(address)
    assert [group_members(g) for g in groups] == [[]] * 3  # the scheduler, nannies, workers and their children
    assert threads_out == cluster_out and "FAILED bad.md [extract] undecodable" in cluster_out
    assert "indexed 7, failed 1" in cluster_out  # two examples, four notes, the PDF
    assert rows(there) == rows(here) and len(rows(there)) > 0
    assert check_index(Store(str(there))) == []
    bad = [message for name, message in failed_task_runs(docs) if name == "bad.md"]  # in-process run's, cluster run's
    assert len(bad) == 2 and all(m.startswith("extract: undecodable") for m in bad), bad
    assert len(seen) == 2 and all(s == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"} for s in seen.values())
