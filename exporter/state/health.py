"""How the store keeps each series' verdict memory (reference.py) up to date: the judged window
that ends with each interval, a change of speculative config, the verdict (handed in by the judge
stage, which comes later in the data path) and `observe` — one interval at a time (live
following) or a block at once (the batch path: remember.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from exporter.records import Interval, SeriesKey, SpecConfig
from exporter.state.reference import Profile, ReferenceRule, SeriesMemory, SpecIdentity, adopt, observe, switch_config
from exporter.state.window import RollingWindow, Totals

if TYPE_CHECKING:
    import numpy as np

    from exporter.intervals.columns import IntervalColumns
    from exporter.state.remember import WindowSums

log = logging.getLogger(__name__)

JudgeState = Callable[[SeriesKey, SpecConfig, Totals, Profile | None], str]  # the judge stage's verdict, injected
# the same verdict for many judged windows at once (reference L, nan: none ready; reference D), for the batch path
JudgeMany = Callable[[SeriesKey, SpecConfig, "WindowSums", "np.ndarray", "np.ndarray"], "np.ndarray"]


class Remembered(Protocol):
    """What of a store's series the memory reads and writes."""

    key: SeriesKey
    memory: SeriesMemory
    recent: RollingWindow  # the judged window, on the series' own clock


@dataclass(frozen=True)
class HealthMemory:
    """The verdict as a function, the judged window and the rule that learns and replaces references."""

    judge: JudgeState
    window_seconds: float = 300.0
    rule: ReferenceRule = field(default_factory=ReferenceRule)
    judge_many: JudgeMany | None = None  # without it, the batch path judges one interval at a time

    def remember(self, series: Remembered, config: SpecConfig, interval: Interval) -> None:
        """Judge the window that ends with `interval` against the reference, and learn or freeze."""
        self._switch(series, config, interval)
        series.recent.add(interval)
        recent = series.recent.totals(interval.end)
        state = self.judge(series.key, config, recent, series.memory.ready(self.rule))
        series.memory = self._observe(series.key, series.memory, interval, state)

    def remember_columns(self, series: Remembered, config: SpecConfig, columns: IntervalColumns, intervals: list[Interval] | None = None) -> None:
        """`remember` for every interval of `columns` in turn, at once where remember.py covers the block;
        `intervals`: the block's records, where the caller built them already."""
        judge_many = self.judge_many
        if judge_many is not None:
            from exporter.state.remember import remember_columns  # numpy only where blocks are batched

            self._switch(series, config, columns.intervals(0, 1)[0])
            done = remember_columns(
                series.memory, series.recent, columns, lambda sums, length, drafts: judge_many(series.key, config, sums, length, drafts),
                lambda memory, interval, state: self._observe(series.key, memory, interval, state), self.rule,
            )
            if done is not None:
                series.memory, kept = done
                series.recent.add_columns(columns.rows(kept, len(columns)), intervals[kept:] if intervals is not None else columns.intervals(kept))
                series.recent.totals(float(columns.ends[-1]))  # evicts what left the window during the block
                return
        for interval in intervals if intervals is not None else columns.intervals():
            self.remember(series, config, interval)

    def acknowledge(self, series: Remembered, config: SpecConfig, at: float) -> None:
        """Take what the series does now as its new normal, and judge it against that at once."""
        recent = series.recent.totals(at)
        memory = adopt(series.memory, "acknowledged", at, self.rule, recent)
        state = self.judge(series.key, config, recent, memory.ready(self.rule))
        if state != memory.state and state != "no_data":
            memory = replace(memory, state=state, since=at)
        series.memory = memory

    def _switch(self, series: Remembered, config: SpecConfig, interval: Interval) -> None:
        series.memory, switched = switch_config(series.memory, SpecIdentity.of(config, interval.k), interval.end)
        if switched:
            series.recent = RollingWindow(self.window_seconds)  # the old config's traffic says nothing of the new
            log.info("speculative config changed series=%s config=%s: a new reference", key_text(series.key), series.memory.identity.describe())

    def _observe(self, key: SeriesKey, memory: SeriesMemory, interval: Interval, state: str) -> SeriesMemory:
        observed = observe(memory, interval, state, self.rule)
        if observed.adopted != memory.adopted and observed.adopted and observed.adopted[0] == "hold":
            log.warning("series=%s unhealthy longer than the hold (%.0f s): its current acceptance is the new normal", key_text(key), self.rule.hold_seconds)
        return observed


def key_text(key: SeriesKey) -> str:
    return f"{key.model_name}/engine {key.engine}/{key.source}/{key.upstream}"
