"""Caching: the /metrics body of the store's latest version, built by one request at a time.

A build snapshots the store and hands the collector's owners to the body (expose/body.py), which
joins (and gzips) them again only when one of them changed: a scrape between two changes costs a
snapshot and a comparison. prometheus_client's collector model would format every sample on every
scrape (≈0.6 s for a thousand series); its exact text is kept (expose/lines.py).
"""

from __future__ import annotations

import threading
import time

from exporter import metric_names as names
from exporter.expose.body import Body
from exporter.expose.collect import Collector
from exporter.expose.lines import header
from exporter.state.store import Store


class BodyCache:
    """The body of `store` as of the last build, and when (monotonic seconds) and at which store version."""

    def __init__(self, store: Store, collector: Collector) -> None:
        self.store = store
        self.collector = collector
        self._body = Body([spec.name for spec in names.ALL], {spec.name: header(spec).encode() for spec in names.ALL})
        self._lock = threading.Lock()  # concurrent scrapes share one body
        self.built = (float("-inf"), -1)  # (monotonic time, store version) of the last build

    @property
    def generation(self) -> int:
        """Bumped each time the body changed since the previous build."""
        return self._body.generation

    @property
    def building(self) -> bool:
        return self._lock.locked()

    def behind(self) -> bool:
        """A source wrote since the last build."""
        return self.store.version != self.built[1]

    def build(self, gzip: bool) -> tuple[int, bytes]:
        """The body of the store as it is now, UTF-8 text or one gzip member of it, with its generation."""
        with self._lock:
            self.store.complete()  # lines read but not yet handed over count in the version read next
            version = self.store.version  # read before the snapshot: a write after it is seen next time
            self._body.update(self.collector.owners(self.store.snapshot()))
            self.built = (time.monotonic(), version)
            return self._body.generation, self._body.gzip() if gzip else self._body.text()
