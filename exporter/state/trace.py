"""A series' traffic as a bounded list of stretches, for a report written after the fact (analyze).

The live verdict judges the window that ends at each interval, so it lags what happened: after a
restart into a broken drafter its window still holds minutes of the healthy life, and a recovery is
believed only once it held. A report written after the fact can label each stretch of traffic by
its own numbers (judge/hindsight.py). This keeps what that needs: D, T, A and A_i (and V0's E)
summed over consecutive intervals, in runs cut where the server restarted or its speculative
config changed (never pooled across a cut), at most MAX_STRETCHES a series.

A stretch is the intervals j·2^m … (j + 1)·2^m − 1 of its run, m the smallest that keeps the count
within the limit: a function of the intervals alone, so one interval at a time (live following's
path) and a block at once (the batch path) leave the same stretches. A day of 10 s lines fits in
2048 stretches of 4 intervals (40 s); a week in 32768 → stretches of 32 intervals (5 min 20 s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from exporter.records import Interval
from exporter.state.reference import SpecIdentity
from exporter.state.window import Totals, _add_positions

if TYPE_CHECKING:
    from exporter.intervals.columns import IntervalColumns

MAX_STRETCHES = 2048


@dataclass(frozen=True, slots=True)
class Stretch:
    """Consecutive intervals of one run: their sums, and what began the run."""

    run: int  # runs are numbered in order
    index: int  # the stretch's place in its run, at the trace's current size
    began_by: str  # what began the run: "first_traffic" | "restart" | "config_change"
    identity: SpecIdentity
    totals: Totals


def joined(left: Totals, right: Totals) -> Totals:
    """`left` with `right`'s intervals (which come after them) added."""
    if not left.intervals:
        return right
    return Totals(
        intervals=left.intervals + right.intervals, draft_tokens=left.draft_tokens + right.draft_tokens,
        accepted_tokens=left.accepted_tokens + right.accepted_tokens, drafts=left.drafts + right.drafts,
        drafts_unknown=left.drafts_unknown + right.drafts_unknown, drafts_low=left.drafts_low + right.drafts_low,
        drafts_high=left.drafts_high + right.drafts_high,
        accepted_per_position=_add_positions(left.accepted_per_position, right.accepted_per_position),
        k=right.k if right.k is not None else left.k, emitted_tokens=left.emitted_tokens + right.emitted_tokens,
        emitted_known=left.emitted_known + right.emitted_known, start=left.start if left.start is not None else right.start,
        end=right.end if left.end is None or (right.end is not None and right.end > left.end) else left.end,
    )


def _one(interval: Interval) -> Totals:
    """An interval's sums as a stretch keeps them (no seconds: a stretch's length is its span)."""
    return replace(Totals().plus(interval), seconds=0.0, draft_tokens_per_position=())


class Trace:
    """One series' stretches (see the module's doc). Not thread-safe: the store calls it under its lock."""

    def __init__(self, limit: int = MAX_STRETCHES) -> None:
        self.limit = limit
        self.level = 0  # a stretch holds 2^level intervals
        self._stretches: list[Stretch] = []
        self._run = -1
        self._count = 0  # intervals of the current run so far
        self._cut = "first_traffic"  # what begins the next run ("": none pending)
        self._identity: SpecIdentity | None = None

    def cut(self, why: str) -> None:
        """The server restarted (or a new normal was taken): the next interval begins a run."""
        if self._stretches and not self._cut:
            self._cut = why

    def _begin(self, identity: SpecIdentity) -> None:
        if self._identity is not None and self._identity.conflicts(identity):
            self._cut = "config_change"
        self._identity = identity if self._identity is None or self._cut else identity.filled(self._identity)
        if self._cut:
            self._run, self._count = self._run + 1, 0

    def add(self, interval: Interval, identity: SpecIdentity) -> None:
        self._begin(identity)
        totals = _one(interval)
        if not self._count:  # a run's first interval starts where it did, not where the last run ended
            totals = replace(totals, start=_run_start(interval.end, interval.start, interval.seconds))
        self._put(self._count >> self.level, totals, identity)
        self._count += 1
        self._fit()

    def add_columns(self, columns: IntervalColumns, identity: SpecIdentity) -> None:
        """`add` of each row of `columns` in turn, their sums taken a stretch at a time."""
        import numpy as np  # only where blocks are batched

        self._begin(identity)
        n = len(columns)
        indices = (self._count + np.arange(n)) >> self.level
        cuts = np.concatenate(([0], np.flatnonzero(np.diff(indices)) + 1))
        sums = [np.add.reduceat(column, cuts, axis=0).tolist() for column in
                (columns.draft_tokens, columns.accepted, columns.drafts, columns.low, columns.high, columns.positions)]
        counts = np.diff(np.concatenate((cuts, [n]))).tolist()
        starts = np.where(np.isnan(columns.starts), columns.ends, columns.starts)[cuts].tolist()
        if not self._count:  # as `add`: a run's first interval starts where it did
            first_start, first_seconds = float(columns.starts[0]), float(columns.seconds[0])
            starts[0] = _run_start(float(columns.ends[0]), None if math.isnan(first_start) else first_start,
                                   None if math.isnan(first_seconds) else first_seconds)
        ends = np.maximum.reduceat(columns.ends, cuts).tolist()
        ks = columns.ks[np.concatenate((cuts[1:], [n])) - 1].tolist()
        widths = np.maximum.reduceat(columns.ks, cuts).tolist()  # as wide as the widest k among them (the columns pad to the block's)
        for index, count, tokens, accepted, drafts, low, high, positions, start, end, k, width in zip(
                indices[cuts].tolist(), counts, *sums, starts, ends, ks, widths, strict=True):
            self._put(index, Totals(intervals=count, draft_tokens=tokens, accepted_tokens=accepted, drafts=drafts, drafts_low=low,
                                    drafts_high=high, accepted_per_position=tuple(positions[:width]), k=k, start=start, end=end), identity)
        self._count += n
        self._fit()

    def _put(self, index: int, totals: Totals, identity: SpecIdentity) -> None:
        last = self._stretches[-1] if self._stretches else None
        if last is not None and last.run == self._run and last.index == index:
            self._stretches[-1] = replace(last, identity=identity.filled(last.identity), totals=joined(last.totals, totals))
        else:
            self._stretches.append(Stretch(self._run, index, self._cut or (last.began_by if last is not None and last.run == self._run else ""),
                                           identity, totals))
        self._cut = ""

    def _fit(self) -> None:
        """Pool neighbours in pairs (within a run) until the stretches fit the limit; where every run
        is one stretch and they still do not (more restarts than the limit), the oldest runs leave."""
        while len(self._stretches) > self.limit:
            if self._runs() >= len(self._stretches):
                del self._stretches[: len(self._stretches) - self.limit]
                return
            self.level += 1
            pooled: list[Stretch] = []
            for stretch in self._stretches:
                index = stretch.index >> 1
                last = pooled[-1] if pooled else None
                if last is not None and last.run == stretch.run and last.index == index:
                    pooled[-1] = replace(last, identity=stretch.identity.filled(last.identity), totals=joined(last.totals, stretch.totals))
                else:
                    pooled.append(replace(stretch, index=index))
            self._stretches = pooled

    def _runs(self) -> int:
        return len({stretch.run for stretch in self._stretches})

    def stretches(self) -> tuple[Stretch, ...]:
        return tuple(self._stretches)


def _run_start(end: float, start: float | None, seconds: float | None) -> float:
    """A run's first interval's start: its own length back from its end (the line's start is the
    previous run's last end, before the restart's downtime), else its end."""
    if seconds is not None and seconds > 0:
        return end - seconds if start is None else max(start, end - seconds)
    return end


def span_seconds(totals: Totals) -> float:
    """A stretch's length: from its first interval's start to its last's end."""
    return 0.0 if totals.start is None or totals.end is None or math.isnan(totals.start) else max(0.0, totals.end - totals.start)
