"""Keeps the /metrics body young between scrapes, so a GET only sends bytes.

With a thousand targets the store changes in bursts (every target is scraped in the same tick),
and rendering the changed series takes longer than a GET should; done here, in the background,
it costs the same CPU once per change and none per request. The refresher looks every
`period` seconds and publishes a new body only when the store was written since the last build,
or when a scrape was sent a body older than its `max_age` (windows also move with time alone), so
an idle sidecar that nobody scrapes stays idle.
"""

from __future__ import annotations

import logging
import threading

from exporter.expose.metrics import MetricsRenderer

log = logging.getLogger(__name__)


class Refresher:
    """A thread that publishes the renderer's body when the store has changed, at most every `period` seconds."""

    def __init__(self, renderer: MetricsRenderer, period: float) -> None:
        self.publisher = renderer.publisher
        self.period = period
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self.publisher.keep()
        self._thread = threading.Thread(target=self._run, name="metrics-refresher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.publisher.release()  # and wakes the thread
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            wanted = self.publisher.wait(self.period)
            if self._stop.is_set():
                return
            if wanted or self.publisher.cache.behind():
                try:
                    self.publisher.publish()
                except Exception:  # a bug must not stop the refreshes: the GET path still renders itself
                    log.exception("refreshing the /metrics body failed")
