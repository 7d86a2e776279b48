"""The one state store: per-series counters and windows, per-upstream config and source health.

Sources write into it from their threads; the exporter and the status API read immutable
snapshots of it, so one scrape always sees one consistent state.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from exporter.records import Interval, SampledValues, SeriesKey, SourceStats, SpecConfig
from exporter.state.baseline import DEFAULT_HALF_LIFE_SECONDS, SlowAverage
from exporter.state.window import RollingWindow, Totals


@dataclass(frozen=True, slots=True)
class SeriesSnapshot:
    key: SeriesKey
    lifetime: Totals
    windows: Mapping[str, Totals]
    config: SpecConfig
    last_update: float
    variant: str  # the log layout (or source format) most of this series' data came in
    timeline: tuple[tuple[float, float], ...] = ()  # (end, L) of recent intervals, when asked for
    average: tuple[float, float] | None = None  # the slow average: (L, weight in drafts)


@dataclass(frozen=True, slots=True)
class SourceSnapshot:
    upstream: str
    kind: str
    up: bool
    lines: int
    spec_lines: int
    problems: Mapping[str, int]
    variants: Mapping[str, int]
    rotations: int
    truncations: int
    last_success: float | None
    last_spec_line: float | None
    resets: int
    scrape_duration: float | None
    last_error: str | None
    extra_labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Snapshot:
    taken_at: float
    series: tuple[SeriesSnapshot, ...]
    sources: tuple[SourceSnapshot, ...]
    series_dropped: int
    samples: tuple[SampledValues, ...] = ()


class _Series:
    def __init__(self, key: SeriesKey, windows: Mapping[str, float], half_life: float) -> None:
        self.key = key
        self.average = SlowAverage(half_life)
        self.lifetime = Totals()
        self.windows = {name: RollingWindow(seconds) for name, seconds in windows.items()}
        self.last_update = 0.0
        self.variants: Counter[str] = Counter()


class Store:
    """Thread-safe home of all state; `snapshot()` is what readers see."""

    def __init__(
        self,
        windows: Mapping[str, float] | None = None,
        *,
        max_series: int = 1000,
        clock: Callable[[], float] = time.time,
        baseline_half_life: float = DEFAULT_HALF_LIFE_SECONDS,
    ) -> None:
        self.baseline_half_life = baseline_half_life
        self.window_seconds = dict(windows or {})
        self.max_series = max_series
        self.clock = clock
        self._lock = threading.Lock()
        self._series: dict[SeriesKey, _Series] = {}
        self._configs: dict[str, SpecConfig] = {}
        self._sources: dict[str, SourceStats] = {}
        self._samples: dict[SeriesKey, SampledValues] = {}
        self.series_dropped = 0
        self.pairs: list[tuple[str, str]] = []  # upstreams that are the same server (log, target, plugin dir)
        self._restored: dict[SeriesKey, SlowAverage] = {}  # saved averages of series not seen yet
        self._before_read: list[Callable[[], None]] = []

    def before_read(self, hook: Callable[[], None]) -> None:
        """Call `hook` before every snapshot and export: a source that batches its records (the log
        follower) hands them over then, so no reader ever sees a line read but not yet counted."""
        self._before_read.append(hook)

    def _complete(self) -> None:
        for hook in self._before_read:
            hook()

    def record_interval(self, interval: Interval) -> None:
        with self._lock:
            series = self._series.get(interval.key)
            if series is None:
                series = self._series[interval.key] = _Series(interval.key, self.window_seconds, self.baseline_half_life)
                if interval.key in self._restored:
                    series.average = self._restored.pop(interval.key)
                self._enforce_cap()
            series.lifetime = series.lifetime.plus(interval)
            series.variants[interval.variant] += 1
            if interval.drafts:
                series.average.add(interval.accepted_tokens, interval.drafts, interval.end)
            for window in series.windows.values():
                window.add(interval)
            series.last_update = self.clock()

    def _enforce_cap(self) -> None:
        while len(self._series) > self.max_series:
            oldest = min(self._series.values(), key=lambda s: s.last_update)
            del self._series[oldest.key]
            self.series_dropped += 1

    def record_sample(self, sample: SampledValues) -> None:
        """Keep the latest sampled values of a series (snapshots replace, never add up)."""
        with self._lock:
            self._samples[sample.key] = sample

    def forget(self, upstream: str) -> None:
        """Drop everything about an upstream that is no longer configured (e.g. left the targets file)."""
        with self._lock:
            for key in [key for key in self._series if key.upstream == upstream]:
                del self._series[key]
            for key in [key for key in self._samples if key.upstream == upstream]:
                del self._samples[key]
            self._sources.pop(upstream, None)
            self._configs.pop(upstream, None)

    def record_config(self, upstream: str, config: SpecConfig) -> None:
        with self._lock:
            self._configs[upstream] = config

    def update_source(self, upstream: str, update: Callable[[SourceStats], None], kind: str = "log") -> None:
        """Apply `update` to the upstream's stats under the lock."""
        with self._lock:
            stats = self._sources.get(upstream)
            if stats is None:
                stats = self._sources[upstream] = SourceStats(kind=kind)
            update(stats)

    def snapshot(self, timeline_points: int = 0) -> Snapshot:
        """A consistent copy of everything; with `timeline_points`, each series' recent L per interval."""
        self._complete()
        now = self.clock()
        with self._lock:
            series = tuple(
                SeriesSnapshot(
                    key=s.key,
                    lifetime=s.lifetime,
                    windows={name: window.totals(now) for name, window in s.windows.items()},
                    config=self._config_of(s.key.upstream),
                    last_update=s.last_update,
                    variant=s.variants.most_common(1)[0][0] if s.variants else "",
                    timeline=_timeline(s, now, timeline_points) if timeline_points else (),
                    average=(s.average.mean_acceptance_length, s.average.drafts) if s.average.mean_acceptance_length else None,
                )
                for s in sorted(self._series.values(), key=lambda s: _sort_key(s.key))
            )
            sources = tuple(
                SourceSnapshot(
                    upstream=upstream,
                    kind=stats.kind,
                    up=stats.up,
                    lines=stats.lines,
                    spec_lines=stats.spec_lines,
                    problems=dict(stats.problems),
                    variants=dict(stats.variants),
                    rotations=stats.rotations,
                    truncations=stats.truncations,
                    last_success=stats.last_success,
                    last_spec_line=stats.last_spec_line,
                    resets=stats.resets,
                    scrape_duration=stats.scrape_duration,
                    last_error=stats.last_error,
                    extra_labels=dict(stats.extra_labels),
                )
                for upstream, stats in sorted(self._sources.items())
            )
            samples = tuple(sorted(self._samples.values(), key=lambda s: _sort_key(s.key)))
            return Snapshot(taken_at=now, series=series, sources=sources, series_dropped=self.series_dropped, samples=samples)

    def export_averages(self) -> list[dict[str, object]]:
        """The slow averages, for the state dir."""
        self._complete()
        with self._lock:
            live: list[dict[str, object]] = [
                {"key": _key_json(s.key), **s.average.to_json()} for s in self._series.values() if s.average.drafts > 0
            ]
            waiting: list[dict[str, object]] = [{"key": _key_json(key), **average.to_json()} for key, average in self._restored.items()]
            return live + waiting

    def import_averages(self, entries: list[dict[str, object]]) -> int:
        """Restore slow averages saved by an earlier run (applied when each series reappears)."""
        restored = 0
        with self._lock:
            for entry in entries:
                try:
                    key = SeriesKey(**entry["key"])  # type: ignore[arg-type]
                    average = SlowAverage.from_json(entry, self.baseline_half_life)  # type: ignore[arg-type]
                except (TypeError, KeyError, ValueError):
                    continue
                series = self._series.get(key)
                if series is not None:
                    series.average = average
                else:
                    self._restored[key] = average
                restored += 1
        return restored

    def export_counters(self) -> dict[str, object]:
        """Every series' lifetime totals and every source's counters, for the state dir."""
        self._complete()
        with self._lock:
            series = [{"key": _key_json(s.key), "totals": _totals_json(s.lifetime), "variants": dict(s.variants)} for s in self._series.values()]
            sources = [
                {"upstream": upstream, "kind": stats.kind, "lines": stats.lines, "spec_lines": stats.spec_lines,
                 "problems": dict(stats.problems), "variants": dict(stats.variants), "resets": stats.resets}
                for upstream, stats in self._sources.items()
            ]
        return {"series": series, "sources": sources}

    def import_counters(self, saved: Mapping[str, object]) -> int:
        """Continue the counters of an earlier run, so Prometheus sees no reset; returns series restored."""
        restored = 0
        with self._lock:
            for entry in _entries(saved, "series"):
                try:
                    key = SeriesKey(**entry["key"])
                    saved_totals = entry["totals"]
                    totals = Totals(**{
                        **saved_totals,
                        "accepted_per_position": tuple(saved_totals["accepted_per_position"]),
                        "draft_tokens_per_position": tuple(saved_totals.get("draft_tokens_per_position", ())),
                    })
                except (TypeError, KeyError):
                    continue
                series = self._series.get(key) or _Series(key, self.window_seconds, self.baseline_half_life)
                series.lifetime = totals
                series.variants.update(entry.get("variants", {}))
                self._series[key] = series
                restored += 1
            for entry in _entries(saved, "sources"):
                if not isinstance(entry, dict) or "upstream" not in entry:
                    continue
                stats = self._sources.setdefault(entry["upstream"], SourceStats(kind=entry.get("kind", "log")))
                stats.lines, stats.spec_lines, stats.resets = entry.get("lines", 0), entry.get("spec_lines", 0), entry.get("resets", 0)
                stats.problems.update(entry.get("problems", {}))
                stats.variants.update(entry.get("variants", {}))
        return restored

    def _config_of(self, upstream: str) -> SpecConfig:
        """An upstream's config; what it does not say it borrows from its pairs (a target has no method)."""
        config = self._configs.get(upstream, SpecConfig())
        for first, second in self.pairs:
            partner = second if first == upstream else first if second == upstream else None
            if partner is not None:
                config = self._configs.get(partner, SpecConfig()).merged(config)
        return config



def _timeline(series: _Series, now: float, points: int) -> tuple[tuple[float, float], ...]:
    if not series.windows:
        return ()
    longest = max(series.windows.values(), key=lambda window: window.seconds)
    longest.totals(now)  # evicts what has left the window
    return tuple(
        (interval.end, 1.0 + interval.accepted_tokens / interval.drafts)
        for interval in longest.recent(points)
        if interval.drafts
    )


def _totals_json(totals: Totals) -> dict[str, object]:
    from dataclasses import asdict

    data = asdict(totals)
    data["accepted_per_position"] = list(totals.accepted_per_position)
    data["draft_tokens_per_position"] = list(totals.draft_tokens_per_position)
    return data


def _key_json(key: SeriesKey) -> dict[str, str]:
    return {"upstream": key.upstream, "model_name": key.model_name, "engine": key.engine, "source": key.source}


def _sort_key(key: SeriesKey) -> tuple[str, str, int, str, str]:
    engine = int(key.engine) if key.engine.isdigit() else 1 << 30
    return (key.upstream, key.model_name, engine, key.engine, key.source)


def _entries(saved: Mapping[str, object], name: str) -> list[Any]:
    """A list from the saved state, or none (a hand-edited or foreign file must not stop a restart)."""
    entries = saved.get(name, [])
    return entries if isinstance(entries, list) else []
