"""Turn consecutive /metrics scrapes of one target into Interval records (counter deltas).

A restart shows as any counter lower than before, or as a changed `_created` value (a restart
between two scrapes whose counters already regrew past the old values). Either starts a new
baseline: the interval across the reset is dropped — it is never turned into a negative or a
spike. A `position` series that appears later counts from zero only if it was created after the
previous scrape; otherwise its first value is only a baseline. Values that cannot be counts
(NaN, ±Inf, negative) and deltas that contradict each other (more accepted than drafted) are
counted in `invalid` and skipped, never turned into an interval.

A counter lower than before under the same `_created` is no restart (a restart re-creates it): the
endpoint is drained on read, or its "counters" are not cumulative. Read as counters, each scrape's
values would be taken for a reset or subtracted from the last — an undercount — so the target is
marked `drained` and gives no more intervals.

The baselines (the previous scrape of each series) are saved in the state dir with the counters
they produced: after a sidecar restart the first scrape continues from them, so what the target
counted while the sidecar was down is counted once — unless its `_created` or a fallen counter
says it restarted too (then that stretch is dropped like any reset).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from exporter.parse.exposition import CounterId, CounterSet
from exporter.records import Interval, SeriesKey


@dataclass
class _Previous:
    counters: CounterSet
    at: float


@dataclass
class ScrapeDeltas:
    """Per-target state: the previous scrape of each (model_name, engine)."""

    upstream: str
    variant: str = "vllm"
    _previous: dict[tuple[str, str], _Previous] = field(default_factory=dict)
    resets: int = 0
    invalid: int = 0
    drained: bool = False  # a counter fell under an unchanged `_created`: not cumulative

    def update(self, counters: dict[tuple[str, str], CounterSet], at: float) -> list[Interval]:
        """Intervals since the previous scrape, one per series that drafted anything."""
        intervals = []
        for key, now in counters.items():
            if not _plausible(now):
                self.invalid += 1
                continue  # keep the last good scrape as the baseline
            previous = self._previous.get(key)
            self._previous[key] = _Previous(now, at)
            if previous is None:
                continue  # first sight: a baseline
            if _fell_without_restart(previous.counters, now):
                self.drained = True
                return []
            if _reset(previous.counters, now):
                self.resets += 1
                continue
            interval = self._interval(key, previous, now, at)
            if interval is not None:
                intervals.append(interval)
        return intervals

    def baselines(self) -> list[dict[str, Any]]:
        """The previous scrape of each series, as JSON (with the counters it produced: state dir)."""
        return [{"model_name": model, "engine": engine, "at": previous.at, "counters": _counters_json(previous.counters)}
                for (model, engine), previous in self._previous.items()]

    def restore(self, saved: list[Any]) -> int:
        """Continue from saved baselines (entries that are not one are passed over); how many were restored."""
        restored = 0
        for entry in saved:
            try:
                key = (str(entry["model_name"]), str(entry["engine"]))
                self._previous[key] = _Previous(_counters_from_json(entry["counters"]), float(entry["at"]))
            except (TypeError, KeyError, ValueError, AttributeError):
                continue
            restored += 1
        return restored

    def _interval(self, key: tuple[str, str], previous: _Previous, now: CounterSet, at: float) -> Interval | None:
        draft_tokens = _delta(previous.counters.draft_tokens, now.draft_tokens)
        accepted = _delta(previous.counters.accepted_tokens, now.accepted_tokens)
        if draft_tokens is None or accepted is None or draft_tokens <= 0:
            return None
        drafts = _delta(previous.counters.drafts, now.drafts)
        if accepted > draft_tokens or (drafts is not None and not 1 <= drafts <= draft_tokens):
            self.invalid += 1  # counters that contradict each other: no interval rather than a wrong one
            return None
        positions = []
        for position in range(max(now.accepted_per_position, default=-1) + 1):
            before = previous.counters.accepted_per_position.get(position)
            if before is None:
                created = now.created.get(("accepted_per_position", position))
                before = 0.0 if created is not None and created > previous.at else now.accepted_per_position.get(position, 0.0)
            count = round(now.accepted_per_position.get(position, before) - before)
            positions.append(min(count, round(drafts)) if drafts is not None else count)
        k = len(positions) or None
        seconds = at - previous.at
        generated = _delta(previous.counters.generation_tokens, now.generation_tokens)
        load_known = now.running is not None and generated is not None and generated >= 0 and seconds > 0
        return Interval(
            key=SeriesKey(upstream=self.upstream, model_name=key[0], engine=key[1], source="metrics"),
            end=at,
            start=previous.at,
            seconds=seconds,
            draft_tokens=round(draft_tokens),
            accepted_tokens=round(accepted),
            drafts=None if drafts is None else round(drafts),
            drafts_range=None if drafts is None else (round(drafts),) * 2,
            accepted_per_position=tuple(positions),
            k=k,
            variant=self.variant,
            running=round(now.running) if load_known and now.running is not None else None,
            running_before=round(previous.counters.running) if load_known and previous.counters.running is not None else None,
            generation_throughput=generated / seconds if load_known and generated is not None else None,
        )


def _counters_json(counters: CounterSet) -> dict[str, Any]:
    return {"drafts": counters.drafts, "draft_tokens": counters.draft_tokens, "accepted_tokens": counters.accepted_tokens,
            "accepted_per_position": [[position, value] for position, value in counters.accepted_per_position.items()],
            "created": [[name, position, value] for (name, position), value in counters.created.items()]}


def _counters_from_json(saved: Mapping[str, Any]) -> CounterSet:
    """TypeError/ValueError/KeyError for anything that is not a saved CounterSet."""
    def number(value: Any) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"not a count: {value!r}")
        return float(value)

    return CounterSet(
        drafts=number(saved["drafts"]), draft_tokens=number(saved["draft_tokens"]), accepted_tokens=number(saved["accepted_tokens"]),
        accepted_per_position={int(position): float(value) for position, value in saved["accepted_per_position"]},
        created={(str(name), None if position is None else int(position)): float(value) for name, position, value in saved["created"]},
    )


def _plausible(counters: CounterSet) -> bool:
    values = [counters.drafts, counters.draft_tokens, counters.accepted_tokens, *counters.accepted_per_position.values()]
    return all(v is None or (math.isfinite(v) and v >= 0) for v in values)


def _delta(before: float | None, now: float | None) -> float | None:
    if before is None or now is None:
        return None
    return now - before


def _pairs(before: CounterSet, now: CounterSet) -> list[tuple[CounterId, float | None, float | None]]:
    return [
        (("drafts", None), before.drafts, now.drafts),
        (("draft_tokens", None), before.draft_tokens, now.draft_tokens),
        (("accepted_tokens", None), before.accepted_tokens, now.accepted_tokens),
        *((("accepted_per_position", p), before.accepted_per_position.get(p), v) for p, v in now.accepted_per_position.items()),
    ]


def _fell_without_restart(before: CounterSet, now: CounterSet) -> bool:
    """A counter went down while its `_created` stayed the same (both scrapes show one)."""
    return any(
        b is not None and n is not None and n < b and name in before.created and now.created.get(name) == before.created[name]
        for name, b, n in _pairs(before, now)
    )


def _reset(before: CounterSet, now: CounterSet) -> bool:
    pairs = [
        (before.drafts, now.drafts),
        (before.draft_tokens, now.draft_tokens),
        (before.accepted_tokens, now.accepted_tokens),
        *((before.accepted_per_position.get(p), v) for p, v in now.accepted_per_position.items()),
    ]
    if any(b is not None and n is not None and n < b for b, n in pairs):
        return True
    return any(name in before.created and before.created[name] != value for name, value in now.created.items())
