"""Who writes a log: two vLLM servers appending to one file are one series, unless someone says so.

The spec lines of one server come from one API-server process; a restart brings a new pid after a
startup block, never the old one back. Spec lines whose pids alternate (A, B, A) are two servers
writing at once: their numbers would be pooled under one series and the last startup's config (L
3.12 where the two were 2.80 and 3.36). Two servers in containers both print `(APIServer pid=1)`:
then the pids say nothing, but one engine's stat logger prints one V1 spec line per logging
interval (`VLLM_LOG_STATS_INTERVAL`, 10 s by default; the line's own A / accepted throughput is its
length), so two lines of one pid and engine closer than half that interval — or in the same second,
where the line prints no throughput — come from two loggers (issue #32). Until they are told apart
by pid and startup block, the sidecar says so, once per log, naming what it saw; the report shows
it as a note.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

STAMP_SLACK_SECONDS = 1.0  # vLLM's stamps are whole seconds
N = TypeVar("N", float, "np.ndarray")


def overlapping(gap: N, seconds: N) -> N:
    """Two V1 spec lines of one pid and engine, `gap` seconds apart by their stamps, the later one
    `seconds` long (nan: not printed), that one stat logger cannot have written: closer than half
    its interval, or in the same second. A gap below zero is a clock or a concatenation, not this.
    For one pair, or elementwise over a block's arrays."""
    return (gap >= -STAMP_SLACK_SECONDS) & ((gap < 0.5 * seconds - STAMP_SLACK_SECONDS) | ((seconds != seconds) & (gap < STAMP_SLACK_SECONDS)))  # type: ignore[no-any-return]


@dataclass
class WriterWatch:
    upstream: str
    _last: int | None = None
    _seen: set[int] = field(default_factory=set)
    _logged: dict[tuple[int | None, str], float] = field(default_factory=dict)  # each pid and engine's last spec line's own time
    warned: bool = False
    note: str | None = None  # what was seen, for the report

    def spec_line_from(self, pid: int | None) -> None:
        if pid is None or pid == self._last:
            return
        if pid in self._seen and self._last is not None:
            self._say(f"spec lines from pids {self._last} and {pid}, interleaved")
        if len(self._seen) < 4096:  # bounded: a log of a million pids keeps the first 4096
            self._seen.add(pid)
        self._last = pid

    def spec_line_at(self, pid: int | None, engine: str, logged: float | None, seconds: float | None) -> None:
        """A V1 spec line's own time and printed length (None: not known), line by line."""
        if logged is None:
            return
        before = self._logged.get((pid, engine))
        if before is not None or len(self._logged) < 4096:  # bounded, as the pids are
            self._logged[(pid, engine)] = logged
        if before is not None and overlapping(logged - before, float("nan") if seconds is None else seconds):
            self._say(self._overlap(pid, engine, logged - before, seconds))

    def spec_lines_at(self, pid: np.ndarray, engine: Sequence[str], logged: np.ndarray, seconds: np.ndarray) -> None:
        """`spec_line_at` for a block's V1 lines in order (pid -1: none; nan: not known), the rule on arrays."""
        import numpy as np  # only where blocks are batched

        names = np.asarray(engine, dtype=object)
        for process, name in {(int(p), str(e)) for p, e in zip(pid.tolist(), names.tolist(), strict=True)}:
            rows = np.flatnonzero((pid == process) & (names == name) & ~np.isnan(logged))
            if not len(rows):
                continue
            key = (None if process < 0 else process, name)
            times = logged[rows]
            before = self._logged.get(key)
            gaps = np.diff(times, prepend=np.nan if before is None else before)
            self._logged[key] = float(times[-1])
            hits = np.flatnonzero(overlapping(gaps, seconds[rows]))
            if len(hits):
                first = hits[0]
                length = float(seconds[rows][first])
                self._say(self._overlap(key[0], name, float(gaps[first]), None if np.isnan(length) else length))

    @staticmethod
    def _overlap(pid: int | None, engine: str, gap: float, seconds: float | None) -> str:
        who = f"pid {pid}" if pid is not None else "lines without a pid"
        interval = f" though each covers {seconds:.0f} s" if seconds is not None else ""
        return f"two spec lines of {who}, engine {engine}, {gap:.0f} s apart{interval}"

    def _say(self, seen: str) -> None:
        if self.warned:
            return
        self.warned = True
        self.note = (f"two vLLM servers seem to write this log ({seen}): their numbers are pooled under one series; "
                     "give each server its own log file")
        log.warning("two vLLM servers seem to write one log (%s): their numbers are pooled under one series; give each server its own "
                    "log file upstream=%s", seen, self.upstream)
