"""The files a rotation may have moved a log to: its siblings (vllm.log.1, vllm.log-20261201, vllm.1.log).

A sibling of `dir/name` is a file of `dir` whose name starts with `name` or with `name` up to its
last dot. Found in a sorted listing of the directory, read once while the directory is unchanged
(its modification time, and at most once a pass: `forget()`), so that resuming 2,000 files after a
restart costs one listing of their directory, not 2,000 globs over it (each a scan of every name).
"""

from __future__ import annotations

import bisect
import os
import threading

_listings: dict[str, tuple[int, list[str]]] = {}  # directory → (its mtime_ns when listed, its sorted names)
_lock = threading.Lock()


def forget() -> None:
    """Drop the listings (a pass starts: a name created in the same clock tick as a listing must be seen)."""
    with _lock:
        _listings.clear()


def _listing(directory: str) -> list[str]:
    try:
        modified = os.stat(directory).st_mtime_ns
    except OSError:
        return []
    with _lock:
        known = _listings.get(directory)
        if known is not None and known[0] == modified:
            return known[1]
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    with _lock:
        _listings[directory] = (modified, names)
    return names


def _starting_with(names: list[str], prefix: str) -> list[str]:
    start = bisect.bisect_left(names, prefix)
    stop = bisect.bisect_left(names, prefix + "\U0010ffff")
    return names[start:stop]


def siblings(path: str) -> list[str]:
    """The files a rotation may have moved `path` to (`path` itself left out), in name order: those
    named `path…`, then those named after its stem (`vllm.log` → `vllm…`). Compressed copies are
    among them; readers skip them by name."""
    directory, name = os.path.split(path)
    names = _listing(directory or ".")
    found = _starting_with(names, name)
    if "." in name:
        found += [other for other in _starting_with(names, name.rsplit(".", 1)[0]) if not other.startswith(name)]
    hidden = name.startswith(".")  # as glob: hidden names only for a hidden log
    return [os.path.join(directory, other) for other in found if other != name and (hidden or not other.startswith("."))]
