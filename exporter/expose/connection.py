"""uvicorn's h11 connection, with a deadline for a request's head (and, set by serve, for a TLS handshake).

uvicorn closes idle keep-alive connections, but not one that sends a request line and then its
headers a byte a minute (or nothing at all after connecting): a few hundred such clients hold as
many sockets and file descriptors for ever. Here a connection waiting for a request's head — just
opened, or between two requests — is closed if the head is not complete within HEADER_SECONDS. A TLS
connection's handshake comes before this protocol sees it: serve gives the listener the same deadline
(asyncio's ssl_handshake_timeout, 60 s by default, held a socket a minute per slow client).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import ClassVar

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_SECONDS = 10.0  # Prometheus sends its request in one packet; a client on a slow link needs far less


class BoundedH11Protocol(H11Protocol):
    header_seconds = HEADER_SECONDS  # also the TLS handshake's deadline (serve passes it to the listener)
    _head_deadline: asyncio.TimerHandle | None = None
    _open: ClassVar[weakref.WeakSet[BoundedH11Protocol]] = weakref.WeakSet()  # the connections made, for close_all

    trusted_since: ClassVar[float] = 0.0  # when the client CAs last changed: TLS sessions made before are not resumed

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        connection = transport.get_extra_info("ssl_object")
        if connection is not None and connection.session_reused and connection.session is not None \
                and connection.session.time < int(BoundedH11Protocol.trusted_since):
            transport.close()  # a session resumed from before the trust changed: its certificate was checked against the old CAs
            return
        BoundedH11Protocol._open.add(self)
        self._arm()

    @classmethod
    def trust_changed(cls) -> None:
        """The client CAs changed (a reload): close every open connection, from any thread, and
        resume no TLS session made before — whom a removed CA let in goes too."""
        cls.trusted_since = time.time()
        for protocol in list(cls._open):
            transport = getattr(protocol, "transport", None)
            if transport is not None and not transport.is_closing():
                protocol.loop.call_soon_threadsafe(transport.close)

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
