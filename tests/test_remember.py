"""The verdict's memory over blocks of intervals (state/remember.py) leaves what one interval at a
time leaves, and the vectorised verdict (judge/verdict_columns.py) says what `judge` says.

Random series of phases — healthy, dropped, collapsed, idle (Drafted 0), silent gaps longer than
the judged window — with a small reference rule (buckets of minutes, a hold and a recovery of a
few windows) so that learning, freezing, recovering, the hold's new normal and expiring buckets all
happen within a few hundred intervals; the blocks are cut at random places.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from exporter.config import DeriveSettings, HealthThresholds
from exporter.judge.derive import derive
from exporter.judge.memory import health_memory
from exporter.judge.verdict import Baseline, judge
from exporter.records import Interval, SeriesKey
from exporter.state.reference import HEALTHY, ReferenceRule, SeriesMemory, observe, repeat_of
from exporter.state.store import Store
from exporter.state.window import Totals

np = pytest.importorskip("numpy")
from exporter.intervals.columns import IntervalColumns  # noqa: E402  (needs numpy)
from exporter.judge.verdict_columns import judge_states  # noqa: E402
from exporter.state.remember import WindowSums  # noqa: E402

EXAMPLES = int(os.environ.get("SPECDECODE_FUZZ_EXAMPLES", "25"))
KEY = SeriesKey("log", "m", "0", "log")
RULE = ReferenceRule(window_seconds=1800.0, bucket_seconds=120.0, min_drafts=800, hold_seconds=1500.0, recovery_seconds=200.0,
                     lookback_seconds=2400.0)
WINDOW = 60.0
LEVELS = {"healthy": 1.0, "dropped": 0.55, "collapsed": 0.12, "wasteful": 1.6}


def _curve(k: int, drafts: int, level: float, noise: list[float]) -> tuple[int, ...]:
    """A_i: non-increasing, position 0 at about 0.7 × level (capped by D)."""
    counts, ceiling = [], drafts
    for i in range(k):
        rate = min(1.0, 0.7 * level) * (0.6 if level < 1.5 else 0.95) ** i * noise[i % len(noise)]
        count = min(ceiling, int(drafts * rate))
        counts.append(count)
        ceiling = count
    return tuple(counts)


@st.composite
def series(draw: st.DrawFn) -> list[Interval]:
    k = draw(st.integers(1, 8))
    kinds = [*LEVELS, "idle", "gap", *(["new_k", "clock_back"] if draw(st.integers(0, 3)) == 0 else [])]  # the last two: no batch
    phases = draw(st.lists(st.tuples(st.sampled_from(kinds), st.integers(1, 60)), min_size=1, max_size=8))
    noise = draw(st.lists(st.floats(0.85, 1.15), min_size=1, max_size=5))
    at, out = 1_795_000_000.0, []
    for kind, length in phases:
        if kind in ("gap", "clock_back", "new_k"):
            at += {"gap": length * 40.0, "clock_back": -length * 5.0, "new_k": 0.0}[kind]
            k = length % 8 + 1 if kind == "new_k" else k
            continue
        for i in range(length):
            at += draw(st.sampled_from([10.0, 10.0, 10.0, 5.0, 30.0]))
            drafts = 0 if kind == "idle" else draw(st.integers(20, 400))
            counts = _curve(k, drafts, LEVELS.get(kind, 1.0), noise[i % len(noise):] + noise)
            out.append(Interval(KEY, end=at, draft_tokens=drafts * k, accepted_tokens=sum(counts), drafts=drafts, accepted_per_position=counts,
                                k=k, drafts_range=(drafts, drafts), variant="V1-e", start=at - 10.0, seconds=10.0))
    return out


def _columns(intervals: list[Interval]) -> IntervalColumns:
    def column(name: str, dtype: type = np.int64) -> np.ndarray:
        return np.array([getattr(i, name) for i in intervals], dtype=dtype)

    width = max(len(i.accepted_per_position) for i in intervals)  # row i's A_i are its first k, as the batch path lays them out

    return IntervalColumns(
        KEY, "V1-e", column("end", float), column("start", float), column("seconds", float),
        np.array([np.nan if i.logged_at is None else i.logged_at for i in intervals]), column("accepted_tokens"), column("draft_tokens"),
        column("drafts"), np.array([i.drafts_range[0] for i in intervals]), np.array([i.drafts_range[1] for i in intervals]),  # type: ignore[index]
        column("k"), np.array([i.accepted_per_position + (0,) * (width - len(i.accepted_per_position)) for i in intervals], dtype=np.int64),
        np.array([-1 if i.running is None else i.running for i in intervals]), np.array([-1 if i.running_before is None else i.running_before for i in intervals]),
        np.array([np.nan if i.generation_throughput is None else i.generation_throughput for i in intervals]),
    )


def _store() -> Store:
    return Store({"1m": 60.0, "30m": 1800.0}, health=health_memory(DeriveSettings(), RULE, WINDOW))


def _state(store: Store) -> tuple[SeriesMemory, tuple[Interval, ...], Totals]:
    (series,) = store._series.values()
    return series.memory, series.recent.recent(1 << 30), series.lifetime


def _windows(store: Store) -> list[tuple[tuple[Interval, ...], Totals]]:
    """Each window's intervals and sums as a read at the last interval's end sees them (seconds aside:
    a float summed in another order)."""
    (series,) = store._series.values()
    now = max(i.end for i in series.recent.recent(1 << 30))
    return [(w.recent(1 << 30), replace(w.totals(now), seconds=0.0)) for w in series.windows.values()]


@settings(max_examples=EXAMPLES, deadline=None)
@given(series(), st.lists(st.integers(1, 200), min_size=1, max_size=12))
def test_blocks_leave_the_memory_one_interval_at_a_time_leaves(intervals, cuts):
    assume(intervals)
    one, blocks = _store(), _store()
    for interval in intervals:
        one.record_interval(interval)
    start = 0
    for cut in [*cuts, len(intervals)]:
        if start < len(intervals):
            blocks.record_columns(_columns(intervals[start : start + cut]))
        start += cut
    memory, held, lifetime = _state(blocks)
    expected_memory, expected_held, expected_lifetime = _state(one)
    assert memory == expected_memory
    assert held == expected_held
    assert _windows(blocks) == _windows(one)
    assert replace(lifetime, seconds=0.0) == replace(expected_lifetime, seconds=0.0)


def test_a_long_drop_is_remembered_through_blocks():
    """The random cases above, pinned once: a drop longer than the hold, cut in blocks of 50."""
    healthy = [Interval(KEY, end=1_795_000_000.0 + 10 * i, draft_tokens=1500, accepted_tokens=430, drafts=300,
                        accepted_per_position=(210, 126, 76, 18, 0), k=5, drafts_range=(300, 300), variant="V1-e") for i in range(200)]
    dropped = [replace(i, end=i.end + 2000, accepted_tokens=160, accepted_per_position=(100, 40, 20, 0, 0)) for i in healthy]
    store, one = _store(), _store()
    for first in range(0, 400, 50):
        store.record_columns(_columns((healthy + dropped)[first : first + 50]))
    for interval in healthy + dropped:
        one.record_interval(interval)
    memory = _state(store)[0]
    assert memory == _state(one)[0]
    # the third dropped interval tips the 60 s window (six intervals) below 0.7 × the reference's L − 1;
    # the hold then ends the drop as the new normal
    assert memory.adopted == ("hold", dropped[2].end + RULE.hold_seconds)
    assert memory.retired[0].reason == "hold" and memory.retired[0].profile.mean_acceptance_length == pytest.approx(1 + 430 / 300, abs=0.02)


def test_a_restart_into_a_collapse_teaches_the_reference_nothing_through_blocks():
    """The seed incident's shape, pinned: healthy traffic, then a broken drafter while the judged
    window still holds the healthy intervals (judged ok): one at a time and in blocks of 7, the
    broken intervals are not pooled, so the reference is the healthy traffic's alone."""
    healthy = [Interval(KEY, end=1_795_000_000.0 + 10 * i, draft_tokens=1500, accepted_tokens=430, drafts=300,
                        accepted_per_position=(210, 126, 76, 18, 0), k=5, drafts_range=(300, 300), variant="V1-e") for i in range(40)]
    broken = [replace(i, end=i.end + 400, accepted_tokens=3, accepted_per_position=(3, 0, 0, 0, 0)) for i in healthy[:12]]
    store, one = _store(), _store()
    for first in range(0, 52, 7):
        store.record_columns(_columns((healthy + broken)[first : first + 7]))
    for interval in healthy + broken:
        one.record_interval(interval)
    memory = _state(store)[0]
    assert memory == _state(one)[0]
    assert memory.reference.drafts == 40 * 300 and memory.reference.accepted == 40 * 430
    assert memory.state == "broken"


@st.composite
def windows(draw: st.DrawFn) -> tuple[Totals, float | None, float]:
    k = draw(st.integers(0, 16))
    drafts = draw(st.integers(0, 3000))
    counts, ceiling = [], drafts
    for _ in range(k):
        count = draw(st.integers(0, ceiling) | st.integers(max(0, ceiling - 3), ceiling))
        counts.append(count)
        ceiling = count
    tokens = drafts * k if draw(st.booleans()) else draw(st.integers(0, drafts * max(k, 1)))
    totals = Totals(intervals=1, draft_tokens=tokens, accepted_tokens=sum(counts), drafts=drafts, accepted_per_position=tuple(counts), k=k or None)
    # references right at the drop threshold: L − 1 = 0.7 × (L_ref − 1) exactly when L_ref − 1 = (L − 1) / 0.7
    length = 1 + sum(counts) / drafts if drafts else 1.0
    reference = draw(st.none() | st.floats(1.0, 8.0) | st.just(1 + (length - 1) / 0.7) | st.just(length))
    return totals, reference, draw(st.sampled_from([0.0, 49.0, 50.0, 999.0, 5000.0]))


@settings(max_examples=EXAMPLES * 4, deadline=None)
@given(windows(), st.sampled_from([HealthThresholds(), HealthThresholds(degraded_min_mean_acceptance_length=1.8, wasteful_min_gain=0.0)]))
def test_the_vectorised_verdict_is_the_verdict(window, thresholds):
    totals, reference, reference_drafts = window
    cost = DeriveSettings().cost_for(None)
    baseline = Baseline(reference, reference_drafts, "") if reference is not None else None
    expected = judge(derive(totals, cost), baseline, thresholds).state
    k = len(totals.accepted_per_position)
    sums = WindowSums(np.array([totals.drafts]), np.array([totals.accepted_tokens]), np.array([totals.draft_tokens]),
                      np.array([totals.accepted_per_position], dtype=np.int64).reshape(1, k))
    got = judge_states(sums, np.array([np.nan if reference is None else reference]), np.array([reference_drafts]), thresholds, cost)
    assert got.tolist() == [expected]


@given(st.sampled_from(["ok", "wasteful", "degraded", "broken", "no_data"]), st.sampled_from(["", "ok", "degraded", "broken"]),
       st.integers(0, 3), st.floats(1.0, 400.0))
def test_a_repeat_is_what_observe_does_with_one_more_interval(state, before, steps, later):
    """repeat_of, checked against observe on memories that observe itself left."""
    rule = RULE
    memory = SeriesMemory(state=before, since=0.0 if before else None, unhealthy_since=0.0 if before in ("degraded", "broken") else None,
                          spans=((0.0, None, before),) if before in ("degraded", "broken") else ())
    at = 100.0
    interval = Interval(KEY, end=at, draft_tokens=500, accepted_tokens=150, drafts=100, accepted_per_position=(90, 60), k=2)
    for _ in range(steps + 1):
        memory = observe(memory, interval, state, rule)
        interval = replace(interval, end=interval.end + 10)
    repeat = repeat_of(memory, state, rule)
    if repeat is None:
        return
    nxt = replace(interval, end=interval.end + later)
    if nxt.end - repeat.origin >= repeat.seconds:
        return  # past the crossing observe must take the interval itself
    learned = {"reference": {"reference": memory.reference.learn(nxt, rule)}, "pending": {"pending": memory.pending.learn(nxt, rule)}}
    counted = {"held_back": memory.held_back.plus(nxt)} if memory.recovering_since is not None else {"period": memory.period.plus(nxt)}
    assert observe(memory, nxt, state, rule) == replace(memory, last_at=nxt.end, **learned.get(repeat.learns or "", {}), **counted)
    assert state in HEALTHY or repeat.learns != "reference"
