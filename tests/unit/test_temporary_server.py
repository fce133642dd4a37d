"""Prefect's temporary server as citeline starts it (runtime/temporary_server.py): on a port bound
before the process starts, used by a flow run that finds no API, stopped when unused or at exit,
and its failures said in one line."""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from citeline.runtime import prefect_server, temporary_server
from citeline.schemas.errors import PrefectServerNotStarted
from testkit import marked

ROOT = Path(__file__).resolve().parents[2]
FAKE_CLI = ROOT / "tests" / "fixtures" / "fake_cli.py"
EXAMPLES = ROOT / "examples" / "docs"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A Prefect home of the test's own, set where the server reads it: the environment, and
    Prefect's settings, which win over it (as for Prefect's own temporary server) and which the
    session's harness (tests/fixtures/testkit.py) points at its own server and database."""
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL, PREFECT_API_URL, PREFECT_HOME, temporary_settings

    home = tmp_path / "prefect"
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(home))
    with temporary_settings(updates={PREFECT_HOME: home, PREFECT_API_URL: None,
                                     PREFECT_API_DATABASE_CONNECTION_URL: f"sqlite+aiosqlite:///{home}/prefect.db"}):
        yield home


def health(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=2) as response:
            return json.loads(response.read()) is True
    except OSError:
        return False


def test_the_server_answers_on_its_own_port_and_is_gone_after_stop(home):
    server = temporary_server.TemporaryServer(own_session=False)
    try:
        assert not server.used
        url = server.wait_ready()
        assert url == server.api_url and server.used and health(url)
        assert (home / "prefect.db").exists()  # its history is kept in Prefect's home
    finally:
        server.stop()
    assert server._process.poll() is not None and not health(server.api_url)
    assert block_types(home) == 0  # no UI, no block used: none registered (0.2-1.0 s of each start)


def test_an_operator_who_asks_for_block_registration_gets_it(home):
    from prefect.settings import (PREFECT_API_BLOCKS_REGISTER_ON_START, PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION,
                                  temporary_settings)

    with temporary_settings(updates={PREFECT_API_BLOCKS_REGISTER_ON_START: True,
                                     PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION: True}):
        server = temporary_server.TemporaryServer(own_session=False)
    try:
        server.wait_ready(timeout_s=120)
    finally:
        server.stop()
    assert block_types(home) > 0


def block_types(home: Path) -> int:
    with sqlite3.connect(home / "prefect.db") as db:
        return db.execute("select count(*) from block_type").fetchone()[0]


def test_a_server_that_exits_is_said_with_its_exit_code(home):
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_DATABASE_CONNECTION_URL: "postgresql+asyncpg://nobody@127.0.0.1:1/none"}):
        server = temporary_server.TemporaryServer(own_session=False)
    try:
        with pytest.raises(PrefectServerNotStarted, match=r"exited with code \d+"):
            server.wait_ready(timeout_s=120)
    finally:
        server.stop()


def test_a_server_that_does_not_answer_in_time_is_stopped_and_said(home):
    server = temporary_server.TemporaryServer(own_session=False)
    with pytest.raises(PrefectServerNotStarted, match=r"did not answer within 0 s \(PREFECT_SERVER_EPHEMERAL_STARTUP"):
        server.wait_ready(timeout_s=0.01)
    assert server._process.poll() is not None


def test_an_early_server_no_run_used_is_stopped_and_a_used_one_kept(home, monkeypatch):
    monkeypatch.delenv(prefect_server.ENV_MODE, raising=False)
    monkeypatch.setattr(temporary_server, "_server", [])
    temporary_server.start_early()
    [early] = temporary_server._server
    temporary_server.discard_unused()
    assert temporary_server._server == [] and early._process.poll() is not None

    used = temporary_server.start()
    try:
        used.wait_ready()
        temporary_server.discard_unused()
        assert temporary_server._server == [used] and health(used.api_url)
    finally:
        used.stop()


@pytest.mark.parametrize("setting", [("PREFECT_API_URL", "http://127.0.0.1:9/api"),
                                     (prefect_server.ENV_MODE, prefect_server.AUTO)])
def test_nothing_starts_early_where_the_run_uses_another_server(home, monkeypatch, setting):
    monkeypatch.setattr(temporary_server, "_server", [])
    monkeypatch.setenv(*setting)
    temporary_server.start_early()
    assert temporary_server._server == []


def test_a_sync_runs_on_the_server_it_started_early_and_leaves_nothing_running(tmp_path):
    """One server for the whole command: started before the flow's imports, the flow run recorded
    in Prefect's home, the process gone when the command exits."""
    docs = tmp_path / "docs"
    shutil.copytree(EXAMPLES, docs)
    home = tmp_path / "prefect"
    env = {**{k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", prefect_server.ENV_MODE)},
           "PREFECT_HOME": str(home), "CITELINE_HOME": str(tmp_path / "citeline")}
    done = subprocess.run([sys.executable, str(FAKE_CLI), "index", str(docs), "--db", str(tmp_path / "db"),
                           "--model", "fake/hashed-bag-of-words", "--no-progress", "-v"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    started = [line for line in done.stderr.splitlines() if "temporary server on http" in line]
    assert len(started) == 1 and "Starting temporary server" not in done.stderr  # Prefect started none of its own
    address = re.search(r"on (http://127\.0\.0\.1:\d+)", started[0]).group(1)
    with sqlite3.connect(home / "prefect.db") as db:
        runs = db.execute("select name, state_type from flow_run").fetchall()
    assert [(name.split(" ")[0], state) for name, state in runs] == [("index", "COMPLETED")]
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(address + "/api/health", timeout=2)


LOADED = """
import json, sys
from citeline.runtime import env, temporary_server
env.apply()
from prefect import flow, task
from citeline.flows.runners import command_run

@task
def same(value: int) -> int:
    return value

@flow
def echo(value: int) -> int:
    return same(value)

loaded = lambda: [name for name in temporary_server.RUN_IMPORTS if name in sys.modules]
before = loaded()
with command_run():
    waited = loaded()
    echo(1)
print(json.dumps({"before": before, "waited": waited, "run": loaded()}))
"""


def test_the_wait_for_the_server_imports_what_the_flow_run_would_and_nothing_else_does(home, tmp_path):
    """A fresh process waiting for its temporary server imports the run's modules then (its main
    thread idle otherwise); with a server already answering, the run itself imports them all."""
    running = temporary_server.TemporaryServer(own_session=False)
    try:
        base = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", prefect_server.ENV_MODE)}
        reports = {}
        for label, api in (("waiting", None), ("server running", running.wait_ready())):
            done = subprocess.run([sys.executable, "-c", LOADED], capture_output=True, text=True, timeout=300,
                                  env={**base, "PREFECT_HOME": str(home), "CITELINE_HOME": str(tmp_path),
                                       **({"PREFECT_API_URL": api} if api else {})})
            assert done.returncode == 0, done.stderr
            reports[label] = json.loads(done.stdout.splitlines()[-1])
    finally:
        running.stop()
    every = list(temporary_server.RUN_IMPORTS)
    assert reports["waiting"] == {"before": [], "waited": every, "run": every}
    assert reports["server running"] == {"before": [], "waited": [], "run": every}


def test_the_servers_connections_send_without_waiting_for_acknowledgements():
    """Each connection the temporary server accepts has TCP_NODELAY, as on uvicorn's own --port;
    wrapped as ``uvicorn --fd`` wraps a descriptor (a Unix socket), none had, and every response
    waited 40-44 ms for the client's delayed acknowledgement."""
    import socket
    import threading
    import time

    from citeline.runtime import prefect_api_process

    def nodelay_of_a_served_connection(listener_of) -> int:
        bound = socket.socket()
        bound.bind(("127.0.0.1", 0))
        bound.listen()
        serving, listener = prefect_api_process.server(os.dup(bound.fileno()), app=f"{__name__}:tiny_app")
        listener = listener_of(listener)
        thread = threading.Thread(target=serving.run, kwargs={"sockets": [listener]}, daemon=True)
        thread.start()
        try:
            with socket.create_connection(bound.getsockname(), timeout=10) as client:
                client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                assert b"200 OK" in client.recv(4096)
                while not serving.server_state.connections:
                    time.sleep(0.01)
                (connection,) = serving.server_state.connections
                return connection.transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        finally:
            serving.should_exit = True
            thread.join(10)
            bound.close()

    assert nodelay_of_a_served_connection(lambda listener: listener) != 0
    as_uvicorn_fd_wraps_it = lambda listener: socket.fromfd(listener.detach(), socket.AF_UNIX, socket.SOCK_STREAM)
    assert nodelay_of_a_served_connection(as_uvicorn_fd_wraps_it) == 0


def tiny_app():
    async def app(scope, receive, send):
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
            await send({"type": "http.response.body", "body": b"ok"})
    return app


def test_modules_in_the_commands_folder_do_not_replace_the_servers(home, tmp_path, monkeypatch):
    """A user's folder (the command's working folder) may hold files named as the server's modules."""
    for name in ("uvicorn", "prefect", "fastapi"):
        (tmp_path / f"{name}.py").write_text("raise SystemExit('imported from the working folder')\n")
    monkeypatch.chdir(tmp_path)
    server = temporary_server.TemporaryServer(own_session=False)
    try:
        assert health(server.wait_ready(timeout_s=120))
    finally:
        server.stop()


def test_a_server_stopped_while_it_imports_ends_at_once(tmp_path):
    """A sync with nothing to write stops the server it started early, mostly while Prefect's
    server is still being imported; imported inside uvicorn's signal capture, the process
    finished the import first (1-3 s of every no-op sync)."""
    import signal
    import socket
    import time

    (tmp_path / "slow_app.py").write_text("import time\ntime.sleep(60)\ndef create():\n    pass\n")
    bound = socket.socket()
    bound.bind(("127.0.0.1", 0))
    bound.listen()
    process = subprocess.Popen(
        [sys.executable, "-c", f"from citeline.runtime.prefect_api_process import main; main({bound.fileno()}, 'slow_app:create')"],
        pass_fds=(bound.fileno(),), env={**os.environ, "PYTHONPATH": str(tmp_path)})
    bound.close()
    try:
        time.sleep(1.5)  # inside the import
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == -signal.SIGTERM  # not after the 60 s import
    finally:
        process.kill()


def test_the_wait_gives_its_idle_core_to_meanwhile_before_the_server_answers(home):
    """The port listens before uvicorn serves it, so a health check's read waits for the server;
    ``meanwhile`` (the sync's model warm-up) must not wait behind a long first look, and a
    server already answering runs none of it."""
    import time

    server = temporary_server.TemporaryServer(own_session=False)
    seen = []
    try:
        asked = time.monotonic()
        server.wait_ready(meanwhile=lambda: seen.append(time.monotonic() - asked))
        server.wait_ready(meanwhile=lambda: seen.append("again"))
    finally:
        server.stop()
    [after_s] = seen  # once: the second wait found it answering
    assert after_s < 0.5  # the first look is short: not the 1 s health check's timeout


def test_a_flow_runs_first_call_builds_only_the_routers_it_uses():
    """``/admin/version``, a flow run's first call, sits in Prefect's second-last router; FastAPI
    builds every router a request passes on its way. With the flow run's routers first it builds
    those alone, and no request can match another route: their prefixes are no other route's."""
    from prefect.server.api.server import create_app
    from starlette.testclient import TestClient

    from citeline.runtime import prefect_api_process

    app = create_app(ephemeral=True, ignore_cache=True)
    api = next(route.app for route in app.router.routes if getattr(route, "path", None) == "/api")
    included = lambda: [r for r in api.router.routes if hasattr(r, "original_router")]
    before = included()
    assert prefect_api_process.flow_run_routers_first(app)
    after = included()
    moved = prefect_api_process.FLOW_RUN_PREFIXES
    assert sorted(map(id, after)) == sorted(map(id, before))
    assert [r.original_router.prefix for r in after[:len(moved)]] == [
        r.original_router.prefix for r in before if r.original_router.prefix in moved]
    others = [f"{r.original_router.prefix}{route.path}" for r in after[len(moved):] for route in r.original_router.routes]
    assert not [path for path in others if any(path == p or path.startswith(p + "/") for p in moved)]

    assert TestClient(app).get("/api/admin/version").status_code == 200
    built = {r.original_router.prefix: r._effective_candidates_version is not None for r in after}
    assert built["/admin"] and not any(done for prefix, done in built.items() if prefix not in moved)


REFUSED_INDEX = """
import atexit, sys
from citeline.runtime import temporary_server
atexit.register(lambda: print("servers at exit:", len(temporary_server._server)))  # runs before the server's stop
sys.argv = ["citeline", "index", sys.argv[1], "--db", sys.argv[2], "--budget", "100", "--overlap", "200"]
from citeline.cli.main import main
main()
"""


def test_an_index_command_starts_its_server_first_and_one_refused_for_its_arguments_leaves_none(tmp_path):
    """`citeline index` starts its server before its own imports and checks; one refused for its
    arguments (exit 2) stops it at exit like any other, and nothing it started runs on."""
    import secrets
    import time

    mark = secrets.token_hex(8)
    env = {**{k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", prefect_server.ENV_MODE)},
           "PREFECT_HOME": str(tmp_path / "prefect"), "CITELINE_HOME": str(tmp_path / "citeline"),
           "CITELINE_TEST_MARK": mark}
    done = subprocess.run([sys.executable, "-c", REFUSED_INDEX, str(EXAMPLES),
                           str(tmp_path / "db")], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--overlap (200) must be smaller than --budget (100)" in done.stderr
    assert "servers at exit: 1" in done.stdout

    deadline = time.monotonic() + 15
    while marked(mark) and time.monotonic() < deadline:  # the watchdog leaves as soon as it has looked
        time.sleep(0.1)
    assert not marked(mark), marked(mark)
