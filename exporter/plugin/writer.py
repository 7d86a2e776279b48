"""Write the plugin's records off vLLM's hot path: one thread per process, one write() per line.

Engines hand over their accumulators; every `interval` seconds the thread closes each engine's
interval and appends its record, so intervals close even while an engine is idle (vLLM stops
calling the logger then). Lines go out with one os.write on an O_APPEND descriptor, so a reader
never sees half a record. At `max_bytes` the file is renamed to `<name>.1` and a new one started
(the sidecar follows the rename like any rotated log). Any error is counted, reported once as a
warning and otherwise swallowed: the plugin must never raise into vLLM.
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from exporter.plugin.accumulator import StepAccumulator
from exporter.plugin.records import encode

log = logging.getLogger("specdecode_exporter.plugin")

DIR_ENV = "SPECDECODE_PLUGIN_DIR"
INTERVAL_ENV = "SPECDECODE_PLUGIN_INTERVAL"
MAX_BYTES_ENV = "SPECDECODE_PLUGIN_MAX_BYTES"
DEFAULT_INTERVAL = 1.0
DEFAULT_MAX_BYTES = 16 << 20


class EngineSlot:
    """One engine's accumulator and the lock that `record()` and the writer thread share."""

    def __init__(self, engine: int, model_name: str) -> None:
        self.engine = engine
        self.model_name = model_name
        self.lock = threading.Lock()
        self.accumulator = StepAccumulator(time.time())


class RecordWriter:
    """Appends records to `<directory>/specdecode-<host>-<pid>.jsonl`, rotating by size."""

    def __init__(self, directory: str, interval: float = DEFAULT_INTERVAL, max_bytes: int = DEFAULT_MAX_BYTES,
                 clock: Callable[[], float] = time.time) -> None:
        self.directory = directory
        self.interval = interval
        self.max_bytes = max_bytes
        self.clock = clock
        self.path = os.path.join(directory, f"specdecode-{socket.gethostname()}-{os.getpid()}.jsonl")
        self.errors = 0
        self._slots: list[EngineSlot] = []
        self._slots_lock = threading.Lock()
        self._fd: int | None = None
        self._size = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- called from vLLM's threads -----------------------------------------------------------

    def register(self, slot: EngineSlot) -> None:
        with self._slots_lock:
            self._slots.append(slot)

    def start(self, config: dict[str, Any]) -> None:
        self.write({"kind": "config", **config})
        self._thread = threading.Thread(target=self._run, name="specdecode-plugin-writer", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def failed(self, error: BaseException) -> None:
        """Count an error; warn about the first one only (a broken disk must not flood vLLM's log)."""
        self.errors += 1
        if self.errors == 1:
            log.warning("specdecode-exporter plugin: %s: %s (further errors are counted in its records)", type(error).__name__, error)

    # --- the writer thread --------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()

    def flush(self) -> None:
        """Close every engine's interval now and write the ones that drafted."""
        now = self.clock()
        with self._slots_lock:
            slots = list(self._slots)
        for slot in slots:
            try:
                with slot.lock:
                    fields = slot.accumulator.take(now)
                if fields is not None:
                    self.write({"kind": "interval", "engine": slot.engine, "model_name": slot.model_name, **fields})
            except Exception as error:  # never into vLLM
                self.failed(error)

    def write(self, record: dict[str, Any]) -> None:
        try:
            line = encode({"time": self.clock(), "pid": os.getpid(), **record, "errors": self.errors})
            if self._fd is None or self._size + len(line) > self.max_bytes:
                self._open(rotate=self._fd is not None)
            assert self._fd is not None
            self._size += os.write(self._fd, line)
        except Exception as error:
            self.failed(error)

    def _open(self, rotate: bool) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if rotate:
            os.replace(self.path, self.path + ".1")
        os.makedirs(self.directory, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._size = os.fstat(self._fd).st_size

    def close(self) -> None:
        """Write what is pending (vLLM is shutting down) and stop."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.flush()
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
