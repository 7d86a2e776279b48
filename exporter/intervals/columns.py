"""Many Intervals of one series as columns: what the batch path hands its sink.

`intervals()` gives the Interval records (for windows and the verdict's memory, which take each
one, and for tests); `sums()` and `seconds_after()` give what the state stage needs to add them
all to a series' lifetime at once (exporter/state/window.py plus_columns), exactly as adding
them one by one would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from exporter.records import Interval, RecordSink, SeriesKey


@dataclass(frozen=True)
class IntervalColumns:
    key: SeriesKey
    variant: str
    ends: np.ndarray
    starts: np.ndarray  # nan: unknown
    seconds: np.ndarray  # nan: unknown
    logged: np.ndarray  # each line's own time (Interval.logged_at); nan: unknown
    accepted: np.ndarray
    draft_tokens: np.ndarray
    drafts: np.ndarray
    low: np.ndarray
    high: np.ndarray
    ks: np.ndarray
    positions: np.ndarray  # (n, width ≥ k); row i's A_i are its first ks[i]
    running: np.ndarray  # Interval.running; -1: unknown
    running_before: np.ndarray  # Interval.running_before; -1: unknown
    generation: np.ndarray  # Interval.generation_throughput; nan: unknown

    @classmethod
    def build(cls, *, key: SeriesKey, variant: str, ends: np.ndarray, starts: np.ndarray, logged: np.ndarray, accepted: np.ndarray,
              draft_tokens: np.ndarray, throughput: np.ndarray, drafts: np.ndarray, low: np.ndarray, high: np.ndarray, ks: np.ndarray,
              positions: np.ndarray, running: np.ndarray, running_before: np.ndarray, generation: np.ndarray) -> IntervalColumns:
        """The interval's length as from_vllm._seconds takes it: A / accepted throughput, else line spacing."""
        with np.errstate(divide="ignore", invalid="ignore"):
            printed = (throughput > 0) & (throughput < np.inf) & (accepted > 0)
            spacing = np.where(~np.isnan(starts) & (ends > starts), ends - starts, np.nan)
            seconds = np.where(printed, accepted / throughput, spacing)
        return cls(key, variant, ends, starts, seconds, logged, accepted, draft_tokens, drafts, low, high, ks, positions[:, : int(ks.max())],
                   running, running_before, generation)

    def rows(self, first: int, stop: int) -> IntervalColumns:
        """Rows first … stop − 1."""
        cut = slice(first, stop)
        return IntervalColumns(self.key, self.variant, self.ends[cut], self.starts[cut], self.seconds[cut], self.logged[cut], self.accepted[cut],
                               self.draft_tokens[cut], self.drafts[cut], self.low[cut], self.high[cut], self.ks[cut], self.positions[cut],
                               self.running[cut], self.running_before[cut], self.generation[cut])

    def __len__(self) -> int:
        return len(self.ends)

    def intervals(self, first: int = 0, stop: int | None = None) -> list[Interval]:
        """The Interval records of rows first … stop − 1 (all by default)."""
        def known(values: np.ndarray) -> list[float | None]:
            return [None if math.isnan(value) else value for value in values[first:stop].tolist()]

        def count(values: np.ndarray) -> list[int | None]:
            return [None if value < 0 else value for value in values[first:stop].tolist()]

        rows = zip(*(column[first:stop].tolist() for column in (self.ends, self.draft_tokens, self.accepted, self.drafts, self.positions, self.ks,
                                                                 self.low, self.high)), known(self.starts), known(self.seconds),
                   known(self.logged), count(self.running), count(self.running_before), known(self.generation), strict=True)
        return [
            Interval(key=self.key, end=end, start=start, seconds=seconds, draft_tokens=t, accepted_tokens=a, drafts=d,
                     accepted_per_position=tuple(positions[:k]), k=k, drafts_range=(low, high), variant=self.variant, logged_at=logged,
                     running=running, running_before=before, generation_throughput=generation)
            for end, t, a, d, positions, k, low, high, start, seconds, logged, running, before, generation in rows
        ]

    def sums(self) -> ColumnSums:
        """Σ T, A, D, D_lo, D_hi and A_i (zero-padded to the widest k), and the span's first start, last end and k."""
        first_start = self.ends[0] if math.isnan(self.starts[0]) else self.starts[0]
        return ColumnSums(
            draft_tokens=int(self.draft_tokens.sum()), accepted_tokens=int(self.accepted.sum()), drafts=int(self.drafts.sum()),
            drafts_low=int(self.low.sum()), drafts_high=int(self.high.sum()),
            accepted_per_position=tuple(self.positions.sum(axis=0).tolist()),
            first_start=float(first_start), last_end=float(self.ends.max()), last_k=int(self.ks[-1]),
        )

    def seconds_after(self, seconds: float) -> float:
        """`seconds` plus each known interval length in turn, left to right (as Totals.plus adds them;
        every length is positive, so its clamp at 0 never acts)."""
        return max(0.0, float(np.add.accumulate(np.concatenate(([seconds], np.nan_to_num(self.seconds, nan=0.0))))[-1]))


@dataclass(frozen=True, slots=True)
class ColumnSums:
    draft_tokens: int
    accepted_tokens: int
    drafts: int
    drafts_low: int
    drafts_high: int
    accepted_per_position: tuple[int, ...]
    first_start: float
    last_end: float
    last_k: int


@runtime_checkable
class ColumnSink(RecordSink, Protocol):
    """A sink that takes a series' intervals as columns (the store); others get them one by one."""

    def record_columns(self, columns: IntervalColumns) -> None: ...
