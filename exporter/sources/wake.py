"""Wake-ups for the log follower: file events shorten the wait, the poll interval bounds it.

Watchdog delivers one event per write; handling each one costs far more CPU than the work it
signals. So events only set a flag, and the follower loop — which re-checks every file on each
wake — coalesces any number of them into one pass. The timeout is the polling fallback for
filesystems where inotify misses events (network mounts, some container overlays).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from typing import Protocol

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

log = logging.getLogger(__name__)


class Waker(Protocol):
    def wait(self, timeout: float) -> bool: ...
    def wake(self) -> None: ...
    def close(self) -> None: ...


class EventWaker:
    """A coalescing flag: many wake() calls before one wait() give one wake-up."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def wait(self, timeout: float) -> bool:
        """Block until woken or `timeout` passes; True if woken."""
        woken = self._event.wait(timeout)
        self._event.clear()
        return woken

    def wake(self) -> None:
        self._event.set()

    def close(self) -> None:
        self._event.set()


class _Handler(FileSystemEventHandler):
    def __init__(self, waker: EventWaker) -> None:
        self._waker = waker

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in ("opened", "closed_no_write"):
            self._waker.wake()


class WatchdogWaker(EventWaker):
    """EventWaker fed by watchdog events from the directories of the followed paths."""

    def __init__(self, directories: Iterable[str]) -> None:
        super().__init__()
        self._observer = Observer()
        handler = _Handler(self)
        watched = 0
        for directory in sorted(set(directories)):
            if not os.path.isdir(directory):
                continue  # a directory that does not exist yet is covered by polling
            try:
                self._observer.schedule(handler, directory, recursive=False)
                watched += 1
            except OSError as error:  # e.g. inotify watch limit reached
                log.warning("file events unavailable, polling only directory=%s error=%s", directory, error)
        self._observer.daemon = True
        if watched:
            self._observer.start()
        self.watching = watched > 0

    def close(self) -> None:
        super().close()
        if self.watching:
            self._observer.stop()
            self._observer.join(timeout=5)
