"""Password checks bounded per client: one client guessing cannot starve everyone else's logins.

A bcrypt check costs a quarter of a second of a core at the usual cost 12, by design. Checked
first come first served, 400 wrong passwords sent at 200/s kept the sidecar busy for 255 s after
the attack, and a legitimate user's first login waited behind all of them for 249 s (issue 33;
remembered passwords never wait: websecurity.py). Here, before a check is queued:

  * a client (its address) has at most one check waiting or running: another of its requests in
    the meantime is answered 429 at once, so a flood from one client holds one of the two workers;
  * a client's wrong passwords are limited to FAILURE_BURST at once, then one a FAILURE_SECONDS:
    beyond that it is answered 429 without a check (its right password included, until the bucket
    refills: the price of sharing an address with a guesser);
  * at most MAX_WAITING checks wait or run in all: beyond, 503 (many clients at once).

Successes cost no allowance. Clients are remembered for their allowance, CLIENTS at most (least
recently seen forgotten first). Called from the event loop only.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

FAILURE_BURST = 5
FAILURE_SECONDS = 1.0
MAX_WAITING = 32
CLIENTS = 4096


@dataclass
class _Client:
    allowance: float = FAILURE_BURST
    at: float = 0.0
    waiting: bool = False


class LoginGate:
    """Admits a password check for a client, or says why not (`admit`); told how it ended (`done`)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self._waiting = 0

    def admit(self, client: str) -> tuple[int, str] | None:
        """None: check now; else (HTTP status, why) to answer at once."""
        known = self._client(client)
        if known.waiting:
            return 429, "a password check of this client is under way"
        now = self._clock()
        known.allowance = min(FAILURE_BURST, known.allowance + (now - known.at) / FAILURE_SECONDS)
        known.at = now
        if known.allowance < 1.0:
            return 429, "too many wrong passwords from this client"
        if self._waiting >= MAX_WAITING:
            return 503, "too many password checks under way"
        known.waiting = True
        self._waiting += 1
        return None

    def done(self, client: str, ok: bool) -> None:
        known = self._client(client)
        if known.waiting:
            known.waiting = False
            self._waiting -= 1
        if not ok:
            known.allowance -= 1.0

    def _client(self, client: str) -> _Client:
        known = self._clients.get(client)
        if known is None:
            known = self._clients[client] = _Client(at=self._clock())
            while len(self._clients) > CLIENTS:  # never one whose check runs (at most MAX_WAITING of them)
                del self._clients[next(name for name, other in self._clients.items() if not other.waiting)]
        self._clients.move_to_end(client)
        return known
