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
from typing import TYPE_CHECKING, Any

import numpy as np

from exporter.records import Interval
from exporter.state.fold import RECENT_FOLD_AT, drafts_unknown
from exporter.state.periods import Period
from exporter.state.reference import HEALTHY, UNHEALTHY, Bucket, Profile, ReferenceRule, SeriesMemory, add_counts, repeat_of, with_day

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
        if len(window) + len(columns) >= RECENT_FOLD_AT:
            return None  # the window may start folding by granule inside the block (state/fold.py): one at a time
        leaving, held, staying = window.split(float(columns.ends[-1]) - window.seconds)
        if (columns.ks != k).any() or len(held.accepted_per_position) not in (0, k) or columns.positions.shape[1] != k:
            return None
        if held.drafts_unknown or held.emitted_known or held.draft_tokens_per_position or (staying is not None and len(held.accepted_per_position) != k):
            return None
        if any(drafts_unknown(i) or len(i.accepted_per_position) != k for i in leaving):
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
    """A profile after learning many rows, and what the verdict judged against before each of them."""

    profile: Profile
    learned: np.ndarray  # the rows learn() took (those with drafts), in order
    drafts: np.ndarray  # D of the pool before learned[p], for p = 0 … len(learned) (the last: after them all)
    accepted: np.ndarray
    best_drafts: np.ndarray  # the best candidate day's D and A before learned[p] (D 0: none)
    best_accepted: np.ndarray

    def before(self, first: int, stop: int, rule: ReferenceRule) -> tuple[np.ndarray, np.ndarray]:
        """(D, A) of the judged reference (Profile.judged; the pool's own when none is) as each row
        first … stop − 1 is judged."""
        return self.before_rows(np.arange(first, stop), rule)

    def before_rows(self, rows: np.ndarray, rule: ReferenceRule) -> tuple[np.ndarray, np.ndarray]:
        """`before` for the given rows (in order)."""
        at = np.searchsorted(self.learned, rows, side="left")
        drafts, accepted, best_drafts, best_accepted = self.drafts[at], self.accepted[at], self.best_drafts[at], self.best_accepted[at]
        live = (drafts > 0) & (drafts >= rule.min_drafts)
        best = (best_drafts > 0) & (~live | (best_accepted * drafts > accepted * best_drafts))
        return np.where(best, best_drafts, drafts), np.where(best, best_accepted, accepted)


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


def taught(profile: Profile, rows: _Rows, chosen: np.ndarray, rule: ReferenceRule) -> tuple[np.ndarray, Pooled]:
    """The chosen rows that teach `profile` — neither the collapse nor, against the reference judged
    before each, the drop on their own (ReferenceRule.drops) — and the profile after them. A row
    left out raises the reference the later rows are judged against, so this is the fixpoint:
    from all of them, the rows below their reference leave until none is (one pass where no row
    can be below even the highest reference they could meet)."""
    kept = teaching(rows, chosen, rule)
    pooled = pool(profile, rows, kept, rule)
    collapse = rule.collapse
    if collapse is None or not collapse.relative_drop or not len(kept):
        return kept, pooled
    while len(kept):
        drafts = rows.drafts[kept]
        counted = drafts >= max(1, collapse.min_drafts)
        own = 1.0 + rows.accepted[kept] / np.where(drafts > 0, drafts, 1)
        highest = max([1.0 + b.accepted / b.drafts for b in (*profile.days, *profile.buckets) if b.drafts] + [float(own.max())])
        if not (counted & (own - 1.0 < (1.0 - collapse.relative_drop) * (highest - 1.0))).any():
            return kept, pooled
        ref_drafts, ref_accepted = pooled.before_rows(kept, rule)
        ready = (ref_drafts > 0) & (ref_drafts >= rule.min_drafts)
        length = np.where(ready, 1.0 + ref_accepted / np.where(ready, ref_drafts, 1), np.nan)
        with np.errstate(invalid="ignore"):
            below = counted & ready & (own - 1.0 < (1.0 - collapse.relative_drop) * (length - 1.0))
        if not below.any():
            return kept, pooled
        kept = kept[~below]
        pooled = pool(profile, rows, kept, rule)
    return kept, pooled


def pool(profile: Profile, rows: _Rows, chosen: np.ndarray, rule: ReferenceRule) -> Pooled:
    """`profile.learn` of each chosen row in order, at once (rows end in order: buckets are runs)."""
    learned = chosen[rows.drafts[chosen] > 0]  # learn() passes over an interval without drafts
    if not len(learned):
        best = profile.days[0] if profile.days else Bucket(0.0, 0.0, 0, 0, ())
        return Pooled(profile, learned, np.array([profile.drafts]), np.array([profile.accepted]), np.array([best.drafts]), np.array([best.accepted]))
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
    first_row = learned[0]
    began = profile.began if profile.began is not None else float(rows.ends[first_row] if np.isnan(rows.starts[first_row]) else rows.starts[first_row])
    days, best_drafts, best_accepted = _days(profile.days, buckets, leaves, len(old), spans, rows.ends[learned] - rule.lookback_seconds, began, rule)
    return Pooled(
        Profile(kept.buckets, days, began), learned,
        profile.drafts + np.concatenate(([0], np.cumsum(drafts))) - np.cumsum(gone_drafts),
        profile.accepted + np.concatenate(([0], np.cumsum(accepted))) - np.cumsum(gone_accepted),
        best_drafts, best_accepted,
    )


def _days(
    days: tuple[Bucket, ...], buckets: list[Bucket], leaves: list[int], old: int, spans: list[tuple[float, int, int]],
    lookbacks: np.ndarray, began: float | None, rule: ReferenceRule,
) -> tuple[tuple[Bucket, ...], np.ndarray, np.ndarray]:
    """The candidate days after the learns, and the best one's (D, A) before each learn, as
    Profile.learn moves them: when learn p opens a bucket, the window's pool (the complete buckets
    not yet left) joins them; then the days that ended before learn p's lookback leave."""
    joins: list[tuple[int, Bucket | None]] = []
    for j, (_, first, _) in enumerate(spans):
        if old + j == 0:
            continue  # the very first bucket: nothing pooled before it
        present = Profile(tuple(b for b, leave in zip(buckets[: old + j], leaves[: old + j], strict=True) if leave >= first))
        joins.append((first, present.pooled()))
    n = len(lookbacks)
    best_drafts, best_accepted = np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64)
    current, filled, upcoming = list(days), 0, iter(joins)
    join = next(upcoming, None)
    while True:
        expires = int(np.searchsorted(lookbacks, current[0].end, side="left")) if current else n
        learn = min(join[0] if join is not None else n, expires)  # the next learn that changes the days
        if current:
            best_drafts[filled : learn + 1], best_accepted[filled : learn + 1] = current[0].drafts, current[0].accepted
        if learn >= n:
            return tuple(current), best_drafts, best_accepted
        if join is not None and join[0] == learn:
            current = list(with_day(tuple(current), join[1], began, rule))
            join = next(upcoming, None)
        current = [d for d in current if d.end > lookbacks[learn]]
        filled = learn + 1


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
        pooled = taught(memory.reference, self.rows, chosen[self.looks_healthy[at:stop]], self.rule)[1] if learning else pool(
            memory.reference, self.rows, chosen[:0], self.rule)
        ref_drafts, ref_accepted = pooled.before(self.base + at, self.base + stop, self.rule)
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
                row < stop and _judged(memory, self.rule) != (ref_drafts[row - at], ref_accepted[row - at])
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


def _judged(memory: SeriesMemory, rule: ReferenceRule) -> tuple[int, int]:
    """(D, A) of what the memory judges against now, as Pooled.before gives it."""
    judged = memory.reference.judged(rule) or memory.reference
    return judged.drafts, judged.accepted


def _repeated(memory: SeriesMemory, learns: str | None, rows: _Rows, chosen: np.ndarray, rule: ReferenceRule) -> SeriesMemory:
    if learns == "reference":
        kept, pooled = taught(memory.reference, rows, chosen, rule)
        return replace(_counted(memory, rows, chosen, ~np.isin(chosen, kept)), reference=pooled.profile)
    memory = _counted(memory, rows, chosen)
    if learns == "pending":
        return replace(memory, pending=pool(memory.pending, rows, chosen, rule).profile)
    return memory


def _sums(rows: _Rows, chosen: np.ndarray) -> tuple[Any, ...]:
    """Period.plus_sums' arguments for the chosen rows."""
    first, last = chosen[0], chosen[-1]
    start = float(rows.ends[first] if np.isnan(rows.starts[first]) else rows.starts[first])
    return (len(chosen), int(rows.drafts[chosen].sum()), 0, int(rows.draft_tokens[chosen].sum()), int(rows.accepted[chosen].sum()),
            tuple(rows.positions[chosen].sum(axis=0).tolist()), start, float(rows.ends[last]))


def _counted(memory: SeriesMemory, rows: _Rows, chosen: np.ndarray, dropped: np.ndarray | None = None) -> SeriesMemory:
    """The rows counted into the memory's period, as `observe` counts each where none changes it:
    aside while a recovery is being proven; rows unhealthy on their own (`dropped`) at the end as
    suspect, the rest (and the suspect before them, once healthy traffic follows) into the period."""
    last_at = float(rows.ends[chosen[-1]])
    if memory.recovering_since is not None:
        return replace(memory, last_at=last_at, held_back=memory.held_back.plus_sums(*_sums(rows, chosen)))
    healthy = np.flatnonzero(~dropped) if dropped is not None else np.arange(len(chosen))
    if not len(healthy):
        return replace(memory, last_at=last_at, suspect=memory.suspect.plus_sums(*_sums(rows, chosen)))
    cut = int(healthy[-1]) + 1
    period = memory.period.joined(memory.suspect).plus_sums(*_sums(rows, chosen[:cut]))
    suspect = Period().plus_sums(*_sums(rows, chosen[cut:])) if cut < len(chosen) else Period()
    return replace(memory, last_at=last_at, period=period, suspect=suspect)
