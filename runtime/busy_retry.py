"""Answer a request again, in the server, while its app answers 503 (SQLite was busy).

Prefect's server answers 503 when SQLite refuses a write (``SQLITE_BUSY``: a transaction that read
first cannot write after another connection did, whatever the busy timeout), and its client waits
2 s, then 4, 8 … before each new try. On the temporary server a flow run's requests meet the
server's own services writing the events of the run before, and a second `Index.sync` in one
process waited 1.9–2.6 s, then 3.8 s more, in about half the tries once the requests stopped
waiting 44 ms each (docs/benchmarks.md section 25). Retried here after 20 ms, 50 ms … (the lock is
held for milliseconds), the same request, its body replayed: what the client would have sent again.
Past the last wait the 503 goes to the client, whose own back-off takes over as before.
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[dict, Receive, Send], Awaitable[None]]

WAITS_S = (0.02, 0.05, 0.1, 0.2, 0.4)
BUSY = 503


class RetryWhenBusy:
    """``app`` with each HTTP request that it answers 503 tried again after each of ``waits_s``."""

    def __init__(self, app: ASGIApp, waits_s: tuple[float, ...] = WAITS_S):
        self.app = app
        self.waits_s = waits_s

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan, websockets: as they are
            await self.app(scope, receive, send)
            return
        body = await _whole_body(receive)
        if body is None:  # the client left before its request was read
            return
        for wait_s in (*self.waits_s, None):
            held: list[Message] = []
            # A fresh scope each try: routers and middleware write into it (a mount's path, state).
            fresh = {**scope, "state": dict(scope.get("state", {}))}
            try:
                await self.app(fresh, _replaying(body, receive), _holding_busy(send, held, last=wait_s is None))
            except Exception:
                # Starlette raises the error again once its handler answered (the 503 held here),
                # for the server to log; uvicorn's log filters Prefect's busy errors out anyway.
                if not held:
                    raise
            if not held:
                return
            await asyncio.sleep(wait_s)


async def _whole_body(receive: Receive) -> bytes | None:
    parts = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """The request's body once, then the client's own messages (its disconnect)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def _holding_busy(send: Send, held: list[Message], last: bool) -> Send:
    """``send``, except a 503 response (start and body), kept in ``held`` unless this try is the last."""

    async def holding(message: Message) -> None:
        if held or (not last and message["type"] == "http.response.start" and message["status"] == BUSY):
            held.append(message)
        else:
            await send(message)

    return holding
