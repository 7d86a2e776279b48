"""A series' stretches (state/trace.py) are a function of its intervals alone: one at a time (the
line path) and blocks at once (the batch path) leave the same stretches, through every pooling."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.intervals.columns import IntervalColumns
from exporter.records import SeriesKey
from exporter.state.reference import SpecIdentity
from exporter.state.trace import Trace

KEY = SeriesKey(upstream="log", model_name="m", engine="0", source="log")


@st.composite
def traffic(draw: st.DrawFn) -> tuple[list[IntervalColumns], list[bool]]:
    """Blocks of one k each, and before each block whether the server restarted."""
    blocks, restarts, end = [], [], 1000.0
    for _ in range(draw(st.integers(1, 6))):
        n, k = draw(st.integers(1, 40)), draw(st.sampled_from([3, 3, 3, 5]))
        gaps = np.array(draw(st.lists(st.floats(1.0, 30.0), min_size=n, max_size=n)))
        ends = end + np.cumsum(gaps)
        end = float(ends[-1])
        drafts = np.array(draw(st.lists(st.integers(0, 900), min_size=n, max_size=n)), np.int64)
        positions = np.array([[d // (j + 2) for j in range(k)] for d in drafts.tolist()], np.int64).reshape(n, k)
        accepted = positions.sum(axis=1)
        starts = np.concatenate(([np.nan], ends[:-1]))
        seconds = np.where(accepted > 0, gaps, np.nan)
        blocks.append(IntervalColumns(KEY, "V1-e", ends, starts, seconds, ends.copy(), accepted, drafts * k, drafts, drafts, drafts,
                                      np.full(n, k, np.int64), positions, np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.full(n, np.nan)))
        restarts.append(draw(st.booleans()))
    return blocks, restarts


@settings(max_examples=60, deadline=None)
@given(traffic(), st.integers(2, 9))
def test_blocks_leave_the_stretches_one_interval_at_a_time_leaves(case, limit):
    blocks, restarts = case
    one, many = Trace(limit), Trace(limit)
    for block, restart in zip(blocks, restarts, strict=True):
        if restart:
            one.cut("restart")
            many.cut("restart")
        identity = SpecIdentity("eagle3", int(block.ks[0]), None)
        for interval in block.intervals():
            one.add(interval, identity)
        many.add_columns(block, identity)
    assert one.stretches() == many.stretches()
    assert len(one.stretches()) <= limit and one.level == many.level
    runs = 1 + sum(restarts[1:]) + sum(int(a.ks[0]) != int(b.ks[0]) and not r for a, b, r in zip(blocks, blocks[1:], restarts[1:], strict=False))
    if runs <= limit:  # else the oldest runs left (more restarts than stretches)
        assert sum(s.totals.intervals for s in one.stretches()) == sum(len(b) for b in blocks)  # nothing lost, nothing twice
