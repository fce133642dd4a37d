"""Bounds on what a connection to ``citeline api`` may hold: time to send a request's head, and
how many connections are open at once.

uvicorn's h11 protocol closes a connection idle *between* requests (``timeout_keep_alive``),
but one that never finishes its first head was kept for ever: any byte cancels that timer,
so a client trickling a header line every 10 s held its connection, and 20,200 silent ones
(before any token check) took every file descriptor and /health with them.
"""
from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

KEEP_ALIVE_S = 5  # idle time between requests (uvicorn's default, said here)
# The defaults (citeline/cli/api_command.py's --header-timeout and --max-connections): 10 s from connecting
# (or the last response) to a request's complete head; 1000 connections, below the usual 1024 descriptors.


def bounded_protocol(header_timeout_s: float, max_connections: int):
    """uvicorn's h11 protocol with a deadline on every request head and a cap on connections."""

    class BoundedH11(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.abort()  # refused before it holds anything: the descriptor goes at once
                return
            self._await_head()

        def connection_lost(self, exc) -> None:
            self._head_received()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the head is complete: the deadline is met
                self._head_received()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._await_head()  # the next request's head, on its own clock

        def _await_head(self) -> None:
            self._head_received()
            self._deadline = self.loop.call_later(header_timeout_s, self._too_slow)

        def _head_received(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return BoundedH11
