"""Scrape targets: `--target URL` flags and a Prometheus `file_sd` file, reloaded when it changes.

file_sd (JSON or YAML) is a list of groups `{"targets": ["host:port", …], "labels": {…}}`; the
`__scheme__` and `__metrics_path__` labels set the URL as Prometheus does, other `__` labels are
dropped, and the rest are exported on `specdecode_target_info`. Only the URLs built from these
two places are ever requested.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import yaml

from exporter.sources.wake import file_waker

log = logging.getLogger(__name__)

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")  # fullmatch: `$` would let a trailing newline through


class TargetsError(ValueError):
    """A target or targets file that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class Target:
    url: str
    labels: Mapping[str, str] = field(default_factory=dict)


def target_from_url(url: str) -> Target:
    """`http://host:port/metrics` (a bare `host:port` gets http:// and /metrics)."""
    if "://" not in url:
        url = f"http://{url}/metrics"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetsError(f"--target: not an http(s) URL: {url!r}")
    return Target(url=url)


def parse_targets_file(text: str, source: str) -> list[Target]:
    """Targets from file_sd JSON or YAML text."""
    try:
        groups = json.loads(text) if source.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as error:
        raise TargetsError(f"{source}: not valid JSON/YAML: {error}") from None
    if groups is None:
        return []
    if not isinstance(groups, list):
        raise TargetsError(f"{source}: expected a list of {{targets, labels}} groups")
    targets = []
    for index, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("targets", []), list):
            raise TargetsError(f"{source}: group {index} needs a `targets` list")
        labels = group.get("labels") or {}
        if not isinstance(labels, dict):
            raise TargetsError(f"{source}: group {index}: `labels` must be a mapping")
        scheme = str(labels.get("__scheme__", "http"))
        path = str(labels.get("__metrics_path__", "/metrics"))
        for name in labels:  # a name such as `team\n` would make the whole /metrics unparsable: refused, as Prometheus refuses it
            if not _LABEL_NAME.fullmatch(str(name)):
                raise TargetsError(f"{source}: group {index}: {str(name)!r} is not a label name ([a-zA-Z_][a-zA-Z0-9_]*)")
        kept = {str(k): str(v) for k, v in labels.items() if not str(k).startswith("__")}
        for address in group.get("targets", []):
            address = str(address)
            if "://" in address or "/" in address:
                raise TargetsError(f"{source}: group {index}: target {address!r} must be host:port")
            targets.append(Target(url=f"{scheme}://{address}{path}", labels=kept))
    return targets


class TargetsFile:
    """A file_sd file: `current()` re-reads it only when a file event or its mtime says it changed."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._mtime: float | None = None
        self._targets: list[Target] = []
        self._events = file_waker([os.path.dirname(os.path.abspath(path))])
        self._events.wake()  # the first call reads the file

    def close(self) -> None:
        self._events.close()

    def reload(self) -> None:
        self._mtime = None

    def current(self) -> list[Target]:
        """The targets now; the last good list is kept while the file is missing or broken."""
        try:
            mtime = os.stat(self.path).st_mtime
        except OSError:
            return self._targets
        if not self._events.wait(0) and mtime == self._mtime:  # wait(0): was there an event? (and clear it)
            return self._targets
        try:
            with open(self.path, encoding="utf-8") as handle:
                targets = parse_targets_file(handle.read(), self.path)
        except (OSError, TargetsError) as error:
            log.warning("targets file not reloaded, keeping the last good one path=%s error=%s", self.path, error)
            return self._targets
        self._mtime = mtime
        if [t.url for t in targets] != [t.url for t in self._targets]:
            log.info("targets reloaded path=%s targets=%d", self.path, len(targets))
        self._targets = targets
        return targets


def default_pairs(logs: Sequence[str], target_urls: Sequence[str], plugin_dirs: Sequence[str] = ()) -> list[tuple[str, str]]:
    """At most one of each (log file or stdin, target, plugin directory): the usual sidecar of one
    server, so they are the same server and each pair of them is cross-checked."""
    sides = []
    if len(plugin_dirs) == 1:
        sides.append(plugin_dirs[0].rstrip("/") or "/")
    if len(target_urls) == 1:
        sides.append(target_urls[0])
    if len(logs) == 1 and not glob.has_magic(logs[0]):
        sides.append(logs[0])
    if len(plugin_dirs) > 1 or len(target_urls) > 1 or len(logs) > 1:
        return []
    return [(a, b) for i, a in enumerate(sides) for b in sides[i + 1 :]]
