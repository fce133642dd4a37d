"""The local Prefect server citeline's commands share (runtime/prefect_server.py): started once
(by ``citeline server start``, or in ``CITELINE_PREFECT_SERVER=auto`` mode by the first command
that runs a flow), found by the next command (no temporary server of its own), its runs kept in
its history, left running by design after ``kill -9`` of a command, stopped when idle or told
to. Each test has a CITELINE_HOME of its own."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from testkit import EXAMPLES, ROOT

pytestmark = [pytest.mark.slow]
FAKE_CLI = str(ROOT / "tests" / "fixtures" / "fake_cli.py")


def default_env(home, **extra) -> dict[str, str]:
    """A command's environment as a user's shell gives it: no Prefect API, no server mode set."""
    dropped = ("PREFECT_API_URL", "CITELINE_PREFECT_SERVER")
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, "CITELINE_HOME": str(home), **extra}


def citeline(home, *args, fake=False, env=None, **popen):
    env = env or default_env(home)
    argv = [sys.executable, FAKE_CLI, *args] if fake else [sys.executable, "-m", "citeline", *args]
    return subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, **popen)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not open(f"/proc/{pid}/stat").read().split(") ", 1)[1].startswith("Z")


def flow_runs(api: str) -> list[dict]:
    request = urllib.request.Request(api + "/flow_runs/filter", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "citeline-home"
    yield home
    citeline(home, "server", "stop")  # never leak a server, pass or fail


def test_a_started_server_is_reused_keeps_the_runs_and_survives_kill_9_of_a_command(home, tmp_path):
    started = citeline(home, "server", "start", "--idle", "600")
    assert started.returncode == 0, started.stderr
    state = json.loads((home / "prefect" / "server.json").read_text())
    assert "running: " + state["url"] in citeline(home, "server", "status").stdout

    docs = tmp_path / "docs"
    shutil.copytree(EXAMPLES, docs)
    db = str(tmp_path / "db")
    done = citeline(home, "index", str(docs), "--db", db, "--model", "fake/hashed-bag-of-words", "--no-progress",
                    "-v", fake=True)
    assert done.returncode == 0, done.stderr
    assert "temporary server on http" not in done.stderr  # it ran against the citeline server
    assert any(run["name"].startswith("index ") for run in flow_runs(state["url"]))  # kept in its history

    env = default_env(home)
    victim = subprocess.Popen([sys.executable, FAKE_CLI, "index", str(docs), "--db", db, "--verify", "--no-progress"],
                              env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(3)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    # by design the shared server outlives a killed command (it stops when idle, or on `server stop`)
    assert alive(state["pid"]) and alive(state["server_pid"])
    again = citeline(home, "index", str(docs), "--db", db, "--no-progress", fake=True)
    assert again.returncode == 0, again.stderr

    assert citeline(home, "server", "stop").returncode == 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (alive(state["pid"]) or alive(state["server_pid"])):
        time.sleep(0.2)
    assert not alive(state["pid"]) and not alive(state["server_pid"])
    assert json.loads(citeline(home, "server", "status", "--json").stdout)["running"] is False


def server_lines(stderr: str) -> list[dict]:
    events = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    return [event for event in events if event.get("event", "").startswith("server.")]


def test_in_auto_mode_the_first_command_that_runs_a_flow_starts_the_server_and_the_next_ones_use_it(home, tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(EXAMPLES, docs)
    edited = sorted(docs.glob("*.md"))[0]
    db = str(tmp_path / "db")
    index = ("index", str(docs), "--db", db, "--model", "fake/hashed-bag-of-words", "--no-progress", "-v")

    first = citeline(home, *index, fake=True)  # the default: Prefect's temporary server
    assert first.returncode == 0, first.stderr
    assert "temporary server on http" in first.stderr and not (home / "prefect" / "server.json").exists()
    auto = default_env(home, CITELINE_PREFECT_SERVER="auto")
    unchanged = citeline(home, *index, fake=True, env=auto)  # nothing to write: no flow run, no server
    assert unchanged.returncode == 0, unchanged.stderr
    assert server_lines(unchanged.stderr) == [] and not (home / "prefect" / "server.json").exists()

    edited.write_text(edited.read_text() + "\n\nA paragraph added after the first sync.\n")
    second = citeline(home, *index, fake=True, env=auto)
    assert second.returncode == 0, second.stderr
    state = json.loads((home / "prefect" / "server.json").read_text())
    # one line says a process now outlives the command, where its UI is and how to stop it
    [started] = server_lines(second.stderr)
    assert (started["event"], started["ui"], started["stop"], started["without"]) == (
        "server.started", state["ui"], "citeline server stop", "CITELINE_PREFECT_SERVER=off")
    assert "temporary server on http" not in second.stderr
    assert alive(state["pid"]) and alive(state["server_pid"])
    assert [run["state_type"] for run in flow_runs(state["url"]) if run["name"].startswith("index ")] == ["COMPLETED"]

    edited.write_text(edited.read_text() + "\n\nAnd a second one.\n")
    third = citeline(home, *index, fake=True, env=auto)
    assert third.returncode == 0, third.stderr
    assert server_lines(third.stderr) == [] and "temporary server on http" not in third.stderr
    assert json.loads((home / "prefect" / "server.json").read_text())["pid"] == state["pid"]  # the same server
    assert [run["state_type"] for run in flow_runs(state["url"]) if run["name"].startswith("index ")] == [
        "COMPLETED", "COMPLETED"]


def test_a_server_that_cannot_start_leaves_the_command_on_a_temporary_server(home, tmp_path):
    """Auto mode's start failing (here the supervisor cannot write server.json) costs the sync
    nothing but the warning: the run goes on Prefect's temporary server, its documents indexed
    (the command failed before: the start's error ended it)."""
    docs = tmp_path / "docs"
    shutil.copytree(EXAMPLES, docs)
    db = str(tmp_path / "db")
    done = citeline(home, "index", str(docs), "--db", db, "--model", "fake/hashed-bag-of-words", "--no-progress",
                    "-v", fake=True,
                    env=default_env(home, CITELINE_PREFECT_SERVER="auto", CITELINE_FAILPOINT="server.state:enospc"))
    assert done.returncode == 0, done.stderr
    [line] = server_lines(done.stderr)
    assert line["event"] == "server.not_started" and line["instead"] == "Prefect's temporary server"
    assert "No space left on device (failpoint server.state)" in line["reason"]
    assert "temporary server on http" in done.stderr
    assert processes_with_home(home / "prefect" / "home") == []  # the failed start left nothing running
    listed = citeline(home, "status", "--db", db, "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)["documents"], listed.stderr


def test_an_idle_server_stops_by_itself(home):
    assert citeline(home, "server", "start", "--idle", "10").returncode == 0
    state = json.loads((home / "prefect" / "server.json").read_text())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (alive(state["pid"]) or alive(state["server_pid"])):
        time.sleep(0.5)
    assert not alive(state["pid"]) and not alive(state["server_pid"])
    assert not (home / "prefect" / "server.json").exists()


def processes_with_home(prefect_home) -> list[str]:
    """Every live process whose environment names ``prefect_home``: the supervisor's children."""
    needle = f"PREFECT_HOME={prefect_home}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and needle in (proc / "environ").read_bytes().split(b"\0") and alive(int(proc.name)):
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:  # ended while we looked
            continue
    return found


def test_a_server_json_the_disk_refuses_stops_the_server_it_started(home):
    """The supervisor failed to write server.json (a full disk) after starting
    `prefect server start`, ended, and left that server running for ever."""
    env = default_env(home, CITELINE_FAILPOINT="server.state:enospc")
    started = subprocess.run([sys.executable, "-m", "citeline", "server", "start"], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    assert started.returncode == 1
    assert started.stderr.strip().splitlines() == [
        f"Error: the citeline Prefect server did not start: cannot write {home / 'prefect' / 'server.json'}: "
        f"No space left on device (failpoint server.state); see {home / 'prefect' / 'server.log'}"]
    assert processes_with_home(home / "prefect" / "home") == []
    assert not (home / "prefect" / "server.json").exists()


def test_modules_in_the_commands_folder_do_not_replace_the_servers(home, tmp_path):
    """A user's folder (where the command runs) may hold files named as the supervisor's and the
    server's modules; the console script, as a user runs it, starts both all the same."""
    folder = tmp_path / "documents"
    folder.mkdir()
    for name in ("citeline", "prefect", "uvicorn"):
        (folder / f"{name}.py").write_text("raise SystemExit('imported from the working folder')\n")
    script = str(Path(sys.executable).with_name("citeline"))
    started = subprocess.run([script, "server", "start", "--idle", "600"], env=default_env(home), cwd=folder,
                             capture_output=True, text=True, timeout=300)
    assert started.returncode == 0, started.stderr
    assert flow_runs(json.loads((home / "prefect" / "server.json").read_text())["url"]) == []
