"""/metrics text: the store's snapshot in Prometheus text format 0.0.4, collected, cached, published.

Three parts, one module each: collecting (expose/collect.py: a snapshot → each series', each
source's and the rest's sample lines, reused while unchanged), caching (expose/cache.py: the body
of the store's latest version, joined and gzipped only when a part changed) and publishing
(expose/publish.py: which body a scrape gets, and when one must be built first). The refresher
(expose/refresh.py) keeps the published body young in the background.
"""

from __future__ import annotations

import threading

from exporter.config import DeriveSettings, ExpositionSettings
from exporter.expose.cache import BodyCache
from exporter.expose.collect import Collector
from exporter.expose.publish import Publisher
from exporter.state.store import Store


class MetricsRenderer:
    """The store as /metrics text: a collector, the cache of its body and the publisher of that body."""

    def __init__(self, store: Store, settings: DeriveSettings, exposition: ExpositionSettings | None = None) -> None:
        self.collector = Collector(store, settings, exposition or ExpositionSettings())
        self.cache = BodyCache(store, self.collector)
        self.publisher = Publisher(self.cache)

    @property
    def generation(self) -> int:
        return self.cache.generation

    @property
    def rendered_series(self) -> int:
        """Series written anew (cache misses), for tests and benchmarks."""
        return self.collector.rendered_series

    @property
    def refreshed(self) -> tuple[float, int]:
        """(monotonic time, store version) of the last body built."""
        return self.cache.built

    @property
    def wanted(self) -> threading.Event:
        return self.publisher.wanted

    def render(self) -> str:
        return self.render_bytes().decode()

    def render_bytes(self, gzip: bool = False) -> bytes:
        """The body of the store as it is now: UTF-8 text, or one gzip member of that text."""
        return self.cache.build(gzip)[1]

    def refresh(self) -> None:
        """Bring the published body up to the store now, off the request path."""
        self.publisher.publish()

    def cached(self, gzip: bool, max_age: float) -> bytes | None:
        return self.publisher.cached(gzip, max_age)

    def latest(self, gzip: bool, max_age: float) -> bytes:
        return self.publisher.latest(gzip, max_age)
