"""Wake-ups for the log follower: file events shorten the wait, the poll interval bounds it.

A log written line by line makes one file event per write. Handling each one costs far more than
the work it signals: watchdog reads and dispatches every event in Python, which measured 26% of a
core for a file growing at 1,000 lines/s. On Linux the follower therefore reads inotify itself
(inotify_simple) and coalesces, rate-limiting its passes: the first event after a quiet spell is
taken SETTLE_SECONDS later (so the lines a server writes together share a pass), and a busy file
is read at most once per COALESCE_SECONDS, measured from the previous pass — the kernel merges
repeated events on the same file while they sit unread, and one read into a reused buffer takes
them all. A pass costs about the same whether it finds one line or a hundred (measured: most of
its CPU is the cold start of the code that handles them), so the pass rate is what following a
busy file costs. A line waits at most COALESCE_SECONDS plus one pass. Elsewhere watchdog's
observer (FSEvents, kqueue) sets a flag. The timeout is the polling fallback for filesystems where
events never come (network mounts, some container overlays).
"""

from __future__ import annotations

import logging
import os
import select
import sys
import threading
import time
from collections.abc import Iterable
from typing import Protocol

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

log = logging.getLogger(__name__)

COALESCE_SECONDS = 0.06  # at most one pass per this long while events keep coming (latency ≤ this + a pass)
SETTLE_SECONDS = 0.01  # after a quiet spell: the writes of the next few ms share the first pass
_EVENT_BUFFER = 1 << 16


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


class InotifyWaker:
    """Linux inotify on the directories of the followed paths, read in coalesced batches."""

    def __init__(self, directories: Iterable[str], coalesce: float = COALESCE_SECONDS, settle: float = SETTLE_SECONDS) -> None:
        from inotify_simple import INotify, flags

        self.coalesce = coalesce
        self.settle = min(settle, coalesce)
        self._next_pass = 0.0  # monotonic time before which an event does not start another pass
        self._events = bytearray(_EVENT_BUFFER)  # reused: draining allocates nothing
        self._inotify = INotify(nonblocking=True)
        mask = flags.MODIFY | flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO | flags.CLOSE_WRITE | flags.ATTRIB
        watched = 0
        for directory in sorted(set(directories)):
            if not os.path.isdir(directory):
                continue  # a directory that does not exist yet is covered by polling
            try:
                self._inotify.add_watch(directory, mask)
                watched += 1
            except OSError as error:  # e.g. inotify watch limit reached
                log.warning("file events unavailable, polling only directory=%s error=%s", directory, error)
        self.watching = watched > 0
        self._wake_read, self._wake_write = os.pipe()  # wake() and close() from other threads
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self._poller = select.poll()
        self._inotify_fd = self._inotify.fileno()
        self._poller.register(self._inotify_fd, select.POLLIN)
        self._poller.register(self._wake_read, select.POLLIN)
        self._closed = threading.Event()

    def wait(self, timeout: float) -> bool:
        """Block until an event, wake() or `timeout`; True if woken. wait(0) only asks."""
        if self._closed.is_set():
            return True
        ready = self._poller.poll(max(0.0, timeout) * 1000)
        if self._closed.is_set():  # closed while we waited
            return True
        if not ready:
            return False
        for fd, _ in ready:
            if fd == self._inotify_fd:
                if timeout > 0:  # let the writes of the next few ms merge into what is queued
                    time.sleep(max(self.settle, self._next_pass - time.monotonic()))
                self._drain_events()
                self._next_pass = time.monotonic() + self.coalesce
            else:
                try:
                    os.read(self._wake_read, 4096)
                except BlockingIOError:
                    pass
        return True

    def _drain_events(self) -> None:
        """Discard the queued events (they only said *that* something changed): one read, usually."""
        buffer = self._events
        try:
            while os.readv(self._inotify_fd, [buffer]) > len(buffer) - 4096:
                pass  # nearly full: more may be queued
        except OSError:
            pass  # empty (EAGAIN), or closed while we were asleep

    def wake(self) -> None:
        try:
            os.write(self._wake_write, b"x")
        except (BlockingIOError, OSError):
            pass  # already pending, or closed

    def close(self) -> None:
        if self._closed.is_set():
            return
        self.wake()
        self._closed.set()
        self._inotify.close()


def file_waker(directories: Iterable[str]) -> InotifyWaker | WatchdogWaker:
    """Coalesced inotify on Linux; watchdog's observer elsewhere."""
    if sys.platform.startswith("linux"):
        try:
            return InotifyWaker(directories)
        except OSError as error:  # inotify instance limit reached
            log.warning("inotify unavailable, using watchdog error=%s", error)
    return WatchdogWaker(directories)
