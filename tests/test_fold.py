"""A rolling window's memory is bounded under any burst (issue 33: a million spec lines written at
once took the sidecar to 316 MB and the OOM killer under a 256 Mi limit): intervals that leave the
window together are held as one (state/fold.py), and what leaves takes exactly what it added."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.intervals.columns import IntervalColumns
from exporter.records import Interval, SeriesKey
from exporter.state.fold import GRANULES, fold, fold_block, same_run
from exporter.state.window import RollingWindow, Totals

KEY = SeriesKey("u", "m", "0", "log")


def _columns(ends: list[float], ks: list[int], seed: int) -> IntervalColumns:
    rng = np.random.default_rng(seed)
    n, width = len(ends), max(ks)
    drafts = rng.integers(1, 50, n)
    positions = np.zeros((n, width), np.int64)
    for row, k in enumerate(ks):
        positions[row, :k] = np.sort(rng.integers(0, drafts[row] + 1, k))[::-1]
    accepted = positions.sum(axis=1)
    seconds = np.where(rng.random(n) < 0.2, np.nan, rng.random(n) * 10)
    return IntervalColumns(KEY, "V1-e", np.array(ends, float), np.where(rng.random(n) < 0.5, np.nan, np.array(ends) - 1), seconds,
                           np.array(ends, float), accepted, accepted + rng.integers(0, 20, n), drafts, drafts - 1, drafts + 1,
                           np.array(ks), positions, rng.integers(0, 64, n), rng.integers(-1, 64, n),
                           np.where(rng.random(n) < 0.3, np.nan, rng.random(n) * 5000))


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.sampled_from([0.0, 0.0, 0.01, 0.5, 3.0]), min_size=1, max_size=40), ks=st.lists(st.sampled_from([3, 3, 4]), min_size=40, max_size=40),
       granule=st.sampled_from([None, 0.1, 1.0]), with_last=st.booleans(), seed=st.integers(0, 1000))
def test_fold_block_holds_what_folding_one_at_a_time_holds(steps, ks, granule, with_last, seed):
    ends = list(np.cumsum([100.0, *steps])[1:])
    columns = _columns(ends, ks[: len(ends)], seed)
    intervals = columns.intervals()
    last = Interval(KEY, end=ends[0] - 0.01 * seed % 1, draft_tokens=9, accepted_tokens=3, drafts=3, accepted_per_position=(2, 1, 0)[: ks[0]],
                    k=ks[0], drafts_range=(2, 4), seconds=None, start=50.0) if with_last else None
    one_at_a_time: list[Interval] = [last] if last is not None else []
    for interval in intervals:
        if one_at_a_time and same_run(one_at_a_time[-1], interval, granule):
            one_at_a_time[-1] = fold(one_at_a_time[-1], interval)
        else:
            one_at_a_time.append(interval)
    replaced, items = fold_block(last, columns, intervals, granule)
    held = ([replaced] if replaced is not None else [last] if last is not None else []) + items
    assert held == one_at_a_time


def _interval(end: float, drafts: int = 10) -> Interval:
    return Interval(KEY, end=end, draft_tokens=4 * drafts, accepted_tokens=2 * drafts, drafts=drafts,
                    accepted_per_position=(drafts, drafts // 2, drafts // 4, 2 * drafts - drafts - drafts // 2 - drafts // 4),
                    k=4, drafts_range=(drafts, drafts), seconds=1.0)


def test_a_burst_at_one_arrival_is_one_item_and_leaves_the_window_whole():
    window = RollingWindow(300.0)
    for _ in range(100_000):  # a million lines in one 1 MiB block's arrival time would be the same: one item
        window.add(_interval(1000.0))
    assert len(window) == 1
    assert window.totals(1000.0).drafts == 1_000_000 and window.totals(1000.0).intervals == 100_000
    window.add(_interval(1300.5))  # five minutes later: the burst leaves, all of it
    assert window.totals(1300.5) == Totals().plus(_interval(1300.5))


def test_the_named_windows_hold_at_most_about_granules_items_however_many_intervals():
    window = RollingWindow(3600.0, granular=True)
    for index in range(200_000):  # a plugin's records, 18 ms apart over an hour: exact float stamps
        window.add(_interval(index * 0.018))
    assert len(window) <= GRANULES + 2  # was 200,000 intervals kept
    now = 199_999 * 0.018 + 600.0  # ten minutes after the last: the first ten minutes' intervals have left
    exact = sum(1 for index in range(200_000) if index * 0.018 > now - 3600.0)
    late = 3600.0 / GRANULES / 0.018 + 1  # an interval leaves at most one granule late
    assert exact <= window.totals(now).intervals <= exact + late
