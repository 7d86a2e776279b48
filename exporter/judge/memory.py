"""The verdict as the state stage's reference memory needs it, and what a memory says of a series now.

The store learns a reference only while a series is healthy (state/reference.py), so it must
judge every interval; the verdict lives here, later in the data path, and is handed to the store
as a function (`health_memory`). The same `judge` runs for /metrics, /api/v1/status and analyze.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from exporter.config import DeriveSettings
from exporter.judge.derive import derive
from exporter.judge.verdict import Baseline, judge
from exporter.records import SeriesKey, SpecConfig
from exporter.state.health import HealthMemory
from exporter.state.reference import Collapse, Profile, ReferenceRule, SeriesMemory
from exporter.state.window import Totals

if TYPE_CHECKING:
    import numpy as np

    from exporter.state.remember import WindowSums


def _utc(at: float | None) -> str:
    return "?" if at is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


def _span(start: float | None, end: float | None) -> str:
    first, last = _utc(start), _utc(end)
    if first[:10] == last[:10]:  # one day: say it once
        return f"{first[:16]}–{last[11:]}"
    return f"{first} – {last}"


def reference_baseline(profile: Profile) -> Baseline | None:
    length = profile.mean_acceptance_length
    if length is None:
        return None
    return Baseline(length, float(profile.drafts), f"reference of {profile.drafts} healthy drafts, {_span(profile.start, profile.end)}")


def health_memory(settings: DeriveSettings, rule: ReferenceRule, window_seconds: float) -> HealthMemory:
    """The store's memory settings, judging each interval's window as /metrics would; an interval
    that is broken, or degraded against the reference, on its own (the verdict's thresholds) never
    teaches the reference."""
    if rule.collapse is None:
        t = settings.thresholds
        rule = replace(rule, collapse=Collapse(t.broken_max_mean_acceptance_length, t.broken_max_position0_acceptance, t.min_drafts,
                                               t.degraded_relative_drop))

    def judge_state(key: SeriesKey, config: SpecConfig, recent: Totals, reference: Profile | None) -> str:
        current = derive(recent, settings.cost_for(config.method, key.model_name))
        length = reference.mean_acceptance_length if reference is not None else None
        baseline = Baseline(length, float(reference.drafts), "") if reference is not None and length is not None else None  # only the state is kept
        return judge(current, baseline, settings.thresholds).state

    def judge_many(key: SeriesKey, config: SpecConfig, sums: WindowSums, reference_length: np.ndarray, reference_drafts: np.ndarray) -> np.ndarray:
        from exporter.judge.verdict_columns import judge_states  # numpy only where blocks are batched

        return judge_states(sums, reference_length, reference_drafts, settings.thresholds, settings.cost_for(config.method, key.model_name))

    return HealthMemory(judge_state, window_seconds, rule, judge_many)


def health_since(memory: SeriesMemory | None, state: str) -> float | None:
    """When the series' current health began (epoch seconds), from its memory; None when not known.

    The memory follows the verdict interval by interval. A verdict of no_data that the memory has
    not seen yet (the traffic stopped: the window emptied since the last interval) began after the
    last interval; the time is that of the last interval, the latest moment known to be before it.
    """
    if memory is None or memory.last_at is None:
        return None
    if state == "no_data":
        return memory.quiet_since if memory.quiet_since is not None else memory.last_at
    if state == memory.state and memory.quiet_since is None:
        return memory.since
    return None  # the window judged now and the memory's last one disagree: not known until the next interval
