"""The state dir: what a sidecar restart must not forget, saved atomically.

Now: each series' slow average (the `degraded` baseline). The file is versioned JSON, written to a
temporary file, fsynced and renamed over the old one, at most every `interval` seconds and on
shutdown, so a crash leaves either the old state or the new one — never half of one.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from exporter.store import Store

log = logging.getLogger(__name__)

VERSION = 1
FILENAME = "state.json"


def load(directory: str) -> dict[str, Any]:
    """The saved state, or an empty one when there is none or it cannot be used (said in the log)."""
    path = Path(directory) / FILENAME
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


def save(directory: str, state: dict[str, Any]) -> None:
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".state-", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump({"version": VERSION, **state}, stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, Path(directory) / FILENAME)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class StateKeeper:
    """Restores the store's slow averages at start, saves them periodically and at shutdown."""

    def __init__(self, store: Store, directory: str, interval: float = 60.0) -> None:
        self.store = store
        self.directory = directory
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        restored = store.import_averages(load(directory).get("averages", []))
        if restored:
            log.info("restored series baselines from the state dir count=%d dir=%s", restored, directory)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="state-keeper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.save()

    def save(self) -> None:
        try:
            save(self.directory, {"averages": self.store.export_averages()})
        except OSError as error:
            log.warning("cannot save state dir=%s error=%s", self.directory, error)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.save()
