"""`--log -`: read the log from standard input (`vllm serve … 2>&1 | specdecode-exporter serve --log -`).

At end of input the unfinished last line is flushed and the source shows as down: the process
that fed it has ended.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from exporter.config import LogFormat
from exporter.records import HealthBoard, SourceHealth
from exporter.sources.consumer import LogConsumerFactory

log = logging.getLogger(__name__)

STDIN_UPSTREAM = "-"


class StdinSource:
    """Reads a file descriptor (stdin by default) in a thread until end of input."""

    def __init__(
        self,
        health: HealthBoard,
        consumers: LogConsumerFactory,
        *,
        fd: int = 0,
        log_format: LogFormat = "auto",
        wall: Callable[[], float] = time.time,  # the wall: the arrival time of the lines read
    ) -> None:
        self.fd = fd
        self.health = health
        self.wall = wall
        self.pipeline = consumers(STDIN_UPSTREAM, kind="log", log_format=log_format)
        self._thread: threading.Thread | None = None
        self.finished = threading.Event()
        self.on_end: Callable[[], None] | None = None  # the state keeper saves the counters of a finished input

    def start(self) -> None:
        self.health.post_health(STDIN_UPSTREAM, SourceHealth(up=True))
        self._thread = threading.Thread(target=self._run, name="stdin-source", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Nothing to interrupt: a blocking read on stdin ends with the process (daemon thread)."""

    def _run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self.pipeline.consume_bytes(chunk, self.wall())
        except OSError as error:
            log.warning("cannot read standard input error=%s", error)
        self.pipeline.finish(self.wall())
        self.health.post_health(STDIN_UPSTREAM, SourceHealth(up=False, too_long=self.pipeline.too_long))
        self.finished.set()
        log.info("standard input ended")
        if self.on_end is not None:
            self.on_end()
