"""Many Intervals of one series as columns: what the batch path hands the store.

`intervals()` gives the Interval records (for windows, which keep each one, and for tests);
`added_to(totals)` gives exactly what Totals.plus applied to each in turn gives, without the loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from exporter.records import Interval, SeriesKey
from exporter.window import Totals, _add_positions


@dataclass(frozen=True)
class IntervalColumns:
    key: SeriesKey
    variant: str
    ends: np.ndarray
    starts: np.ndarray  # nan: unknown
    seconds: np.ndarray  # nan: unknown
    accepted: np.ndarray
    draft_tokens: np.ndarray
    drafts: np.ndarray
    low: np.ndarray
    high: np.ndarray
    ks: np.ndarray
    positions: np.ndarray  # (n, width ≥ k); row i's A_i are its first ks[i]

    @classmethod
    def build(cls, *, key: SeriesKey, variant: str, ends: np.ndarray, starts: np.ndarray, accepted: np.ndarray, draft_tokens: np.ndarray,
              throughput: np.ndarray, drafts: np.ndarray, low: np.ndarray, high: np.ndarray, ks: np.ndarray, positions: np.ndarray) -> IntervalColumns:
        """The interval's length as LogInterpreter._seconds takes it: A / accepted throughput, else line spacing."""
        with np.errstate(divide="ignore", invalid="ignore"):
            printed = (throughput > 0) & (throughput < np.inf) & (accepted > 0)
            spacing = np.where(~np.isnan(starts) & (ends > starts), ends - starts, np.nan)
            seconds = np.where(printed, accepted / throughput, spacing)
        return cls(key, variant, ends, starts, seconds, accepted, draft_tokens, drafts, low, high, ks, positions[:, : int(ks.max())])

    def __len__(self) -> int:
        return len(self.ends)

    def intervals(self) -> list[Interval]:
        def known(values: np.ndarray) -> list[float | None]:
            return [None if math.isnan(value) else value for value in values.tolist()]

        rows = zip(self.ends.tolist(), known(self.starts), known(self.seconds), self.draft_tokens.tolist(), self.accepted.tolist(),
                   self.drafts.tolist(), self.positions.tolist(), self.ks.tolist(), self.low.tolist(), self.high.tolist())
        return [
            Interval(key=self.key, end=end, start=start, seconds=seconds, draft_tokens=t, accepted_tokens=a, drafts=d,
                     accepted_per_position=tuple(positions[:k]), k=k, drafts_range=(low, high), variant=self.variant)
            for end, start, seconds, t, a, d, positions, k, low, high in rows
        ]

    def added_to(self, totals: Totals) -> Totals:
        """totals.plus(i) for each interval i in order; sums of integers are exact in any order, and
        the float sum of seconds is accumulated left to right as the loop would."""
        first_start = self.ends[0] if math.isnan(self.starts[0]) else self.starts[0]
        seconds = float(np.add.accumulate(np.concatenate(([totals.seconds], np.nan_to_num(self.seconds, nan=0.0))))[-1])
        end = float(self.ends.max())
        return replace(
            totals,
            intervals=totals.intervals + len(self),
            draft_tokens=totals.draft_tokens + int(self.draft_tokens.sum()),
            accepted_tokens=totals.accepted_tokens + int(self.accepted.sum()),
            drafts=totals.drafts + int(self.drafts.sum()),
            drafts_low=totals.drafts_low + int(self.low.sum()),
            drafts_high=totals.drafts_high + int(self.high.sum()),
            accepted_per_position=_add_positions(totals.accepted_per_position, tuple(self.positions.sum(axis=0).tolist())),
            k=int(self.ks[-1]),
            seconds=max(0.0, seconds),
            start=float(first_start) if totals.start is None else totals.start,
            end=end if totals.end is None or end > totals.end else totals.end,
        )

    def average_points(self) -> tuple[list[int], list[int], list[float]]:
        """(A, D, end) of each interval, for the slow average (every batch interval knows D ≥ 1)."""
        return self.accepted.tolist(), self.drafts.tolist(), self.ends.tolist()
