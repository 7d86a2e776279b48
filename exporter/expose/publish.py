"""Publishing: which body a scrape is sent, and when one must be built first.

The last gzip body built by `publish` is sent without waiting while it is younger than `max_age`
seconds, while a newer one is being built, when no source wrote since it was built (only windows
moving with time can differ), or whenever a refresher keeps the body (expose/refresh.py rebuilds
it within about `max_age` of a write): a scrape should not wait for a render. An old body sent asks
the refresher to rebuild at once. The text form (browsers, tests) is built on demand.
"""

from __future__ import annotations

import threading
import time

from exporter.expose.cache import BodyCache


class Publisher:
    """The gzip body published for scrapes, and the policy for sending it or building a new one."""

    def __init__(self, cache: BodyCache) -> None:
        self.cache = cache
        self._published: tuple[int, bytes] | None = None  # (generation, gzip body) of the last publish, read without the lock
        self._kept = False  # a refresher keeps the body young (keep/release)
        self.wanted = threading.Event()  # set when a scrape got an old body: the refresher rebuilds it at once

    def keep(self) -> None:
        """A refresher now keeps the body young: an old one may be sent while it is rebuilt."""
        self._kept = True

    def release(self) -> None:
        """The refresher stopped; it is woken, so that it sees so."""
        self._kept = False
        self.wanted.set()

    def wait(self, timeout: float) -> bool:
        """At most `timeout` seconds, until a scrape was sent an old body (or `release`); True if one was."""
        wanted = self.wanted.wait(timeout)
        self.wanted.clear()
        return wanted

    def publish(self) -> bytes:
        """Build the body now, gzipped (what Prometheus asks for), and publish it."""
        self._published = self.cache.build(gzip=True)
        return self._published[1]

    def cached(self, gzip: bool, max_age: float) -> bytes | None:
        """The published gzip body without waiting, or None when one must be built first."""
        published = self._published
        if not gzip or published is None or published[0] != self.cache.generation:
            return None  # a build since (of the text form) changed the body: what was published is old
        if time.monotonic() - self.cache.built[0] < max_age or self.cache.building:
            return published[1]
        if self._kept or not self.cache.behind():
            self.wanted.set()
            return published[1]
        return None

    def latest(self, gzip: bool, max_age: float) -> bytes:
        """`cached`, else a body built now."""
        body = self.cached(gzip, max_age)
        if body is not None:
            return body
        return self.publish() if gzip else self.cache.build(gzip=False)[1]
