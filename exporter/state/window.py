"""Pooled sums of intervals: over a series' lifetime and over rolling time windows.

Rates over a window are computed from the *sums* of D, T, A and A_i (so they are weighted by
drafts), never by averaging per-line ratios. D is None for layouts that do not carry it (V1-a,
V1-b); one such interval makes the window's D unknown rather than wrong.
"""

from __future__ import annotations

import itertools
import operator
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from exporter.records import Interval
from exporter.state.fold import GRANULES, RECENT_FOLD_AT, Folded, drafts_unknown, emitted_known, fold, fold_block, lines, same_run
from exporter.state.load import LoadSums, columns_load, combined, load_of

if TYPE_CHECKING:
    from exporter.intervals.columns import IntervalColumns


def _add_positions(left: tuple[int, ...], right: tuple[int, ...], sign: int = 1) -> tuple[int, ...]:
    if len(left) != len(right):  # k changed, or one side has no positions: pad the shorter with zeros
        width = max(len(left), len(right))
        left, right = left + (0,) * (width - len(left)), right + (0,) * (width - len(right))
    return tuple(map(operator.add if sign > 0 else operator.sub, left, right))


@dataclass(frozen=True, slots=True)
class Totals:
    """D, T, A, A_i summed over some span of intervals."""

    intervals: int = 0
    draft_tokens: int = 0
    accepted_tokens: int = 0
    drafts: int = 0
    drafts_unknown: int = 0  # intervals whose D could not be known
    drafts_low: int = 0
    drafts_high: int = 0
    accepted_per_position: tuple[int, ...] = ()
    k: int | None = None
    draft_tokens_per_position: tuple[int, ...] = ()  # T_i: only plugin records carry them
    emitted_tokens: int = 0  # Σ E over the intervals that printed it (V0)
    emitted_known: int = 0  # how many intervals printed E; L = E/D only when all of them did
    seconds: float = 0.0  # summed interval lengths (those that are known)
    start: float | None = None
    end: float | None = None
    load: LoadSums = field(default_factory=LoadSums)  # the server's load over the intervals that printed it (state/load.py)

    @property
    def known_emitted(self) -> int | None:
        """Σ E (V0 lines), or None unless every interval in the span printed it."""
        return self.emitted_tokens if self.intervals and self.emitted_known == self.intervals else None

    @property
    def known_drafts(self) -> int | None:
        """Σ D, or None when some interval in the span did not tell D."""
        return None if self.drafts_unknown else self.drafts

    def plus(self, interval: Interval, sign: int = 1) -> Totals:
        drafts_range = interval.drafts_range or (interval.drafts or 0, interval.drafts or 0)
        start = interval.start if interval.start is not None else interval.end
        return Totals(
            intervals=self.intervals + sign,
            draft_tokens=self.draft_tokens + sign * interval.draft_tokens,
            accepted_tokens=self.accepted_tokens + sign * interval.accepted_tokens,
            drafts=self.drafts + sign * (interval.drafts or 0),
            drafts_unknown=self.drafts_unknown + sign * (interval.drafts is None),
            drafts_low=self.drafts_low + sign * drafts_range[0],
            drafts_high=self.drafts_high + sign * drafts_range[1],
            accepted_per_position=_add_positions(self.accepted_per_position, interval.accepted_per_position, sign),
            draft_tokens_per_position=_add_positions(self.draft_tokens_per_position, interval.draft_tokens_per_position, sign)
            if interval.draft_tokens_per_position or self.draft_tokens_per_position else (),
            k=interval.k if sign > 0 and interval.k is not None else self.k,  # the newest's: one leaving says nothing of now
            emitted_tokens=self.emitted_tokens + sign * (interval.emitted_tokens or 0),
            emitted_known=self.emitted_known + sign * (interval.emitted_tokens is not None),
            seconds=max(0.0, self.seconds + sign * (interval.seconds or 0.0)),
            # removing an interval leaves the span to the caller, who knows what remains
            start=start if sign > 0 and self.start is None else self.start,
            end=interval.end if sign > 0 and (self.end is None or interval.end > self.end) else self.end,
            load=self.load if (load := load_of(interval)) is None else self.load.plus(*load, interval, sign),
        )


_EMPTY = Totals()


class RollingWindow:
    """The intervals that ended within the last `seconds`, with their running Totals; those that leave
    together are held as one (state/fold.py), `granular`ly: those within 1/GRANULES of `seconds` too."""

    def __init__(self, seconds: float, granular: bool = False) -> None:
        self.seconds = seconds
        self._granule = seconds / GRANULES if seconds > 0 else None
        self._granular = granular
        self._intervals: deque[Interval] = deque()
        self._totals = Totals()
        # held intervals by how many positions they carry: once the wider ones (an earlier k) have
        # left, the sums narrow to the widest held (the rest are zeros, and would read as positions
        # that are drafted and never accepted: a k = 4 series judged wasteful at positions 4–14)
        self._widths: Counter[int] = Counter()

    def add(self, interval: Interval) -> None:
        if self._intervals and interval.end < self._intervals[-1].end - self.seconds:
            # the clock ran back by more than the window (a DST fall-back in a log's local stamps): what
            # is held ended "later" and would stay until the clock caught up; it is no longer recent
            self._intervals.clear()
            self._totals = Totals()
            self._widths.clear()
        self._hold(interval)
        self._totals = self._totals.plus(interval)

    def __len__(self) -> int:
        """How many items are held (an item may be several intervals: state/fold.py)."""
        return len(self._intervals)

    def _folding(self) -> float | None:
        """The granule intervals are folded by now (None: only those ending at the same time)."""
        return self._granule if self._granular or len(self._intervals) >= RECENT_FOLD_AT else None

    def _hold(self, interval: Interval) -> None:
        held = self._intervals
        if held and same_run(held[-1], interval, self._folding()):
            held[-1] = fold(held[-1], interval)
            return
        held.append(interval)
        self._widths[len(interval.accepted_per_position)] += 1

    def add_columns(self, columns: IntervalColumns, intervals: list[Interval]) -> None:
        """add() for each interval of `columns` (given as records too), their sums added at once."""
        ends = columns.ends
        if not intervals:
            return
        if (self._intervals and ends[0] < self._intervals[-1].end - self.seconds) or (ends[1:] - ends[:-1] < -self.seconds).any():
            for interval in intervals:  # the clock runs back within the block: add() starts afresh where it must
                self.add(interval)
            return
        granule = self._folding()
        if (ends[1:] < ends[:-1]).any() or (granule is None and len(self._intervals) + len(intervals) >= RECENT_FOLD_AT):
            for interval in intervals:  # out of order, or folding may begin inside the block: as add() holds them
                self._hold(interval)
        else:
            replaced, items = fold_block(self._intervals[-1] if self._intervals else None, columns, intervals, granule)
            if replaced is not None:
                self._intervals[-1] = replaced
            self._intervals.extend(items)
            self._widths.update(len(item.accepted_per_position) for item in items)
        self._totals = plus_columns(self._totals, columns)

    def split(self, horizon: float) -> tuple[list[Interval], Totals, float | None]:
        """What the batch path's memory starts from: the intervals totals() would evict at `horizon`
        (those at the front that end at or before it), the sums of all held (A_i as wide as the
        widest held) and the end of the first that would stay."""
        leaving = list(itertools.takewhile(lambda interval: interval.end <= horizon, self._intervals))
        staying = self._intervals[len(leaving)].end if len(leaving) < len(self._intervals) else None
        return leaving, self._totals, staying

    def recent(self, limit: int) -> tuple[Interval, ...]:
        """The last `limit` intervals still in the window (call after `totals`, which evicts)."""
        return tuple(self._intervals)[-limit:]

    def totals(self, now: float) -> Totals:
        """Totals of the intervals that ended after now − seconds (older ones are evicted)."""
        horizon = now - self.seconds
        leaving: list[Interval] = []
        while self._intervals and self._intervals[0].end <= horizon:
            leaving.append(self._intervals.popleft())
        if leaving:
            self._totals = minus_all(self._totals, leaving)
            self._widths.subtract(len(interval.accepted_per_position) for interval in leaving)
            self._widths = +self._widths  # drop the widths no interval holds any more
            if self._widths:
                self._totals = _narrowed(self._totals, max(self._widths))
        if not self._intervals:
            if self._totals != _EMPTY:
                self._totals = _EMPTY
            return self._totals
        first = self._intervals[0]
        start = first.start if first.start is not None else first.end
        end = self._intervals[-1].end
        # the same object while nothing changed: readers compare snapshots, and identity is the fast equality
        if self._totals.start != start or self._totals.end != end:
            self._totals = replace(self._totals, start=start, end=end)
        return self._totals


def minus_all(totals: Totals, leaving: list[Interval]) -> Totals:
    """totals.plus(i, sign=-1) for each interval i of `leaving` in order, with one pass of sums: a
    backlog on the log's clock leaves a window thousands at a time at the first read after it
    (tests/test_derive.py holds the two equal). Integer sums are exact in any order; the seconds
    are taken off left to right with plus's clamp at 0."""
    if len(leaving) == 1 and not isinstance(leaving[0], Folded):
        return totals.plus(leaving[0], sign=-1)
    seconds = totals.seconds
    for interval in leaving:
        seconds = max(0.0, seconds - (interval.seconds or 0.0))
    positions, per_token = totals.accepted_per_position, totals.draft_tokens_per_position
    for width in {len(interval.accepted_per_position) for interval in leaving} - {0}:
        summed = tuple(map(sum, zip(*(i.accepted_per_position for i in leaving if len(i.accepted_per_position) == width), strict=True)))
        positions = _add_positions(positions, summed, -1)
    if any(interval.draft_tokens_per_position for interval in leaving) or per_token:
        for interval in leaving:
            per_token = _add_positions(per_token, interval.draft_tokens_per_position, -1)
    load = totals.load
    for interval in leaving:
        if isinstance(interval, Folded):
            load = combined(load, interval.load, -1)
        elif (found := load_of(interval)) is not None:
            load = load.plus(*found, interval, -1)
    return replace(
        totals,
        load=load,
        intervals=totals.intervals - sum(map(lines, leaving)),
        draft_tokens=totals.draft_tokens - sum(i.draft_tokens for i in leaving),
        accepted_tokens=totals.accepted_tokens - sum(i.accepted_tokens for i in leaving),
        drafts=totals.drafts - sum(i.drafts or 0 for i in leaving),
        drafts_unknown=totals.drafts_unknown - sum(map(drafts_unknown, leaving)),
        drafts_low=totals.drafts_low - sum(i.drafts_range[0] if i.drafts_range else i.drafts or 0 for i in leaving),
        drafts_high=totals.drafts_high - sum(i.drafts_range[1] if i.drafts_range else i.drafts or 0 for i in leaving),
        accepted_per_position=positions,
        draft_tokens_per_position=per_token,
        emitted_tokens=totals.emitted_tokens - sum(i.emitted_tokens or 0 for i in leaving),
        emitted_known=totals.emitted_known - sum(map(emitted_known, leaving)),
        seconds=seconds,
    )


def _narrowed(totals: Totals, width: int) -> Totals:
    """The sums without the positions past `width`, which no held interval carries (all zeros)."""
    if len(totals.accepted_per_position) <= width and len(totals.draft_tokens_per_position) <= width:
        return totals
    return replace(totals, accepted_per_position=totals.accepted_per_position[:width],
                   draft_tokens_per_position=totals.draft_tokens_per_position[:width])


def plus_columns(totals: Totals, columns: IntervalColumns) -> Totals:
    """totals.plus(i) for each interval i of `columns` in order, without the loop: the batch path's
    intervals all know D, print no E and no T_i, so only these fields move; integer sums are exact
    in any order and the seconds are added left to right, as the loop adds them."""
    sums = columns.sums()
    return replace(
        totals,
        intervals=totals.intervals + len(columns),
        draft_tokens=totals.draft_tokens + sums.draft_tokens,
        accepted_tokens=totals.accepted_tokens + sums.accepted_tokens,
        drafts=totals.drafts + sums.drafts,
        drafts_low=totals.drafts_low + sums.drafts_low,
        drafts_high=totals.drafts_high + sums.drafts_high,
        accepted_per_position=_add_positions(totals.accepted_per_position, sums.accepted_per_position),
        k=sums.last_k,
        seconds=columns.seconds_after(totals.seconds),
        start=sums.first_start if totals.start is None else totals.start,
        end=sums.last_end if totals.end is None or sums.last_end > totals.end else totals.end,
        load=columns_load(totals.load, columns),
    )


def timeline(windows: Iterable[RollingWindow], now: float, points: int) -> tuple[tuple[float, float], ...]:
    """(end, L) of the last `points` intervals of the longest window."""
    windows = list(windows)
    if not windows:
        return ()
    longest = max(windows, key=lambda window: window.seconds)
    longest.totals(now)  # evicts what has left the window
    return tuple(
        (interval.end, 1.0 + interval.accepted_tokens / interval.drafts)
        for interval in longest.recent(points)
        if interval.drafts
    )


def totals_json(totals: Totals) -> dict[str, object]:
    """A Totals as the state dir saves it: the counts (the load sums are a window's, never saved)."""
    data = asdict(totals)
    data.pop("load")
    data["accepted_per_position"] = list(totals.accepted_per_position)
    data["draft_tokens_per_position"] = list(totals.draft_tokens_per_position)
    return data
