"""Windows pool sums; derive is pure math; the verdict follows its thresholds."""

from __future__ import annotations

import functools
import operator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.config import DEFAULT_COSTS, DraftCost, HealthThresholds, parse_duration
from exporter.judge.cost import speedup_curve
from exporter.judge.derive import conditional_acceptance, derive, expected_tokens_per_step, recommended_speculative_tokens
from exporter.judge.verdict import as_baseline, judge
from exporter.records import Interval, SeriesKey
from exporter.state.window import RollingWindow, Totals, minus_all

KEY = SeriesKey("log", "m", "0", "log")


def per_token(cost: float) -> DraftCost:
    """The plain per-token model (no block or verification cost) the hand-computed cases use."""
    return DraftCost(per_token=cost, per_block=0.0, verify_per_token=0.0)


def interval(end: float, drafts: int, positions: tuple[int, ...], draft_tokens: int | None = None) -> Interval:
    k = len(positions)
    return Interval(
        key=KEY, end=end, draft_tokens=draft_tokens if draft_tokens is not None else drafts * k,
        accepted_tokens=sum(positions), drafts=drafts, accepted_per_position=positions, k=k,
    )


def totals_for(rates: list[float], drafts: int = 10_000) -> Totals:
    total = Totals()
    return total.plus(interval(1.0, drafts, tuple(round(r * drafts) for r in rates)))


def test_windows_pool_sums_instead_of_averaging_ratios():
    window = RollingWindow(60)
    window.add(interval(10, 1000, (900,)))  # r0 = 0.9 over many drafts
    window.add(interval(20, 10, (1,)))  # r0 = 0.1 over few drafts
    derived = derive(window.totals(now=25), per_token(0.0))
    assert derived.position_acceptance[0] == pytest.approx(901 / 1010)  # not (0.9 + 0.1) / 2


def test_windows_evict_old_intervals_and_become_empty():
    window = RollingWindow(60)
    window.add(interval(10, 100, (50,)))
    window.add(interval(50, 100, (20,)))
    assert window.totals(now=65).accepted_tokens == 70
    assert window.totals(now=75).accepted_tokens == 20  # the interval that ended at 10 left the window
    assert window.totals(now=200).intervals == 0
    assert derive(window.totals(now=200), per_token(0.05)) is None  # no drafts: absent, not zero


def test_a_window_whose_clock_ran_back_holds_only_the_new_timeline():
    """A log clock that jumps back (a DST fall-back, a wrong year) must not leave the earlier
    intervals in the window for as long as the jump: they would dilute every verdict meanwhile."""
    window = RollingWindow(60)
    window.add(interval(7200, 100, (90,)))
    window.add(interval(3600, 100, (10,)))  # an hour earlier than the interval before it
    assert window.totals(now=3600).accepted_tokens == 10
    window.add(interval(3610, 100, (20,)))
    window.add(interval(3590, 100, (30,)))  # back by less than the window: a jitter, kept
    assert window.totals(now=3610).accepted_tokens == 60


def test_a_window_narrows_to_the_positions_it_holds_once_an_earlier_k_has_left():
    """k 3 → 1 without a pause (a quick restart, or a backlog): the k = 3 intervals' positions leave with
    them; zeros at positions 1–2 would read as drafted and never accepted (judged wasteful)."""
    window = RollingWindow(60)
    window.add(interval(10, 100, (50, 30, 10)))
    window.add(interval(40, 100, (60,)))
    assert window.totals(now=45).accepted_per_position == (110, 30, 10)  # both held: as wide as the widest
    assert window.totals(now=75).accepted_per_position == (60,)  # the k = 3 interval left
    window.add(interval(80, 100, (40, 20)))
    assert window.totals(now=85).accepted_per_position == (100, 20)


@st.composite
def windowed(draw: st.DrawFn) -> Interval:
    k = draw(st.integers(0, 4))
    drafts = draw(st.none() | st.integers(0, 500))
    return Interval(
        key=KEY, end=0.0, draft_tokens=draw(st.integers(0, 2000)), accepted_tokens=draw(st.integers(0, 2000)), drafts=drafts,
        accepted_per_position=tuple(draw(st.lists(st.integers(0, 500), min_size=k, max_size=k))), k=draw(st.none() | st.just(k)),
        drafts_range=draw(st.none() | st.tuples(st.integers(0, 9), st.integers(10, 20))),
        draft_tokens_per_position=tuple(draw(st.lists(st.integers(0, 500), min_size=k, max_size=k))) if draw(st.booleans()) else (),
        seconds=draw(st.none() | st.floats(0.0, 100.0)), emitted_tokens=draw(st.none() | st.integers(0, 3000)),
    )


@given(st.lists(windowed(), min_size=1, max_size=12), st.integers(0, 12))
def test_a_window_takes_many_intervals_off_at_once_as_one_by_one(intervals, kept):
    total = functools.reduce(lambda totals, i: totals.plus(i), intervals, Totals())
    leaving = intervals[: max(1, len(intervals) - kept)]
    one_by_one = functools.reduce(lambda totals, i: totals.plus(i, sign=-1), leaving, total)
    assert minus_all(total, leaving) == one_by_one


def test_identities_on_the_capture_ground_truth():
    rates = [0.615, 0.453, 0.405, 0.372, 0.346, 0.328, 0.310, 0.293]
    derived = derive(totals_for(rates), per_token(0.1))
    assert derived.mean_acceptance_length == pytest.approx(1 + sum(derived.position_acceptance))
    assert derived.conditional_acceptance[1] == pytest.approx(0.453 / 0.615, abs=1e-3)
    assert derived.mean_draft_length == 8
    assert derived.recommended_speculative_tokens == 8


def test_conditional_rate_after_a_never_accepted_position_is_unknown():
    assert conditional_acceptance((0.5, 0.0, 0.0)) == (0.5, 0.0, None)


def test_expected_tokens_and_recommendation():
    expected = expected_tokens_per_step((0.72, 0.50, 0.30, 0.18, 0.05, 0.01))
    assert expected == pytest.approx((1, 1.72, 2.22, 2.52, 2.70, 2.75, 2.76))
    assert recommended_speculative_tokens(speedup_curve(expected, per_token(0.0))) == 6
    assert recommended_speculative_tokens(speedup_curve(expected, per_token(0.1))) == 3
    assert recommended_speculative_tokens(speedup_curve((1.0, 1.01, 1.02), per_token(0.5))) == 0  # speculation does not pay


THRESHOLDS = HealthThresholds()
DFLASH_FIXED = [0.72, 0.50, 0.30, 0.18] + [0.02] * 2 + [0.0] * 9  # the real case after the fix, k = 15
DFLASH_BROKEN = [0.11, 0.0] + [0.0] * 13  # stale config.json: L 1.1, position 0 at 11%


@pytest.mark.parametrize(
    "rates, cost, baseline, expected",
    [
        (DFLASH_FIXED, 0.02, None, "wasteful"),
        (DFLASH_BROKEN, 0.02, None, "broken"),
        ([0.8, 0.64, 0.51, 0.41], 0.05, None, "ok"),
        ([0.4, 0.16, 0.06, 0.02], 0.05, [0.8, 0.64, 0.51, 0.41], "degraded"),  # L−1 fell by more than 30%
        ([0.75, 0.6, 0.45, 0.35], 0.05, [0.8, 0.64, 0.51, 0.41], "ok"),  # a small dip is not a drop
    ],
)
def test_verdicts(rates, cost, baseline, expected):
    base = derive(totals_for(baseline), per_token(cost)) if baseline else None
    assert judge(derive(totals_for(rates), per_token(cost)), as_baseline(base), THRESHOLDS).state == expected


def test_too_few_drafts_is_no_data_and_floor_gives_degraded():
    assert judge(derive(totals_for([0.9], drafts=10), per_token(0.05)), None, THRESHOLDS).state == "no_data"
    assert judge(None, None, THRESHOLDS).state == "no_data"
    floor = HealthThresholds(degraded_min_mean_acceptance_length=2.5)
    assert judge(derive(totals_for([0.6, 0.4, 0.2]), per_token(0.0)), None, floor).state == "degraded"


def test_durations():
    assert [parse_duration(t) for t in ("30s", "5m", "1h", "1d", "90")] == [30, 300, 3600, 86400, 90]
    for bad in ("", "5x", "-1m", "0"):
        with pytest.raises(ValueError):
            parse_duration(bad)


curves = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=16).map(
    lambda values: tuple(sorted(values, reverse=True))  # r_i never increases with i
)
costs = st.builds(DraftCost, st.floats(0.0, 0.5), st.floats(0.0, 0.5), st.floats(0.0, 0.1))


@given(curves, costs)
def test_recommendation_is_the_brute_force_argmax_and_never_above_k(rates, cost):
    curve = speedup_curve(expected_tokens_per_step(rates), cost)
    best = recommended_speculative_tokens(curve)
    assert 0 <= best <= len(rates)
    # E(k') = 1 + r_0 + … + r_{k'-1} added left to right, as written (sum() starts from 0: another
    # last bit, enough to break a tie the other way)
    brute = max(range(len(rates) + 1), key=lambda k: (functools.reduce(operator.add, rates[:k], 1.0) / cost.step(k), -k))
    assert best == brute


@given(curves, costs, st.floats(0.0, 0.5), st.sampled_from(["per_token", "verify_per_token"]))
def test_recommendation_never_grows_when_drafting_gets_dearer(rates, cost, extra, which):
    from dataclasses import replace

    dearer = replace(cost, **{which: getattr(cost, which) + extra})
    expected = expected_tokens_per_step(rates)
    cheap = recommended_speculative_tokens(speedup_curve(expected, cost))
    costly = recommended_speculative_tokens(speedup_curve(expected, dearer))
    assert costly <= cheap


def test_default_costs_on_the_real_cases():
    fixed_dflash = derive(totals_for(DFLASH_FIXED), DEFAULT_COSTS["dflash"])
    assert fixed_dflash.recommended_speculative_tokens <= 6  # of 15 drafted
    capture = derive(totals_for([0.615, 0.453, 0.405, 0.372, 0.346, 0.328, 0.310, 0.293]), DEFAULT_COSTS["draft_model"])
    assert capture.recommended_speculative_tokens == 8


def test_the_acceptance_length_histogram_is_exact_from_the_prefix_counts():
    from exporter.judge.derive import acceptance_histogram

    # 10 drafts of k = 3: 3 accepted nothing, 2 exactly one, 1 exactly two, 4 all three → A_i = (7, 5, 4)
    assert acceptance_histogram((7, 5, 4), 10) == (0.3, 0.2, 0.1, 0.4)
    histogram = acceptance_histogram((7, 5, 4), 10)
    assert histogram is not None and sum(j * h for j, h in enumerate(histogram)) == pytest.approx((7 + 5 + 4) / 10)
    assert acceptance_histogram((), 10) is None and acceptance_histogram((3,), 0) is None
    assert acceptance_histogram((5, 6), 10) is None  # not a prefix curve: no histogram has these counts
