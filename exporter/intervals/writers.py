"""Who writes a log: two vLLM servers appending to one file are one series, unless someone says so.

The spec lines of one server come from one API-server process; a restart brings a new pid after a
startup block, never the old one back. Spec lines whose pids alternate (A, B, A) are two servers
writing at once: their numbers would be pooled under one series and the last startup's config (L
3.12 where the two were 2.80 and 3.36). Until they are told apart by pid and startup block, the
sidecar says so, once per log, naming the pids.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass
class WriterWatch:
    upstream: str
    _last: int | None = None
    _seen: set[int] = field(default_factory=set)
    warned: bool = False

    def spec_line_from(self, pid: int | None) -> None:
        if pid is None or pid == self._last:
            return
        if pid in self._seen and not self.warned and self._last is not None:
            self.warned = True
            log.warning("two vLLM servers seem to write one log (spec lines from pids %d and %d, interleaved): their numbers are "
                        "pooled under one series; give each server its own log file upstream=%s", self._last, pid, self.upstream)
        if not self.warned and len(self._seen) < 4096:  # said once: the pids are kept only until then (bounded)
            self._seen.add(pid)
        self._last = pid
