"""The verdict's memory over a block of one series' intervals at once (the batch path).

One interval at a time, the store judges the window that ends with it against the series'
reference and lets `observe` learn or freeze (state/reference.py): some 70 µs per interval, most
of analyze's time on a long log. Here the same memory moves by runs instead:

  * the judged window of every interval comes from prefix sums of D, A, T and A_i;
  * the verdicts of a stretch come from one vectorised call (judge/verdict_columns.py), judged
    against the reference the stretch would see: frozen, or learning every interval that looks
    healthy when judged without one (only a reference can turn such an interval degraded);
  * the first interval of each run of equal verdicts goes through `observe` itself; the rest of
    the run is applied as `repeat_of` says, with one pooled learn (`pool`, which is Profile.learn
    over many intervals) — until a recovery or a hold would complete, which `observe` takes again;
  * where `observe` shows the stretch's assumption wrong (the memory froze, thawed or adopted a
    new normal), the verdicts from there on are computed again.

The result is the memory and judged window that one interval at a time leaves
(tests/test_remember.py). Blocks this does not cover (k changing within the block, time running
backwards, a window holding intervals of another layout) return None: the caller goes one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from exporter.records import Interval
from exporter.state.reference import HEALTHY, UNHEALTHY, Bucket, Profile, ReferenceRule, SeriesMemory, add_counts, repeat_of

if TYPE_CHECKING:
    from exporter.intervals.columns import IntervalColumns
    from exporter.state.window import RollingWindow

FIRST_STRETCH = 256  # verdicts computed ahead after the assumption broke; doubled while it holds


@dataclass(frozen=True)
class WindowSums:
    """D, A, T and A_i (one column per position) summed over each interval's judged window."""

    drafts: np.ndarray
    accepted: np.ndarray
    draft_tokens: np.ndarray
    positions: np.ndarray

    def rows(self, first: int, stop: int) -> WindowSums:
        return WindowSums(self.drafts[first:stop], self.accepted[first:stop], self.draft_tokens[first:stop], self.positions[first:stop])


# the verdict of each window, judged against (reference L, nan when none is ready; reference D)
JudgeWindows = Callable[[WindowSums, np.ndarray, np.ndarray], np.ndarray]
Observe = Callable[[SeriesMemory, Interval, str], SeriesMemory]


@dataclass(frozen=True)
class _Rows:
    """The judged window's earlier intervals, then the block's, as columns."""

    ends: np.ndarray
    starts: np.ndarray  # nan: unknown
    drafts: np.ndarray
    accepted: np.ndarray
    draft_tokens: np.ndarray
    positions: np.ndarray

    @classmethod
    def of(cls, window: RollingWindow, columns: IntervalColumns, last_at: float | None) -> tuple[_Rows, int] | None:
        """The rows, and how many come before the block's: the intervals the judged window will
        evict during the block, then one row with the sums of those it keeps throughout (never
        evicted here, so their order does not matter), then the block's. None: not covered."""
        k = int(columns.ks[0])
        leaving, held, staying = window.split(float(columns.ends[-1]) - window.seconds)
        if (columns.ks != k).any() or len(held.accepted_per_position) not in (0, k) or columns.positions.shape[1] != k:
            return None
        if held.drafts_unknown or held.emitted_known or held.draft_tokens_per_position or (staying is not None and len(held.accepted_per_position) != k):
            return None
        if any(i.drafts is None or len(i.accepted_per_position) != k for i in leaving):
            return None
        ends = [i.end for i in leaving]
        drafts, accepted = [i.drafts or 0 for i in leaving], [i.accepted_tokens for i in leaving]
        tokens, positions = [i.draft_tokens for i in leaving], [list(i.accepted_per_position) for i in leaving]
        if staying is not None:  # the kept ones as one row: the held sums less the leaving ones
            ends.append(staying)
            drafts.append(held.drafts - sum(drafts))
            accepted.append(held.accepted_tokens - sum(accepted))
            tokens.append(held.draft_tokens - sum(tokens))
            positions.append([total - sum(column) for total, column in zip(held.accepted_per_position, zip(*positions, strict=True), strict=True)]
                             if positions else list(held.accepted_per_position))
        all_ends = np.concatenate((ends, columns.ends))
        if (np.diff(all_ends) < 0).any() or (last_at is not None and columns.ends[0] < last_at):
            return None
        rows = cls(
            ends=all_ends,
            starts=np.concatenate(([np.nan] * len(ends), columns.starts)),  # only the block's rows are ever learned
            drafts=np.concatenate((drafts, columns.drafts)).astype(np.int64),
            accepted=np.concatenate((accepted, columns.accepted)).astype(np.int64),
            draft_tokens=np.concatenate((tokens, columns.draft_tokens)).astype(np.int64),
            positions=np.concatenate((np.array(positions, dtype=np.int64).reshape(-1, k), columns.positions)),
        )
        return rows, len(ends)

    def windows(self, first: int, seconds: float) -> tuple[WindowSums, np.ndarray]:
        """Sums over the window ending at each row from `first` on, and where each window starts:
        RollingWindow evicts the intervals that ended at or before end − seconds."""
        starts = np.searchsorted(self.ends, self.ends[first:] - seconds, side="right")
        rows = np.arange(first + 1, len(self.ends) + 1)

        def summed(column: np.ndarray) -> np.ndarray:
            prefix = np.concatenate((np.zeros((1, *column.shape[1:]), np.int64), np.cumsum(column, axis=0)))
            total: np.ndarray = prefix[rows] - prefix[starts]
            return total

        return WindowSums(summed(self.drafts), summed(self.accepted), summed(self.draft_tokens), summed(self.positions)), starts


@dataclass(frozen=True)
class Pooled:
    """A profile after learning many rows, and its (D, A) sums before each of them."""

    profile: Profile
    learned: np.ndarray  # the rows learn() took (those with drafts), in order
    drafts: np.ndarray  # D before learned[p], for p = 0 … len(learned) (the last: after them all)
    accepted: np.ndarray

    def before(self, first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """(D, A) of the profile as each row first … stop − 1 is judged."""
        at = np.searchsorted(self.learned, np.arange(first, stop), side="left")
        return self.drafts[at], self.accepted[at]


def teaching(rows: _Rows, chosen: np.ndarray, rule: ReferenceRule) -> np.ndarray:
    """The chosen rows that `rule.teaches` (those that do not show the collapse on their own)."""
    collapse = rule.collapse
    if collapse is None or not len(chosen) or rows.positions.shape[1] == 0:
        return chosen
    drafts = rows.drafts[chosen]
    safe = np.where(drafts > 0, drafts, 1)
    shows: np.ndarray = ((drafts >= collapse.min_drafts) & (1.0 + rows.accepted[chosen] / safe <= collapse.max_mean_acceptance_length)
             & (rows.positions[chosen, 0] / safe <= collapse.max_position0_acceptance))
    kept: np.ndarray = chosen[~shows]
    return kept


def pool(profile: Profile, rows: _Rows, chosen: np.ndarray, rule: ReferenceRule) -> Pooled:
    """`profile.learn` of each chosen row in order, at once (rows end in order: buckets are runs)."""
    learned = chosen[rows.drafts[chosen] > 0]  # learn() passes over an interval without drafts
    if not len(learned):
        return Pooled(profile, learned, np.array([profile.drafts]), np.array([profile.accepted]))
    old = list(profile.buckets)
    ends, horizons = rows.ends[learned], rows.ends[learned] - rule.window_seconds
    # new buckets as (start, first, stop) over `learned`; the old last bucket takes rows while they end before its start + a bucket
    at = int(np.searchsorted(ends, old[-1].start + rule.bucket_seconds, side="left")) if old else 0
    merged, spans = at, []
    while at < len(learned):
        row = learned[at]
        start = float(rows.ends[row] if np.isnan(rows.starts[row]) else rows.starts[row])
        stop = max(at + 1, int(np.searchsorted(ends, start + rule.bucket_seconds, side="left")))
        spans.append((start, at, stop))
        at = stop
    drafts, accepted, positions = rows.drafts[learned], rows.accepted[learned], rows.positions[learned]
    buckets, closed = list(old), [-1] * len(old)  # closed: the learned position after which a bucket takes no more rows
    if merged:
        last = old[-1]
        joined = tuple(positions[:merged].sum(axis=0).tolist())
        buckets[-1] = Bucket(last.start, max(last.end, float(ends[merged - 1])), last.drafts + int(drafts[:merged].sum()),
                             last.accepted + int(accepted[:merged].sum()), add_counts(last.accepted_per_position, joined))
        closed[-1] = merged - 1
    if spans:
        cuts = [first for _, first, _ in spans]
        sums = (np.add.reduceat(column, cuts, axis=0).tolist() for column in (drafts, accepted, positions))
        for (start, _, stop), d, a, p in zip(spans, *sums, strict=True):
            buckets.append(Bucket(start, float(ends[stop - 1]), d, a, tuple(p)))
            closed.append(stop - 1)
    # a bucket leaves at the first learn whose horizon reaches its final end (the newest one stays)
    leaves = [max(after + 1, int(np.searchsorted(horizons, b.end, side="left"))) for b, after in zip(buckets, closed, strict=True)]
    leaves[-1] = len(learned)
    gone_drafts, gone_accepted = np.zeros(len(learned) + 1, np.int64), np.zeros(len(learned) + 1, np.int64)
    for bucket, leave in zip(buckets, leaves, strict=True):
        if leave < len(learned):
            gone_drafts[leave + 1] += bucket.drafts
            gone_accepted[leave + 1] += bucket.accepted
    kept = Profile(tuple(b for b, leave in zip(buckets, leaves, strict=True) if leave >= len(learned)))
    return Pooled(
        kept, learned,
        profile.drafts + np.concatenate(([0], np.cumsum(drafts))) - np.cumsum(gone_drafts),
        profile.accepted + np.concatenate(([0], np.cumsum(accepted))) - np.cumsum(gone_accepted),
    )


def remember_columns(
    memory: SeriesMemory, window: RollingWindow, columns: IntervalColumns, judge: JudgeWindows, observe: Observe, rule: ReferenceRule,
) -> tuple[SeriesMemory, int] | None:
    """The memory after every interval of `columns`, judged over `window` (the judged window as it
    stands before the block, left as it is), and the first of the block's rows still in the judged
    window after the last; None when the block is not one this covers."""
    covered = _Rows.of(window, columns, memory.last_at) if window.seconds > 0 and rule.window_seconds > 0 and len(columns) else None
    if covered is None:
        return None
    rows, base = covered
    sums, window_starts = rows.windows(base, window.seconds)
    looks_healthy = np.isin(judge(sums, np.full(len(columns), np.nan), np.zeros(len(columns), np.int64)), tuple(HEALTHY))
    walk = _Walk(rows, columns, base, sums, looks_healthy, judge, observe, rule)
    at, stretch = 0, FIRST_STRETCH
    while at < len(columns):
        stop = min(len(columns), at + stretch)
        memory, reached = walk.stretch(memory, at, stop)
        at, stretch = reached, (stretch * 2 if reached == stop else FIRST_STRETCH)
    return memory, max(0, int(window_starts[-1]) - base)


@dataclass(frozen=True)
class _Walk:
    """One block's walk through its verdicts, a stretch at a time."""

    rows: _Rows
    columns: IntervalColumns
    base: int  # rows of the judged window before the block
    sums: WindowSums  # each block row's judged window
    looks_healthy: np.ndarray  # healthy when judged without a reference
    judge: JudgeWindows
    observe: Observe
    rule: ReferenceRule

    def stretch(self, memory: SeriesMemory, at: int, stop: int) -> tuple[SeriesMemory, int]:
        """The memory after block rows at … up to where the verdicts hold; that row."""
        learning = memory.state not in UNHEALTHY  # else the reference is frozen for the whole stretch
        chosen = self.base + np.arange(at, stop)
        pooled = pool(memory.reference, self.rows, teaching(self.rows, chosen[self.looks_healthy[at:stop]], self.rule) if learning else chosen[:0], self.rule)
        ref_drafts, ref_accepted = pooled.before(self.base + at, self.base + stop)
        ready = (ref_drafts >= self.rule.min_drafts) & (ref_drafts > 0)
        lengths = np.where(ready, 1.0 + ref_accepted / np.where(ready, ref_drafts, 1), np.nan)
        judged = self.judge(self.sums.rows(at, stop), lengths, ref_drafts)
        states = judged.tolist()  # str, as the scalar judge says it
        changes = np.flatnonzero(judged[1:] != judged[:-1]) + 1  # where a run of equal verdicts begins
        row = at
        while row < stop:
            state = states[row - at]
            memory = self.observe(memory, self.columns.intervals(row, row + 1)[0], state)
            row += 1
            if (memory.state not in UNHEALTHY) != learning or (
                row < stop and (memory.reference.drafts, memory.reference.accepted) != (ref_drafts[row - at], ref_accepted[row - at])
            ):
                return memory, row  # the stretch's assumption about the reference no longer holds: judge again from here
            following = int(np.searchsorted(changes, row - at, side="left"))
            run_end = at + (int(changes[following]) if following < len(changes) else stop - at)
            repeat = repeat_of(memory, state, self.rule)
            if repeat is not None and run_end > row:
                crossing = np.flatnonzero(self.rows.ends[self.base + row : self.base + run_end] - repeat.origin >= repeat.seconds)
                until = row + (int(crossing[0]) if len(crossing) else run_end - row)
                if until > row:
                    memory = _repeated(memory, repeat.learns, self.rows, self.base + np.arange(row, until), self.rule)
                    row = until
        return memory, stop


def _repeated(memory: SeriesMemory, learns: str | None, rows: _Rows, chosen: np.ndarray, rule: ReferenceRule) -> SeriesMemory:
    last_at = float(rows.ends[chosen[-1]])
    if learns == "reference":
        return replace(memory, last_at=last_at, reference=pool(memory.reference, rows, teaching(rows, chosen, rule), rule).profile)
    if learns == "pending":
        return replace(memory, last_at=last_at, pending=pool(memory.pending, rows, chosen, rule).profile)
    return replace(memory, last_at=last_at)
