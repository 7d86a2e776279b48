"""The server's load beside its acceptance (exporter/state/load.py): sums, bands, the steady rule."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.intervals.columns import IntervalColumns
from exporter.judge.calibration import plain_points
from exporter.records import Interval, SeriesKey
from exporter.state.load import LoadProfile, LoadSums, band_of, pace_of, stalled, steady_band
from exporter.state.window import Totals, plus_columns

KEY = SeriesKey("log", "m", "0", "log")


def _interval(end: float, running: int | None, before: int | None, generation: float | None, drafts: int = 100, k: int = 4) -> Interval:
    accepted = [80, 60, 40, 20][:k]
    return Interval(key=KEY, end=end, start=end - 2.0, seconds=2.0, draft_tokens=drafts * k, accepted_tokens=sum(accepted) * drafts // 100,
                    drafts=drafts, accepted_per_position=tuple(a * drafts // 100 for a in accepted), k=k, drafts_range=(drafts, drafts),
                    variant="V1-e", running=running, running_before=before, generation_throughput=generation)


def test_a_band_is_a_power_of_two_and_a_steady_interval_keeps_its_band():
    assert [band_of(n) for n in (1, 2, 3, 4, 5, 6, 11, 12, 256)] == [0, 1, 2, 2, 2, 3, 3, 4, 8]  # round(log2): 1, 2, 4 … each its band
    assert band_of(0) is None  # idle
    assert steady_band(_interval(1.0, 16, 14, 900.0)) == 4
    assert steady_band(_interval(1.0, 64, 32, 900.0)) is None  # the load moved across the interval: no band's throughput
    assert steady_band(_interval(1.0, 64, None, 900.0)) is None  # the first stats line: its start is unknown


def test_window_sums_give_running_throughput_and_the_share_of_steps_that_drafted():
    totals = Totals()
    for i, (running, rate) in enumerate([(16, 1000.0), (16, 1200.0), (None, None)]):
        totals = totals.plus(_interval(float(i), running, 16, rate))
    load = totals.load
    assert load.intervals == 2 and load.seconds == 4.0  # the interval without a stats line has no load
    assert load.mean_running == 16 and load.generation_rate == 1100.0
    assert load.drafts == 200 and load.mean_acceptance_length == 1 + 400 / 200 and load.drafted_length == 4
    # 4400 tokens emitted, 400 of them accepted drafts: 4000 steps, 200 of them drafted
    assert math.isclose(load.speculated_share or 0, 200 / 4000)
    assert totals.plus(_interval(0.0, 16, 16, 1000.0), sign=-1).load.intervals == 1  # leaving a window takes it out


def test_a_stall_is_left_out_of_its_band_and_a_steady_spread_is_not():
    """The golden ladder's k8 run at 1 request: a compile stall (96.5 tokens/s, the first request meeting
    a new batch size) among steady intervals at 307–330. The band reads the steady ones; a band whose
    intervals spread by less than a half around its median keeps them all."""
    rates = [96.5, 307.3, 330.4, 324.9]
    profile = LoadProfile()
    for i, rate in enumerate(rates):
        profile = profile.plus(_interval(float(i), 1, 1, rate))
    ((band, sums),) = profile.bands
    assert band == 0 and sums.intervals == 3 and math.isclose(sums.generation_rate or 0, sum(rates[1:]) / 3)
    assert stalled({pace_of(96.5, 1): 2.0, pace_of(307.3, 1): 6.0}) == {pace_of(96.5, 1)}  # seconds at each pace
    assert pace_of(0.0, 1) < pace_of(0.3, 1) < pace_of(96.5, 1)  # an interval that emitted nothing is the slowest
    spread = LoadProfile()
    for i, rate in enumerate([900.0, 1300.0, 1100.0, 700.0]):
        spread = spread.plus(_interval(float(i), 16, 16, rate))
    assert spread.bands[0][1].intervals == 4
    # the calibration leaves a plain run's stalls out by the same rule
    (point,) = plain_points([(1, 1, 60.0), (1, 1, 213.0), (1, 1, 214.0), (1, 1, 215.0)])
    assert point.intervals == 3 and point.tokens_per_second == 214.0


@st.composite
def _rows(draw: st.DrawFn) -> list[Interval]:
    n = draw(st.integers(1, 30))
    running = draw(st.lists(st.sampled_from([-1, 0, 1, 2, 3, 7, 8, 9, 16, 30, 256]), min_size=n + 1, max_size=n + 1))
    return [
        _interval(float(i), None if running[i + 1] < 0 else running[i + 1], None if running[i] < 0 else running[i],
                  draw(st.one_of(st.none(), st.floats(0.0, 50_000.0))), drafts=draw(st.integers(1, 500)), k=draw(st.sampled_from([2, 4])))
        for i in range(n)
    ]


def _columns(intervals: list[Interval]) -> IntervalColumns:
    width = max(len(i.accepted_per_position) for i in intervals)
    return IntervalColumns(
        KEY, "V1-e", np.array([i.end for i in intervals]), np.array([i.start for i in intervals], float), np.array([i.seconds for i in intervals], float),
        np.full(len(intervals), np.nan), np.array([i.accepted_tokens for i in intervals]), np.array([i.draft_tokens for i in intervals]),
        np.array([i.drafts for i in intervals]), np.array([i.drafts for i in intervals]), np.array([i.drafts for i in intervals]),
        np.array([i.k for i in intervals]), np.array([i.accepted_per_position + (0,) * (width - len(i.accepted_per_position)) for i in intervals]),
        np.array([-1 if i.running is None else i.running for i in intervals]),
        np.array([-1 if i.running_before is None else i.running_before for i in intervals]),
        np.array([np.nan if i.generation_throughput is None else i.generation_throughput for i in intervals]),
    )


def _close(left: LoadSums, right: LoadSums) -> bool:
    return (left.intervals, left.drafts, left.accepted, left.draft_tokens, left.accepted_per_position) == (
        right.intervals, right.drafts, right.accepted, right.draft_tokens, right.accepted_per_position
    ) and all(math.isclose(getattr(left, name), getattr(right, name), rel_tol=1e-9, abs_tol=1e-9) for name in ("seconds", "generated", "running"))


@settings(max_examples=60, deadline=None)
@given(_rows())
def test_a_profile_of_columns_is_the_profile_of_its_intervals(intervals):
    one_by_one = LoadProfile()
    for interval in intervals:
        one_by_one = one_by_one.plus(interval)
    at_once = LoadProfile().plus_columns(_columns(intervals))
    assert [key for key, _ in at_once.cells] == [key for key, _ in one_by_one.cells]  # the same (band, pace) cells
    assert [band for band, _ in at_once.bands] == [band for band, _ in one_by_one.bands]
    assert all(_close(a, b) for (_, a), (_, b) in zip(at_once.bands, one_by_one.bands, strict=True))
    # and the window sums: Totals.plus one by one, plus_columns at once (the seconds and floats added left to right: equal)
    totals = Totals()
    for interval in intervals:
        totals = totals.plus(interval)
    assert plus_columns(Totals(), _columns(intervals)).load == totals.load
