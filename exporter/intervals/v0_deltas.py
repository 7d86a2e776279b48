"""vLLM V0's cumulative spec lines → the counts of each interval (deltas), as from_scrape.py does for counters.

V0 prints totals since the server started on every line, so an interval is the difference between
consecutive lines of one process in one run. The first line of a run (after a startup line, or the
first of a file read from its start) is a result, not only a baseline; counts that drop, or another
k, mean the server restarted without its startup lines in the log: the line counts from zero again
(never a negative or a spike). Reading that joins a running server's log counts nothing for a
process's first line, which only sets its baseline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from exporter.records import ParsedSpecLine


class V0Counts(NamedTuple):
    """What a V0 interval counts: T, A, D, k, the emitted tokens E, and whether it is its run's first."""

    draft_tokens: int
    accepted: int
    drafts: int
    k: int
    emitted: int
    new_run: bool


@dataclass
class V0Deltas:
    """The last cumulative line of each process in the current run of one log."""

    restarts: int = 0  # restarts seen without startup lines (counts that fell, another k)
    _baseline: dict[int | None, ParsedSpecLine] = field(default_factory=dict)
    _joined: bool = False  # see joined_mid_run

    def server_started(self) -> None:
        """A startup line: V0's cumulative counts begin again at zero, so the next line counts from zero."""
        self._baseline.clear()
        self._joined = False

    def joined_mid_run(self) -> None:
        """Reading starts inside a running server's log (its end, or a saved position): the first V0
        line of each process is only a baseline, since what it counts was counted before (or never)."""
        self._baseline.clear()
        self._joined = True

    def delta(self, pid: int | None, parsed: ParsedSpecLine) -> V0Counts | str | None:
        """The counts since the previous cumulative line of this process in the same run, None when
        nothing was drafted since, or a problem's reason.

        V0 judges every drafted position, so its A counts accepted tokens after a rejection too: A is
        reported as logged (A/T is the rate V0 prints), D = T/k (V0 asserts T is a multiple of k,
        spec_decode/metrics.py in 0.6.3) and L = E/D with the emitted tokens E, at least one per draft.
        """
        joined = self._joined and pid not in self._baseline
        previous = self._baseline.get(pid)
        self._baseline[pid] = parsed
        k = parsed.num_speculative_tokens or 0
        if joined:
            return None  # joined mid-run: what this line counts was counted before, or never
        now = (parsed.draft_tokens, parsed.emitted_tokens or 0, parsed.accepted_tokens)
        before = (0, 0, 0) if previous is None else (previous.draft_tokens, previous.emitted_tokens or 0, previous.accepted_tokens)
        new_run = previous is None
        if previous is not None and (any(n < b for n, b in zip(now, before, strict=True)) or previous.num_speculative_tokens != parsed.num_speculative_tokens):
            self.restarts += 1
            before, new_run = (0, 0, 0), True  # a restart without startup lines: this line counts from zero
        draft_tokens, emitted, accepted = now[0] - before[0], now[1] - before[1], now[2] - before[2]
        if draft_tokens == 0 or k <= 0:
            return None
        drafts = draft_tokens // k  # V0 asserts draft tokens are a multiple of k
        if accepted > draft_tokens or (parsed.emitted_tokens is not None and emitted < drafts):
            return "inconsistent_counts"
        return V0Counts(draft_tokens, accepted, drafts, k, emitted, new_run)
