"""Intervals a rolling window holds as one: what keeps its memory bounded under any burst.

A window keeps the intervals it holds so that each can leave it on time. A burst — a million spec
lines written at once, read in 1 MiB blocks — lands thousands of intervals on one arrival time
(or one second of the log's stamps), and a window that kept each of them grew without bound (316 MB
RSS and the OOM killer under a 256 Mi pod limit, issue 33). Intervals that would leave the window
at the same moment are kept as one Folded interval with their sums and how many they were, so
removing it removes exactly what they added: the totals, the line count, the intervals whose D or E
is unknown. rolling windows (window.py) fold:

  * always, intervals that end at the same time (they leave together: nothing changes but memory);
  * in the named windows (1m, 5m, 1h of `/metrics`), intervals that end within one GRANULES-th of
    the window's length: a window holds at most about GRANULES items, and an interval leaves it at
    most that much late (0.9 s of an hour);
  * in the verdict's judged window, by granule only past RECENT_FOLD_AT items (never reached by a
    real server's lines: the verdict's block path declines such blocks, state/remember.py).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from exporter.records import Interval
from exporter.state.load import LoadSums, with_interval

if TYPE_CHECKING:
    from exporter.intervals.columns import IntervalColumns

GRANULES = 4096
RECENT_FOLD_AT = 50_000


@dataclass(frozen=True, slots=True)
class Folded(Interval):
    """Several consecutive intervals of one series as one: their sums, and how many of them there were."""

    lines: int = 1
    drafts_unknown: int = 0  # of them, the intervals whose D was unknown
    emitted_known: int = 0  # of them, the intervals that printed E
    load: LoadSums = field(default_factory=LoadSums)  # of them, the load of those that printed one (state/load.py)


def lines(interval: Interval) -> int:
    return interval.lines if isinstance(interval, Folded) else 1


def drafts_unknown(interval: Interval) -> int:
    return interval.drafts_unknown if isinstance(interval, Folded) else int(interval.drafts is None)


def emitted_known(interval: Interval) -> int:
    return interval.emitted_known if isinstance(interval, Folded) else int(interval.emitted_tokens is not None)


def load_sums(interval: Interval) -> LoadSums:
    """The load an item of a window holds: a folded one's sums, or one interval's own."""
    return interval.load if isinstance(interval, Folded) else with_interval(LoadSums(), interval)


def _summed(left: tuple[int, ...], right: tuple[int, ...]) -> tuple[int, ...]:
    width = max(len(left), len(right))
    return tuple(map(operator.add, left + (0,) * (width - len(left)), right + (0,) * (width - len(right))))


def fold(held: Interval, new: Interval) -> Folded:
    """`held` and the interval after it as one (the newest's end, k and variant; the first's start)."""
    low = (held.drafts_range or (held.drafts or 0, held.drafts or 0))
    high = (new.drafts_range or (new.drafts or 0, new.drafts or 0))
    return Folded(
        key=new.key, end=max(held.end, new.end), start=held.start if held.start is not None else held.end,
        draft_tokens=held.draft_tokens + new.draft_tokens, accepted_tokens=held.accepted_tokens + new.accepted_tokens,
        drafts=(held.drafts or 0) + (new.drafts or 0),
        accepted_per_position=_summed(held.accepted_per_position, new.accepted_per_position), k=new.k if new.k is not None else held.k,
        drafts_range=(low[0] + high[0], low[1] + high[1]), variant=new.variant,
        seconds=None if held.seconds is None and new.seconds is None else (held.seconds or 0.0) + (new.seconds or 0.0),
        draft_tokens_per_position=_summed(held.draft_tokens_per_position, new.draft_tokens_per_position)
        if held.draft_tokens_per_position or new.draft_tokens_per_position else (),
        emitted_tokens=(held.emitted_tokens or 0) + (new.emitted_tokens or 0), logged_at=new.logged_at,
        lines=lines(held) + lines(new), drafts_unknown=drafts_unknown(held) + drafts_unknown(new),
        emitted_known=emitted_known(held) + emitted_known(new), load=with_interval(load_sums(held), new),
    )


def _run_load(base: Interval, rows: list[Interval]) -> LoadSums:
    """The load of `base` and the rows folded into it, added one at a time as fold() adds them (only
    rows that printed a load cost a step)."""
    load = load_sums(base)
    for row in rows:
        if row.running is not None:
            load = with_interval(load, row)
    return load


def foldable(held: Interval, new: Interval) -> bool:
    """Intervals whose sums can stand for both: as many positions (a window narrows its sums by the widest it holds)."""
    return len(held.accepted_per_position) == len(new.accepted_per_position)


def same_run(held: Interval, new: Interval, granule: float | None) -> bool:
    """Does `new` fold into `held`: as many positions, and the same end (or, with `granule`, the same granule)?"""
    if not foldable(held, new):
        return False
    if held.end == new.end:
        return True
    return granule is not None and math.floor(held.end / granule) == math.floor(new.end / granule)


def fold_block(last: Interval | None, columns: IntervalColumns, intervals: list[Interval], granule: float | None) -> tuple[Folded | None, list[Interval]]:
    """What `last` (the window's newest item, or None) and the block's intervals become, folding as
    same_run says one interval at a time would — the same items, sums and float additions, without
    a Python step per interval: (what replaces `last`, or None; the items to append)."""
    import numpy as np  # only where blocks are batched

    n = len(intervals)
    ends, ks = columns.ends, columns.ks
    keys = ends if granule is None else np.floor(ends / granule)
    breaks = np.ones(n, bool)
    breaks[1:] = (keys[1:] != keys[:-1]) | (ks[1:] != ks[:-1])
    joins = last is not None and same_run(last, intervals[0], granule)
    if breaks.all() and not joins:
        return None, intervals
    starts = np.flatnonzero(breaks).tolist()

    def prefix(values: np.ndarray) -> np.ndarray:
        return np.concatenate((np.zeros((1, *values.shape[1:]), values.dtype), np.cumsum(values, axis=0)))

    sums = {name: prefix(values) for name, values in (("accepted", columns.accepted), ("tokens", columns.draft_tokens),
                                                      ("drafts", columns.drafts), ("low", columns.low), ("high", columns.high),
                                                      ("positions", columns.positions))}
    seconds = columns.seconds.tolist()
    replaced: Folded | None = None
    items: list[Interval] = []
    for run, (first, stop) in enumerate(zip(starts, [*starts[1:], n], strict=True)):
        head = last if run == 0 and joins else None
        if head is None and stop - first == 1:
            items.append(intervals[first])
            continue
        base, begin = (head, first) if head is not None else (intervals[first], first + 1)  # the rows folded into the base

        def total(name: str) -> int:
            return int(sums[name][stop] - sums[name][begin])  # noqa: B023 - used at once, in this iteration

        known = [seconds[i] for i in range(begin, stop) if seconds[i] == seconds[i]]  # nan: unknown
        k = int(ks[stop - 1])
        low, high = base.drafts_range or (base.drafts or 0, base.drafts or 0)
        folded = Folded(
            key=base.key, end=max(base.end, float(ends[begin:stop].max())), start=base.start if base.start is not None else base.end,
            draft_tokens=base.draft_tokens + total("tokens"), accepted_tokens=base.accepted_tokens + total("accepted"),
            drafts=(base.drafts or 0) + total("drafts"),
            accepted_per_position=_summed(base.accepted_per_position, tuple((sums["positions"][stop] - sums["positions"][begin])[:k].tolist())),
            k=k, drafts_range=(low + total("low"), high + total("high")), variant=columns.variant,
            seconds=None if base.seconds is None and not known else sum(known, base.seconds or 0.0),  # left to right, as fold() adds
            draft_tokens_per_position=base.draft_tokens_per_position, emitted_tokens=base.emitted_tokens or 0,
            logged_at=intervals[stop - 1].logged_at, lines=lines(base) + stop - begin, drafts_unknown=drafts_unknown(base),
            emitted_known=emitted_known(base), load=_run_load(base, intervals[begin:stop]),
        )
        if head is not None:
            replaced = folded
        else:
            items.append(folded)
    return replaced, items
