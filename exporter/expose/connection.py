"""uvicorn's h11 connection, with a deadline for a request's head.

uvicorn closes idle keep-alive connections, but not one that sends a request line and then its
headers a byte a minute (or nothing at all after connecting): a few hundred such clients hold as
many sockets and file descriptors for ever. Here a connection waiting for a request's head — just
opened, or between two requests — is closed if the head is not complete within HEADER_SECONDS.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_SECONDS = 10.0  # Prometheus sends its request in one packet; a client on a slow link needs far less


class BoundedH11Protocol(H11Protocol):
    header_seconds = HEADER_SECONDS
    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._waiting_for_head() and self._head_deadline is None:
            self._arm()  # a keep-alive connection starts its next request: its head has the same deadline
        super().data_received(data)
        if not self._waiting_for_head():
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._head_deadline = self.loop.call_later(self.header_seconds, self._head_late)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        if self._waiting_for_head() and not self.transport.is_closing():
            self.transport.close()
