"""The live log source: every path or glob given with `--log`, followed from one thread.

Each wake-up (a file event or the poll timer) runs one pass over all followed files; globs are
expanded again on every pass so files that appear later are picked up (and read from their
start, or where the same file was read under another name: sources/ledger.py). A glob-matched
file that is deleted is closed at once (its disk space is freed; a renamed one is drained on),
and a glob-matched path gone for `retire_after` seconds is retired: its series and its source
health are dropped, so no alert fires for a file deleted on purpose. Files that exist at startup are read from their end unless `from_start` — but their first
MiB is scanned once for the startup lines, so the model name and speculative config are known
even when the sidecar joins a running server.

With `defer` (serve sets it), the blocks a pass reads are queued and handed to their consumers in
one batch: when a reader of the store asks (the store calls `complete()` before every snapshot
and export), after `defer` seconds, or once DEFER_BYTES are queued. Readers therefore see every
line read so far, exactly as without deferring, while a busy file costs a pass of a few system
calls: measured, most of a pass's CPU was the cold start of the code that interprets lines, paid
anew at every wake-up, not the lines themselves.
"""

from __future__ import annotations

import fnmatch
import glob
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence

from exporter.config import LogFormat
from exporter.records import HealthBoard, SourceHealth
from exporter.sources.consumer import LogConsumer, LogConsumerFactory
from exporter.sources.ledger import Ledger
from exporter.sources.logfile import FollowedFile
from exporter.sources.position import FilePosition
from exporter.sources.regular import open_regular
from exporter.sources.resume import reserve
from exporter.sources.siblings import forget as forget_listings
from exporter.sources.wake import EventWaker, Waker, file_waker
from exporter.sources.written import born_at

log = logging.getLogger(__name__)

PRIME_BYTES = 1 << 20
DEFER_BYTES = 4 << 20  # a catch-up is interpreted as it is read, not held in memory
ZONE_TAIL_BYTES = 64 << 10  # where a file's last stamped line is looked for
PLUGIN_FILES = "*.jsonl"  # what exporter/plugin/writer.py names its files
_PRIME_MARKERS = ("non-default args", "LLM engine", "server version ", "  version ")


def _has_magic(pattern: str) -> bool:
    return glob.has_magic(pattern)


class LogSource:
    """Follows all configured paths; `poll_once()` is one pass, `start()` runs passes in a thread."""

    def __init__(
        self,
        patterns: Sequence[str],
        health: HealthBoard,
        consumers: LogConsumerFactory,
        *,
        from_start: bool = False,
        log_format: LogFormat = "auto",
        poll_interval: float = 1.0,
        file_events: bool = True,
        max_line_bytes: int = 1 << 20,
        waker: Waker | None = None,
        wall: Callable[[], float] = time.time,  # the wall: the arrival time of the lines read
        plugin_dirs: Sequence[str] = (),
        defer: float = 0.0,
        retire_after: float = 300.0,
    ) -> None:
        # a plugin directory is followed like a log: every process's record file in it, read from its
        # start (records are exact deltas), all under one upstream named after the directory
        self._plugin_dirs = {os.path.join(directory, PLUGIN_FILES): directory.rstrip("/") or "/" for directory in plugin_dirs}
        self.patterns = list(patterns) + list(self._plugin_dirs)
        self.health = health
        self.consumers = consumers
        self.from_start = from_start
        self.log_format = log_format
        self.poll_interval = poll_interval
        self.file_events = file_events
        self.max_line_bytes = max_line_bytes
        self.wall = wall
        self._waker = waker
        self._files: dict[str, tuple[FollowedFile, LogConsumer]] = {}
        self._ledger = Ledger()  # one identity per file across all the paths followed
        self.retire_after = retire_after
        self._gone_since: dict[str, float] = {}  # glob-matched paths that are gone, since when (monotonic)
        self._first_pass = True
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._restored: dict[str, FilePosition] = {}
        self._after_pass: Callable[[], None] | None = None
        self._globs = {pattern for pattern in self.patterns if _has_magic(pattern)}
        self._unmatched: set[str] = set()  # globs that match no file now (said once, a source down under the pattern's name)
        self._posted: dict[str, SourceHealth] = {}  # the health last posted per upstream
        self.defer = defer
        self._pending: list[tuple[LogConsumer, bytes | None, float]] = []  # (consumer, block or None: file replaced, read at)
        self._pending_bytes = 0
        self._pending_since = 0.0
        self._pending_lock = threading.Lock()  # passes queue, any thread completes: in order, once

    # --- the state dir -------------------------------------------------------------------------

    def restore(self, positions: list[dict[str, object]]) -> None:
        """Resume these files where an earlier run stopped (instead of at their end)."""
        for entry in positions if isinstance(positions, list) else []:
            try:
                position = FilePosition.from_json(entry)
            except (TypeError, AttributeError) as error:  # a hand-edited state file: that file starts afresh
                log.warning("saved log position unusable, ignored entry=%.200r error=%s", entry, error)
                continue
            self._restored[position.path] = position

    def positions(self) -> list[dict[str, object]]:
        found = [followed.position() for followed, _ in self._files.values()]
        return [p.to_json() for p in found if p is not None]

    def on_pass(self, callback: Callable[[], None]) -> None:
        self._after_pass = callback

    def wake(self) -> None:
        """Run a pass now (the state keeper asks, to save at once)."""
        if self._waker is not None:
            self._waker.wake()

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._waker is None:
            self._waker = file_waker(self._directories()) if self.file_events else EventWaker()
        self._thread = threading.Thread(target=self._run, name="log-source", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._waker is not None:
            self._waker.close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.complete()
        for followed, _ in self._files.values():
            followed.close()

    def _run(self) -> None:
        assert self._waker is not None
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception:  # a bug must not silently end following: log it and keep going
                log.exception("log source pass failed")
            self._waker.wait(self.poll_interval)

    def _directories(self) -> list[str]:
        directories = []
        for pattern in self.patterns:
            directory = os.path.dirname(os.path.abspath(pattern))
            if not _has_magic(directory):
                directories.append(directory)
            # a symlinked file (Kubernetes) is written where it points, not where the link is
            directories.extend(os.path.dirname(os.path.realpath(path)) for path in self._expand(pattern))
        return directories

    # --- one pass ----------------------------------------------------------------------------

    @staticmethod
    def _expand(pattern: str) -> list[str]:
        return sorted(glob.glob(pattern)) if _has_magic(pattern) else [pattern]

    def _paths(self, pattern: str) -> list[str]:
        """The paths of `pattern` to follow: its saved positions first (a glob-matched file may be
        between a rotation's rename and its new file's creation: gone from the glob, yet where the
        rotated file's reading stands), then what it matches now."""
        restored = dict.fromkeys(path for path in self._restored if path == pattern or (pattern in self._globs and fnmatch.fnmatch(path, pattern)))
        return [*restored, *(path for path in self._expand(pattern) if path not in restored)]

    def poll_once(self) -> None:
        """Read everything new in every followed file."""
        forget_listings()  # a pass sees its directories as they are now
        first = self._first_pass
        if first:
            reserve(self._ledger, self._restored.values())  # each saved position's file is its own path's to read
        for pattern in self.patterns:
            if pattern in self._files and pattern not in self._globs:
                continue  # a plain path, followed already: nothing to expand
            paths = self._paths(pattern)
            self._matched(pattern, bool(paths))
            for path in paths:
                if path not in self._files:
                    self._files[path] = self._follow(path, pattern, self._plugin_dirs.get(pattern))
        self._first_pass = False
        for followed, pipeline in self._files.values():
            for item in followed.poll():  # blocks of at most one read chunk: bounded during a catch-up
                self._queue(pipeline, item)
        if first:
            self._ledger.settle()
            for path in self._restored:  # followed by no --log any more
                log.warning("saved log position of a path no --log matches, forgotten path=%s", path)
            self._restored.clear()
        self._retire()
        with self._pending_lock:
            if not self._pending or self.defer <= 0 or time.monotonic() - self._pending_since >= self.defer:
                self._complete()
        if self._after_pass is not None:
            self._after_pass()

    def _matched(self, pattern: str, any_file: bool) -> None:
        """A glob that matches no file is said — a warning once, and a source that is down, named by the
        pattern, with why — until one appears (its files are then sources of their own)."""
        if pattern not in self._globs or any_file == (pattern not in self._unmatched):
            return
        if any_file:
            self._unmatched.discard(pattern)
            self._posted.pop(pattern, None)
            self.health.forget(pattern)
            log.info("log pattern matches files now pattern=%s", pattern)
            return
        self._unmatched.add(pattern)
        log.warning("no file matches the log pattern (yet): following it as files appear pattern=%s", pattern)
        health = SourceHealth(up=False, last_error=f"no file matches {pattern} (yet)")
        self._posted[pattern] = health
        self.health.post_health(pattern, health)

    def _retire(self) -> None:
        """Drop the followers of glob-matched files gone for `retire_after` seconds (closed already)."""
        now = time.monotonic()
        for path, (followed, pipeline) in list(self._files.items()):
            if not followed.let_go_when_gone or followed.exists:
                self._gone_since.pop(path, None)
                continue
            since = self._gone_since.setdefault(path, now)
            if now - since < self.retire_after:
                continue
            with self._pending_lock:
                self._complete()  # what it read reaches the store before its series are dropped
            del self._files[path], self._gone_since[path]
            followed.close()
            if pipeline.upstream == path:  # its own upstream (a plugin directory's stays)
                self._posted.pop(path, None)
                self.health.forget(path)
                log.info("log file gone, its series retired path=%s", path)

    def _queue(self, pipeline: LogConsumer, item: bytes | object) -> None:
        """Queue one block (or a file replacement) in read order; the lock is held only for this, so
        a reader completing the queue never waits for a pass's file I/O."""
        with self._pending_lock:
            if not self._pending:
                self._pending_since = time.monotonic()
            if not isinstance(item, bytes):  # FILE_REPLACED
                self._pending.append((pipeline, None, 0.0))
                return
            self._pending.append((pipeline, item, self.wall()))
            self._pending_bytes += len(item)
            if self._pending_bytes >= DEFER_BYTES:
                self._complete()

    def complete(self) -> None:
        """Hand every queued block to its consumer now (the store calls this before it is read)."""
        with self._pending_lock:
            try:
                self._complete()
            except Exception:  # a bug must not fail the reader: log it (the queued lines are lost, as in a failed pass)
                log.exception("log source pass failed")

    def _complete(self) -> None:
        """Consume the queue in order, then post health (the caller holds the queue's lock)."""
        items, self._pending, self._pending_bytes = self._pending, [], 0
        for pipeline, block, read_at in items:
            if block is None:
                pipeline.file_replaced()
            else:
                pipeline.consume_block(block, read_at)
        self._report()

    def _follow(self, path: str, pattern: str, plugin_dir: str | None = None) -> tuple[FollowedFile, LogConsumer]:
        resume = self._restored.pop(path, None)
        from_start = self.from_start or plugin_dir is not None
        start_at_end = self._first_pass and not from_start and os.path.exists(path) and resume is None
        followed = FollowedFile(path, start_at_end=start_at_end, max_line_bytes=self.max_line_bytes, resume=resume,
                                ledger=self._ledger, let_go_when_gone=path != pattern)
        pipeline = self.consumers(
            plugin_dir or path, kind="plugin" if plugin_dir else "log", log_format="plain" if plugin_dir else self.log_format
        )
        if start_at_end or resume is not None:
            self._prime(path, pipeline)
        if plugin_dir is None:
            self._learn_zone(path, pipeline)
        log.info("following log path=%s from=%s", path, "saved position" if resume else "end" if start_at_end else "start")
        if not os.path.exists(path) and plugin_dir is None:
            log.warning("the log path does not exist (yet): following it from when it appears path=%s", path)
        return followed, pipeline

    @staticmethod
    def _prime(path: str, pipeline: LogConsumer) -> None:
        """Learn the speculative config from the head of a file we will read from its end."""
        try:
            with open_regular(path) as handle:
                head = handle.read(PRIME_BYTES)
        except OSError:
            return
        lines = head.decode("utf-8", errors="replace").splitlines()
        pipeline.learn_config(raw for raw in lines if any(marker in raw for marker in _PRIME_MARKERS))

    @staticmethod
    def _learn_zone(path: str, pipeline: LogConsumer) -> None:
        """Hand the consumer the file's last bytes and modification time — when its last line was
        written, which tells the zone of its stamps (intervals/clock.py) — with its first bytes and
        birth time, which tell whether the file is the server's own or a copy (sources/written.py)."""
        try:
            with open_regular(path) as handle:
                stat = os.fstat(handle.fileno())
                born = born_at(handle.fileno())
                head = handle.read(ZONE_TAIL_BYTES)
                handle.seek(max(0, stat.st_size - ZONE_TAIL_BYTES))
                tail = handle.read(ZONE_TAIL_BYTES)
        except OSError:
            return  # not there yet: its first live lines tell the zone
        if tail:
            pipeline.learn_written(tail if stat.st_size <= ZONE_TAIL_BYTES else tail.split(b"\n", 1)[-1], stat.st_mtime, head=head, born=born,
                                   opened=time.time())

    def _report(self) -> None:
        """Post each upstream's health once, summed over its files — when it may have changed.

        A plugin directory is one upstream of several record files: posting file by file, the last
        file's counts would hide a rotation or a missing file seen in another. No other writer
        changes an upstream's health, so one equal to the one posted last is not posted again: most
        passes skip the store's lock.
        """
        by_upstream: dict[str, list[tuple[FollowedFile, LogConsumer]]] = {}
        for followed, pipeline in self._files.values():
            by_upstream.setdefault(pipeline.upstream, []).append((followed, pipeline))
        for upstream, members in by_upstream.items():
            up = any(followed.up for followed, _ in members)
            rotations = sum(followed.counters.rotations for followed, _ in members)
            truncations = sum(followed.counters.truncations for followed, _ in members)
            too_long = sum(followed.buffer.too_long + pipeline.too_long for followed, pipeline in members)
            missing = [followed.path for followed, _ in members if not followed.exists and not followed.let_go_when_gone]
            health = SourceHealth(up=up, rotations=rotations, truncations=truncations, too_long=too_long,
                                  last_error=f"no such file: {missing[0]} (yet)" if missing and not up else None)
            if health == self._posted.get(upstream):
                continue
            self._posted[upstream] = health
            self.health.post_health(upstream, health)

