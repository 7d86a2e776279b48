"""The state dir: what a sidecar restart must not forget, saved atomically.

Each series' references (the `degraded` verdict's memory of normal, reference.py; in their own
file, saved at most once a minute and at shutdown), every series' lifetime counters and every
source's counters (so the exported `_total` counters continue across a restart: Prometheus sees no
reset), and where each followed log file was read to. The file is versioned JSON, written to a
temporary file, fsynced and renamed over the old one, so a crash (kill -9 included) leaves either
the old state or the new one — never half of one.

Exactly once: read positions and the counters they produced must be saved as one snapshot. The
log follower therefore saves from its own thread, between two passes (at most once a second);
after a crash the sidecar goes back to that snapshot and re-reads the lines after it. A clean stop
saves last, after every source has stopped (a closed file keeps its position), so a restart after
SIGTERM resumes exactly as one after kill -9 does.

One writer per state dir: the keeper holds an exclusive lock (flock on `lock`, released by the
kernel when the process ends, however it ends); a second sidecar on the same dir stops at start
with an error naming the first one's pid, instead of both overwriting each other's positions. A
lock that cannot be held — a read-only dir, no permission, a `lock` that is a directory or a
symlink (never followed) — stops the sidecar at start with the reason: never run unlocked.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from exporter.config import ConfigError
from exporter.records import SeriesKey
from exporter.state.reference import memory_from_json, memory_json
from exporter.state.saved import counts_from_json, entries, key_json, saved_counts, series_json, source_json, totals_from_json
from exporter.state.store import Store

log = logging.getLogger(__name__)

VERSION = 1
FILENAME = "state.json"
REFERENCES = "references.json"  # apart: larger (hourly buckets per series), and saved at most once a minute
LOCK = "lock"
REFERENCES_EVERY = 60.0  # a reference pools a day: a minute of it lost in a crash changes nothing
# ... a minute of wall time, or of the memories' own clock: a catch-up reads hours of log in a second,
# and a crash after it must not lose the hours (the positions saved beside them are past them)


def load(directory: str, filename: str = FILENAME) -> dict[str, Any]:
    """The saved state, or an empty one when there is none or it cannot be used (said in the log)."""
    path = Path(directory) / filename
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        log.warning("state file unusable, starting afresh path=%s error=%s", path, error)
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION:
        log.warning("state file of an unknown version ignored path=%s", path)
        return {}
    return data


def save(directory: str, state: dict[str, Any], filename: str = FILENAME) -> None:
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".state-", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump({"version": VERSION, **state}, stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, Path(directory) / filename)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def lock(directory: str) -> int:
    """Take the state dir for this process: the lock file's descriptor, held until closed (or the
    process ends). ConfigError if it cannot be held — another process holds it, or the dir cannot
    be written (read-only, no permission, `lock` a directory or a symlink): a sidecar that ran on
    unlocked would count every line twice beside a second one on the same dir."""
    path = Path(directory) / LOCK
    try:
        os.makedirs(directory, exist_ok=True)
        # never through a symlink (its target would get our pid), never a directory or a FIFO
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as error:
        why = "it is a symlink" if error.errno == errno.ELOOP else error.strerror or str(error)
        raise ConfigError(f"--state-dir {directory}: cannot hold the lock {path} ({why}); the sidecar does not run unlocked "
                          "(a second one on the same dir would count every line twice): give a dir this process can write") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError(f"--state-dir {directory}: the lock {path} is not a regular file; remove it")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
        os.close(fd)
        raise ConfigError(f"--state-dir {directory}: in use by another sidecar (pid {holder}); "
                          "each sidecar needs its own state dir") from None
    with contextlib.suppress(OSError):  # the pid is for the second one's message only
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def counters_json(store: Store) -> dict[str, object]:
    """Every series' lifetime totals and every source's counters, as the state file keeps them."""
    series, sources = store.counters()
    return {"series": [series_json(key, lifetime, variants) for key, lifetime, variants in series],
            "sources": [source_json(source) for source in sources]}


def restore_counters(store: Store, saved: Mapping[str, object]) -> int:
    """Continue the counters of an earlier run, so Prometheus sees no reset; returns series restored."""
    restored = 0
    for entry in entries(saved, "series"):
        try:
            key, totals = SeriesKey(**entry["key"]), totals_from_json(entry["totals"])
            if not all(isinstance(part, str) for part in (key.upstream, key.model_name, key.engine, key.source)):
                raise TypeError(f"saved series key: {entry['key']!r:.100}")
        except (TypeError, KeyError) as error:  # the README promises a warning for every series that starts from zero
            log.warning("saved series counters unusable, that series starts from zero entry=%.200r error=%s", entry, error)
            continue
        store.restore_series(key, totals, counts_from_json(entry.get("variants", {}), "format counts"))
        restored += 1
    for entry in entries(saved, "sources"):
        if isinstance(entry, dict) and isinstance(entry.get("upstream"), str):
            store.restore_counts(entry["upstream"], entry.get("kind", "log"), saved_counts(entry))
        else:
            log.warning("saved source counters unusable, that source starts from zero entry=%.200r", entry)
    return restored


def memories_json(store: Store) -> list[dict[str, object]]:
    """Each series' references and health history, as the references file keeps them."""
    return [{"key": key_json(key), **memory_json(memory)} for key, memory in store.memories()]


def restore_memories(store: Store, saved: list[Any]) -> int:
    """Restore references saved by an earlier run (applied when each series reappears)."""
    restored = 0
    for entry in saved:
        try:
            key = SeriesKey(**entry["key"])
            memory = memory_from_json(entry)
        except (TypeError, KeyError, ValueError, AttributeError):
            log.warning("a saved reference could not be read and is ignored")
            continue
        store.restore_memory(key, memory)
        restored += 1
    return restored


class PositionSource(Protocol):
    def positions(self) -> list[dict[str, Any]]: ...
    def restore(self, positions: list[dict[str, Any]]) -> None: ...
    def on_pass(self, callback: Callable[[], None]) -> None: ...
    def wake(self) -> None: ...


class CycleSource(Protocol):
    def on_cycle(self, callback: Callable[[], None]) -> None: ...


class BaselineSource(Protocol):
    """The scrape interpreter: per-target baselines, saved with the counters they produced."""

    @property
    def lock(self) -> contextlib.AbstractContextManager[Any]: ...
    def baselines(self) -> dict[str, list[dict[str, Any]]]: ...
    def restore(self, saved: Any) -> None: ...


class StateKeeper:
    """Restores the state at start; saves it after log passes (or every `interval` s) and at shutdown."""

    def __init__(self, store: Store, directory: str, interval: float = 5.0, logs: PositionSource | None = None,
                 scrapes: BaselineSource | None = None, cycles: CycleSource | None = None) -> None:
        self.store = store
        self.directory = directory
        self.interval = interval
        self.logs = logs
        self.scrapes = scrapes
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._lock_fd = lock(directory)  # first: nothing is read or written in a dir another sidecar owns
        self._save_soon = threading.Event()
        state = load(directory)
        saved_counters = state.get("counters", {})
        if not isinstance(saved_counters, dict):  # a hand-edited file: start afresh, never a crash loop
            log.warning("saved counters unusable, starting them from zero dir=%s", directory)
            saved_counters = {}
        counters = restore_counters(store, saved_counters)  # first: it recreates the series
        saved_references = load(directory, REFERENCES).get("references", [])
        references = restore_memories(store, saved_references if isinstance(saved_references, list) else [])
        if logs is not None:
            logs.restore(state.get("files", []))
            logs.on_pass(self._after_pass)
        if scrapes is not None:
            scrapes.restore(state.get("scrapes"))
        self._cycles = cycles
        if cycles is not None:
            # after a scrape cycle too (what Prometheus saw is then saved); with a log follower, by it,
            # between two passes: positions are only read there
            cycles.on_cycle(self._after_pass if logs is None else self.save_soon)
        self._last_save = 0.0
        self._last_references = time.monotonic()
        self._references_at = store.memories_at()  # the memories' own time when the references were saved
        if references or counters:
            log.info("restored state references=%d series=%d dir=%s", references, counters, directory)

    def _after_pass(self) -> None:
        """Called by the log follower between passes: the one moment positions and counters agree."""
        if self._save_soon.is_set() or time.monotonic() - self._last_save >= 1.0:
            self._save_soon.clear()
            at, saved_at = self.store.memories_at(), self._references_at
            moved = at is not None and (saved_at is None or at - saved_at >= REFERENCES_EVERY)
            self.save(references=moved or time.monotonic() - self._last_references >= REFERENCES_EVERY)

    def save_soon(self) -> None:
        """Save at the next moment positions and counters agree (SIGHUP, the end of stdin): now, if no
        log follower reads; else after its next pass, which this wakes."""
        if self.logs is None:
            self.save()
            return
        self._save_soon.set()
        self.logs.wake()

    def start(self) -> None:
        if self.logs is not None or self._cycles is not None:
            return  # the follower saves between its passes, the scrape source between its cycles
        self._thread = threading.Thread(target=self._run, name="state-keeper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.save()

    def save(self, references: bool = True) -> None:
        with self._lock, self.scrapes.lock if self.scrapes is not None else contextlib.nullcontext():
            # one snapshot: no scrape turns into intervals between the counters and the baselines
            state: dict[str, Any] = {"counters": counters_json(self.store)}
            if self.scrapes is not None:
                state["scrapes"] = self.scrapes.baselines()
            if self.logs is not None:
                state["files"] = self.logs.positions()
            try:
                save(self.directory, state)
                if references:
                    save(self.directory, {"references": memories_json(self.store)}, REFERENCES)
                    self._last_references = time.monotonic()
                    self._references_at = self.store.memories_at()
            except OSError as error:
                log.warning("cannot save state dir=%s error=%s", self.directory, error)
            self._last_save = time.monotonic()

    def stop(self) -> None:
        """Save last: every source has stopped (the keeper is the last one stopped)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.save()
        if self._lock_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = -1
