"""A `citeline api` serving an index on this machine, found by that index's location.

A service announces itself in ``$CITELINE_HOME/services/`` (one small JSON file per index, removed
when it stops); ``citeline search`` and ``ask`` look there first and, when the service answers its
``/health``, send the question to it: a cold command then costs an HTTP round trip instead of
loading the model, as a docker or ollama client talks to its daemon. Standard library only, so
finding out costs the CLI no import it would not make anyway.
"""
from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from citeline.runtime.prefect_server import ENV_HOME, alive

ENV_TOKEN = "CITELINE_API_TOKEN"
HEALTH_TIMEOUT_S = 0.5
# A question the service takes long over is still answered there: it is the faster path.
QUESTION_TIMEOUT_S = 300.0


def services_folder() -> Path:
    return Path(os.environ.get(ENV_HOME) or Path.home() / ".citeline") / "services"


def index_key(db: str) -> str:
    """One name per index, whatever spelling reached it (``./idx``, ``idx/``, its absolute path).

    >>> index_key("s3://bucket/index") == index_key("s3://bucket/index/")
    True
    """
    where = db.rstrip("/") if "://" in db else os.path.realpath(db)
    return hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def announce(db: str, url: str, model: str, token: bool) -> Path:
    """Say that ``url`` serves ``db`` (written whole: a reader never sees half a file)."""
    folder = services_folder()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{index_key(db)}.json"
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({"url": url, "db": db, "pid": os.getpid(), "model": model, "token": token}))
    os.replace(partial, path)
    return path


def withdraw(path: Path) -> None:
    """Remove the announcement, unless another service has since announced the same index."""
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


@dataclass(frozen=True)
class Service:
    url: str
    model: str
    token: str | None

    def ask(self, body: dict) -> dict:
        return self._call("ask", json.dumps(body).encode())

    def search(self, params: list[tuple[str, str]]) -> dict:
        return self._call("search?" + urllib.parse.urlencode(params), None)

    def _call(self, route: str, body: bytes | None) -> dict:
        request = urllib.request.Request(self.url + route, data=body, method="POST" if body is not None else "GET")
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(request, timeout=QUESTION_TIMEOUT_S) as response:
            return json.loads(response.read())


def find(db: str) -> Service | None:
    """The service announced for ``db`` when its process lives and its ``/health`` says it is
    ready; else None (a stale announcement, of a service killed with -9, is removed)."""
    path = services_folder() / f"{index_key(db)}.json"
    try:
        found = json.loads(path.read_text())
        pid, url = int(found["pid"]), str(found["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not alive(pid):
        try:
            path.unlink()
        except OSError:
            pass
        return None
    token = os.environ.get(ENV_TOKEN) if found.get("token") else None
    if found.get("token") and not token:
        return None  # it asks for a token this shell does not have: answer here
    try:
        with urllib.request.urlopen(url + "health", timeout=HEALTH_TIMEOUT_S) as response:
            health = json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    if not health.get("ready"):
        return None
    return Service(url, str(health.get("model", found.get("model", ""))), token)


def request_filters(filters) -> dict:
    """``filters`` (a ``Filters``) as the service's request fields: ``path``, ``type``, ``since``."""
    since = filters.modified_since.isoformat() if filters.modified_since else None
    return {"path": list(filters.paths), "type": list(filters.types), "since": since}

