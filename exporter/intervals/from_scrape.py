"""Turn consecutive /metrics scrapes of one target into Interval records (counter deltas).

Each answer is compared with the last answer of the same server (intervals/instances.py: a target
may be a load balancer in front of several; they are told apart by `_created`, else the process's
start time). A new server starts a new baseline (a restart: the interval across it is dropped,
never turned into a negative or a spike); with nothing to tell servers apart, any counter lower than
before is a restart. A `position` series that appears later counts from zero only if it was created
after the previous scrape; otherwise its first value is only a baseline. Values that cannot be
counts (NaN, ±Inf, negative) and deltas that contradict each other (more accepted than drafted)
are counted in `invalid` and skipped, never turned into an interval.

A counter lower than before under the same `_created` is no restart (a restart re-creates it): one
such dip is skipped (the baseline kept); falls in most of the recent answers mean the endpoint is
drained on read, or its "counters" are not cumulative — read as counters each scrape would be
subtracted from the last, an undercount — so the target is marked `drained` and gives no more
intervals.

The baselines (the previous scrape of each series and server) are saved in the state dir with the
counters they produced: after a sidecar restart the first scrape continues from them, so what the
target counted while the sidecar was down is counted once — unless its `_created` or a fallen
counter says it restarted too (then that stretch is dropped like any reset).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from exporter.intervals.instances import Baseline, Instance, Instances, instance_of
from exporter.limits import MAX_COUNT, MAX_POSITIONS
from exporter.parse.exposition import CounterId, CounterSet
from exporter.records import Interval, SeriesKey

log = logging.getLogger(__name__)


@dataclass
class ScrapeDeltas:
    """Per-target state: the previous scrape of each (model_name, engine) and server behind the target."""

    upstream: str
    variant: str = "vllm"
    _instances: Instances = field(default_factory=Instances)
    resets: int = 0
    invalid: int = 0
    drained: bool = False  # counters fell again and again under an unchanged `_created`: not cumulative
    _said_balanced: bool = False

    def update(self, counters: dict[tuple[str, str], CounterSet], at: float, started: float | None = None) -> list[Interval]:
        """Intervals since each series' previous scrape by the same server, one per series that drafted anything."""
        intervals = []
        for key, now in counters.items():
            if not _plausible(now):
                self.invalid += 1
                continue  # keep the last good scrape as the baseline
            instance = instance_of(now, started)
            known = self._instances.of(key)
            previous = known.get(instance)
            if previous is None:
                if known:
                    self.resets += 1  # a new server here: restarted, or another one behind a balancer (said when the old one answers again)
                self._instances.keep(key, instance, Baseline(now, at))
                continue
            if instance is not None and next(reversed(known)) != instance:
                self._balanced(instance)
            if instance is not None and _fell(previous.counters, now):
                self.invalid += 1  # a dip under the same `_created`: skipped, the baseline kept
                if previous.fell():
                    self.drained = True
                    return []
                continue
            if _reset(previous.counters, now):
                self.resets += 1
                self._instances.keep(key, instance, Baseline(now, at))
                continue
            previous.rose()
            self._instances.keep(key, instance, Baseline(now, at, previous.falls))
            interval = self._interval(key, previous, now, at)
            if interval is not None:
                intervals.append(interval)
        return intervals

    def _balanced(self, instance: Instance) -> None:
        if not self._said_balanced:
            self._said_balanced = True
            log.warning("several servers answer at one target (a load balancer?): each is counted against its own last answer, "
                        "told apart by %s; scrape each server directly target=%s", "_created" if instance and instance[0] == "created"
                        else "process_start_time_seconds", self.upstream)

    def baselines(self) -> list[dict[str, Any]]:
        """The previous scrape of each series and server, as JSON (with the counters it produced: state dir)."""
        return [{"model_name": model, "engine": engine, "at": previous.at, "counters": _counters_json(previous.counters),
                 **({"started": instance[1]} if instance is not None and instance[0] == "started" else {})}
                for (model, engine), instance, previous in self._instances.items()]

    def restore(self, saved: list[Any]) -> int:
        """Continue from saved baselines (entries that are not one are passed over); how many were restored."""
        restored = 0
        for entry in saved:
            try:
                key = (str(entry["model_name"]), str(entry["engine"]))
                counters = _counters_from_json(entry["counters"])
                started = entry.get("started")
                instance = instance_of(counters, float(started) if isinstance(started, (int, float)) and not isinstance(started, bool) else None)
                self._instances.keep(key, instance, Baseline(counters, float(entry["at"])))
            except (TypeError, KeyError, ValueError, AttributeError, OverflowError) as error:
                log.warning("saved scrape baseline unusable, that series starts a new baseline target=%s entry=%.200r error=%s",
                            self.upstream, entry, error)
                continue
            restored += 1
        return restored

    def _interval(self, key: tuple[str, str], previous: Baseline, now: CounterSet, at: float) -> Interval | None:
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
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_COUNT:
            raise TypeError(f"not a count: {value!r:.40}")
        return float(value)

    return CounterSet(
        drafts=number(saved["drafts"]), draft_tokens=number(saved["draft_tokens"]), accepted_tokens=number(saved["accepted_tokens"]),
        accepted_per_position={_position(position): float(number(value) or 0.0) for position, value in saved["accepted_per_position"]},
        created={(str(name), None if position is None else int(position)): float(value) for name, position, value in saved["created"]},
    )


def _position(value: Any) -> int:
    position = int(value)
    if not 0 <= position < MAX_POSITIONS:
        raise ValueError(f"not a position: {value!r:.40}")
    return position


def _plausible(counters: CounterSet) -> bool:
    """Counts a counter can hold, over as many positions as a drafter drafts (exporter/limits.py)."""
    values = [counters.drafts, counters.draft_tokens, counters.accepted_tokens, *counters.accepted_per_position.values()]
    return all(v is None or (math.isfinite(v) and 0 <= v <= MAX_COUNT) for v in values) and all(
        position < MAX_POSITIONS for position in counters.accepted_per_position)


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


def _fell(before: CounterSet, now: CounterSet) -> bool:
    """A counter went down (the caller knows it is the same server)."""
    return any(b is not None and n is not None and n < b for _, b, n in _pairs(before, now))


def _reset(before: CounterSet, now: CounterSet) -> bool:
    """A restart: a counter fell (where nothing tells servers apart), or a counter's `_created` changed."""
    return _fell(before, now) or any(name in before.created and before.created[name] != value for name, value in now.created.items())
