"""Periods of a series: stretches of one config, one server run and one health, with their counts.

A report of what is true now must not pool the past into it: 72 h of a broken drafter and the 24 h
since the fix, pooled, say L 1.56. So the verdict's memory (reference.py) cuts a series' traffic
where its config changes (or a new normal is taken), where its server restarts, and where its
health class changes (healthy — ok or wasteful, which is about k —, degraded, broken), and sums
D, T, A and A_i of each stretch. The current one is the headline of every report; the earlier
ones are listed under it. A recovery is only a health change once it held (reference.py), so the
intervals of a recovery still being proven are kept aside and join whichever period they turn
out to belong to. Pure functions of intervals; both of the memory's paths (one interval at a time
and blocks, remember.py) move them the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from exporter.records import Interval
from exporter.state.window import Totals

MAX_PERIODS = 16  # earlier periods kept for the report
UNHEALTHY_CLASSES = ("degraded", "broken")


def health_class(state: str) -> str:
    """'healthy', 'degraded', 'broken', or '' (nothing judged: no_data, or not yet)."""
    if state in UNHEALTHY_CLASSES:
        return state
    return "healthy" if state in ("ok", "wasteful") else ""


def _add(left: tuple[int, ...], right: tuple[int, ...]) -> tuple[int, ...]:
    width = max(len(left), len(right))
    return tuple(a + b for a, b in zip(left + (0,) * (width - len(left)), right + (0,) * (width - len(right)), strict=True))


@dataclass(frozen=True, slots=True)
class Period:
    """One stretch of a series' traffic and what it summed to."""

    began_by: str = ""  # "" (the first traffic seen) | "restart" | "config_change" | "health" | "acknowledged" | "hold"
    health: str = ""  # its health class (health_class); "" until something was judged
    start: float | None = None  # the first interval's start
    end: float | None = None  # the last interval's end
    intervals: int = 0
    drafts: int = 0
    drafts_unknown: int = 0  # intervals that did not tell D (V1-a, V1-b)
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_position: tuple[int, ...] = ()
    config: tuple[Any, ...] = ()  # (method, k, draft model) it ran, stamped when it closed

    def plus(self, interval: Interval) -> Period:
        start = interval.start if interval.start is not None else interval.end
        return self.plus_sums(1, interval.drafts or 0, int(interval.drafts is None), interval.draft_tokens, interval.accepted_tokens,
                              interval.accepted_per_position, start, interval.end)

    def plus_sums(self, intervals: int, drafts: int, unknown: int, tokens: int, accepted: int, positions: tuple[int, ...],
                  start: float, end: float) -> Period:
        """Many intervals at once (the batch path): their sums, the first one's start and the last one's end."""
        if not intervals:
            return self
        return replace(
            self, start=start if self.start is None else self.start, end=end if self.end is None else max(self.end, end),
            intervals=self.intervals + intervals, drafts=self.drafts + drafts, drafts_unknown=self.drafts_unknown + unknown,
            draft_tokens=self.draft_tokens + tokens, accepted=self.accepted + accepted,
            accepted_per_position=_add(self.accepted_per_position, positions),
        )

    def joined(self, later: Period) -> Period:
        """This period with `later`'s traffic added (a recovery that did not hold)."""
        if not later.intervals:
            return self
        return self.plus_sums(later.intervals, later.drafts, later.drafts_unknown, later.draft_tokens, later.accepted,
                              later.accepted_per_position, later.start if later.start is not None else 0.0, later.end or 0.0)

    @property
    def mean_acceptance_length(self) -> float | None:
        return 1.0 + self.accepted / self.drafts if self.drafts and not self.drafts_unknown else None

    def totals(self, k: int | None) -> Totals:
        """Its sums as the derive stage reads a window's (D exact: drafts_low = drafts_high = D)."""
        return Totals(intervals=self.intervals, draft_tokens=self.draft_tokens, accepted_tokens=self.accepted, drafts=self.drafts,
                      drafts_unknown=self.drafts_unknown, drafts_low=self.drafts, drafts_high=self.drafts,
                      accepted_per_position=self.accepted_per_position, k=k, start=self.start, end=self.end)


def closed(periods: tuple[Period, ...], period: Period, config: tuple[Any, ...], health: str) -> tuple[Period, ...]:
    """`periods` with `period` after them (when it holds traffic), stamped with its config and,
    where it had none yet, the health class it ended in."""
    if not period.intervals:
        return periods
    return (*periods, replace(period, config=config, health=period.health or health))[-MAX_PERIODS:]


def period_json(period: Period) -> dict[str, Any]:
    return {
        "began_by": period.began_by, "health": period.health, "start": period.start, "end": period.end, "intervals": period.intervals,
        "drafts": period.drafts, "drafts_unknown": period.drafts_unknown, "draft_tokens": period.draft_tokens,
        "accepted": period.accepted, "accepted_per_position": list(period.accepted_per_position), "config": list(period.config),
    }


def period_from_json(data: Mapping[str, Any] | None) -> Period:
    if not data:
        return Period()
    return Period(
        str(data.get("began_by") or ""), str(data.get("health") or ""), data.get("start"), data.get("end"), int(data.get("intervals") or 0),
        int(data.get("drafts") or 0), int(data.get("drafts_unknown") or 0), int(data.get("draft_tokens") or 0),
        int(data.get("accepted") or 0), tuple(int(x) for x in data.get("accepted_per_position") or ()), tuple(data.get("config") or ()),
    )
