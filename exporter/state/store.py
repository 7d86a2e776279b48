"""The one state store: per-series counters and windows, per-upstream config and source health.

Sources write into it from their threads; the exporter and the status API read immutable
snapshots of it, so one scrape always sees one consistent state.

Two clocks, each for its own kind of question. The log's: every interval's `end`, set by the
interval stage's one rule (intervals/clock.py: the line's own time while catching up, arrival at
the live edge) — the judged window, the verdict's memory (references, spans, health since, the
hold) run on it. The wall's (`clock`, about the sidecar itself): the named windows are evicted at
the time of each read (the same unix-time axis, so a backlog's last minutes are the last minutes),
`last_update` orders the series cap, and the sources' `last_success` and staleness are arrival.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from exporter.records import Interval, ReadCounts, SampledValues, SeriesKey, SourceHealth, SpecConfig
from exporter.state.health import HealthMemory, key_text
from exporter.state.load import LoadProfile
from exporter.state.reference import SeriesMemory, SpecIdentity, restarted
from exporter.state.snapshot import SeriesSnapshot, Snapshot, SourceSnapshot, series_order
from exporter.state.trace import Trace
from exporter.state.upstreams import RESTARTS_FROM_RESETS, SourceCounts, Upstream
from exporter.state.window import RollingWindow, Totals, plus_columns, timeline

if TYPE_CHECKING:
    from exporter.intervals.columns import IntervalColumns

__all__ = ["AcknowledgeError", "CannotAcknowledge", "HealthMemory", "NoSuchSeries", "Store"]

log = logging.getLogger(__name__)
MAX_RUNS = 8  # runs of one series kept for the report (a config change starts one; the oldest go)

RESTARTS_FROM_CONFIG = ("log", "plugin")  # sources whose config records are startup lines


class AcknowledgeError(ValueError):
    """An acknowledgement refused; nothing changed (expose/ says what that is in HTTP)."""


class NoSuchSeries(AcknowledgeError):
    """The filter matches no series."""


class CannotAcknowledge(AcknowledgeError):
    """A matching series runs another config than the one stated, or the store keeps no references."""


class _Series:
    def __init__(self, key: SeriesKey, windows: Mapping[str, float], judged_seconds: float, restarts_seen: int = 0,
                 trace: bool = False) -> None:
        self.key = key
        self.restarts_seen = restarts_seen  # the upstream's restarts this series' memory has taken (Store._caught_up)
        self.trace = Trace() if trace else None  # its stretches, for a report written after the fact (analyze)
        self.memory = SeriesMemory()
        self.recent = RollingWindow(judged_seconds)  # evicted on the series' own clock, not the wall's
        self.lifetime = Totals()
        self.windows = {name: RollingWindow(seconds, granular=True) for name, seconds in windows.items()}  # read at /metrics: fold by granule
        self.last_update = 0.0
        self.variants: Counter[str] = Counter()
        self.runs: list[tuple[SpecIdentity, Totals]] = []  # the lifetime split where the speculative config changed
        self.load = LoadProfile()  # the current run's steady intervals by load band (state/load.py)

    def add_to_run(self, identity: SpecIdentity, add: Callable[[Totals], Totals]) -> None:
        """Count into the current run, or start another where the config conflicts with its own."""
        if self.runs and not self.runs[-1][0].conflicts(identity):
            known, totals = self.runs[-1]
            self.runs[-1] = (identity.filled(known), add(totals))
            return
        self.runs.append((identity, add(Totals())))
        del self.runs[:-MAX_RUNS]
        self.load = LoadProfile()  # another config pays off (or not) in its own way


class Store:
    """Thread-safe home of all state; `snapshot()` is what readers see."""

    def __init__(
        self,
        windows: Mapping[str, float] | None = None,
        *,
        max_series: int = 1000,
        clock: Callable[[], float] = time.time,  # the wall: reads, series eviction (see the module's docstring)
        health: HealthMemory | None = None,
        pairs: Iterable[tuple[str, str]] = (),
        trace: bool = False,  # keep each series' stretches (state/trace.py): analyze's hindsight
    ) -> None:
        self.health = health
        self._trace = trace
        self._judged_seconds = health.window_seconds if health else 0.0
        self.window_seconds = dict(windows or {})
        self.max_series = max_series
        self.clock = clock
        self._lock = threading.Lock()
        # least recently updated first (an update moves a series to the end): the series cap drops from the front
        self._series: OrderedDict[SeriesKey, _Series] = OrderedDict()
        # server restarts per (upstream, source), taken by each series' memory when it is next used: a
        # restart costs one count, not a pass over every series (20,000 startups in one log, 1,000 series)
        self._restarts: Counter[tuple[str, str]] = Counter()
        self._configs: dict[str, SpecConfig] = {}
        self._upstreams: dict[str, Upstream] = {}
        self._samples: dict[SeriesKey, SampledValues] = {}
        self.series_dropped = 0
        self.version = 0  # bumped by every write: readers that cache (the /metrics body) know when to look again
        self._pairs = tuple(pairs)
        self._restored: dict[SeriesKey, SeriesMemory] = {}  # saved memories of series not seen yet
        self._before_read: list[Callable[[], None]] = []

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Upstreams that are the same server (log, target, plugin dir): fixed when the store is made."""
        return self._pairs

    def _series_of(self, key: SeriesKey) -> _Series:
        """The series of `key`, created if new, taken to the end of the cap's order (it is being updated)."""
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = _Series(key, self.window_seconds, self._judged_seconds, self._restarts[(key.upstream, key.source)], self._trace)
            if key in self._restored:
                series.memory = self._restored.pop(key)
            self._enforce_cap()
        else:
            self._series.move_to_end(key)
            self._caught_up(series)
        return series

    def _caught_up(self, series: _Series) -> None:
        """Give the series' memory the restarts of its upstream it has not taken yet (restarted() is
        idempotent: several restarts without traffic between are one). Only a series that had traffic
        in this process restarts, as when the restart was seen."""
        restarts = self._restarts[(series.key.upstream, series.key.source)]
        if series.restarts_seen != restarts:
            series.restarts_seen = restarts
            if series.last_update:
                series.memory = restarted(series.memory)
                if series.trace is not None:
                    series.trace.cut("restart")

    def before_read(self, hook: Callable[[], None]) -> None:
        """Call `hook` before every snapshot and export: a source that batches its records (the log
        follower) hands them over then, so no reader ever sees a line read but not yet counted."""
        self._before_read.append(hook)

    def complete(self) -> None:
        """Let every source that batches hand over what it has read (see before_read)."""
        for hook in self._before_read:
            hook()

    def record_interval(self, interval: Interval) -> None:
        with self._lock:
            self.version += 1
            series = self._series_of(interval.key)
            series.lifetime = series.lifetime.plus(interval)
            identity = SpecIdentity.of(self._config_of(series.key.upstream), interval.k)
            series.add_to_run(identity, lambda totals: totals.plus(interval))
            if series.trace is not None:
                series.trace.add(interval, identity)
            series.load = series.load.plus(interval)
            series.variants[interval.variant] += 1
            for window in series.windows.values():
                window.add(interval)
            if self.health is not None:
                self.health.remember(series, self._config_of(series.key.upstream), interval)
            series.last_update = self.clock()

    def record_columns(self, columns: IntervalColumns) -> None:
        """Many intervals of one series (the batch path), leaving the state record_interval leaves
        after each in turn: the lifetime sums at once, the windows one interval at a time, the
        verdict's memory (which judges the window ending at every interval) as health.py says."""
        with self._lock:
            self.version += 1
            series = self._series_of(columns.key)
            series.lifetime = plus_columns(series.lifetime, columns)
            import numpy as np  # only where blocks are batched (start-up time)

            config = self._config_of(columns.key.upstream)
            cuts = [0, *(np.flatnonzero(np.diff(columns.ks)) + 1).tolist(), len(columns)]  # k may change inside a block
            for first, stop in itertools.pairwise(cuts):
                part = columns if (first, stop) == (0, len(columns)) else columns.rows(first, stop)
                identity = SpecIdentity.of(config, int(part.ks[0]))
                series.add_to_run(identity, functools.partial(plus_columns, columns=part))
                if series.trace is not None:
                    series.trace.add_columns(part, identity)
                series.load = series.load.plus_columns(part)
            series.variants[columns.variant] += len(columns)
            intervals = columns.intervals() if series.windows else None  # records only where windows keep them
            for window in series.windows.values():
                window.add_columns(columns, intervals or [])
            if self.health is not None:
                self.health.remember_columns(series, self._config_of(columns.key.upstream), columns, intervals)
            series.last_update = self.clock()

    def acknowledge(self, match: Mapping[str, str | None], identity: SpecIdentity | None = None) -> list[SeriesKey]:
        """Take what the matching series do now as their new normal. All or nothing: a filter that
        matches no series, or a config a matching series does not run, raises and changes nothing."""
        self.complete()
        with self._lock:
            if self.health is None:
                raise CannotAcknowledge("this sidecar keeps no references to acknowledge")
            chosen = [s for s in self._series.values() if all(v is None or getattr(s.key, k) == v for k, v in match.items())]
            wanted = ", ".join(f"{k}={v}" for k, v in match.items() if v is not None)
            if not chosen:
                known = sorted({f"{s.key.model_name} (engine {s.key.engine}, {s.key.source}, {s.key.upstream})" for s in self._series.values()})
                raise NoSuchSeries(f"no series matches {wanted}; known: {', '.join(known) or 'none'}")
            for s in chosen:
                self._caught_up(s)
            for s in chosen:
                if identity is not None and s.memory.identity.conflicts(identity):
                    raise CannotAcknowledge(f"{key_text(s.key)} runs {s.memory.identity.describe()}, not {identity.describe()}")
            for s in chosen:
                self.health.acknowledge(s, self._config_of(s.key.upstream), s.memory.last_at if s.memory.last_at is not None else self.clock())
            self.version += 1
            return [s.key for s in chosen]

    def _enforce_cap(self) -> None:
        """Drop the least recently updated series beyond the cap (never the one just made: it is last)."""
        while len(self._series) > self.max_series:
            self._series.popitem(last=False)
            self.series_dropped += 1

    def record_sample(self, sample: SampledValues) -> None:
        """Keep the latest sampled values of a series (snapshots replace, never add up)."""
        with self._lock:
            self.version += 1
            self._samples[sample.key] = sample

    def forget(self, upstream: str) -> None:
        """Drop everything about an upstream that is no longer configured (e.g. left the targets file)."""
        with self._lock:
            self.version += 1
            for key in [key for key in self._series if key.upstream == upstream]:
                del self._series[key]
            for key in [key for key in self._samples if key.upstream == upstream]:
                del self._samples[key]
            self._upstreams.pop(upstream, None)
            self._configs.pop(upstream, None)

    def record_config(self, upstream: str, config: SpecConfig) -> None:
        """A server announced its config: at its start. After traffic this process has counted, a
        log's or plugin's startup is a restart, and its series begin a new period (periods.py);
        a scrape's config comes with every /version and says nothing of restarts."""
        with self._lock:
            self.version += 1
            self._configs[upstream] = config
            for source in RESTARTS_FROM_CONFIG:
                self._restarts[(upstream, source)] += 1

    def _upstream(self, upstream: str, kind: str) -> Upstream:
        return self._upstreams.get(upstream) or Upstream(kind)

    def post_health(self, upstream: str, health: SourceHealth, kind: str = "log") -> None:
        """The source's word on its upstream, replacing its last (the one writer of SourceHealth)."""
        with self._lock:
            self.version += 1
            self._upstreams[upstream] = dataclasses.replace(self._upstream(upstream, kind), health=health)

    def count_read(self, upstream: str, counts: ReadCounts, kind: str = "log") -> None:
        """Add what the interval stage made of one read (the one writer of the counts). A scrape that
        saw the counters reset is a restart: the target's series begin a new period (a log's restarts
        come with its startup lines, record_config)."""
        with self._lock:
            self.version += 1
            known = self._upstream(upstream, kind)
            now = known.counts.plus(counts, kind)
            self._upstreams[upstream] = dataclasses.replace(known, counts=now)
            if now.resets > known.counts.resets and kind == RESTARTS_FROM_RESETS:
                self._restarts[(upstream, RESTARTS_FROM_RESETS)] += 1

    def snapshot(self, timeline_points: int = 0) -> Snapshot:
        """A consistent copy of everything; with `timeline_points`, each series' recent L per interval."""
        self.complete()
        now = self.clock()
        with self._lock:
            for known in self._series.values():
                self._caught_up(known)
            series = tuple(
                SeriesSnapshot(
                    key=s.key,
                    lifetime=s.lifetime,
                    windows={name: window.totals(now) for name, window in s.windows.items()},
                    config=self._config_of(s.key.upstream),
                    last_update=s.last_update,
                    variant=s.variants.most_common(1)[0][0] if s.variants else "",
                    timeline=timeline(s.windows.values(), now, timeline_points) if timeline_points else (),
                    memory=s.memory if self.health is not None else None,
                    recent=s.recent.totals(s.memory.last_at) if self.health is not None and s.memory.last_at is not None else None,
                    reference_rule=self.health.rule if self.health is not None else None,
                    window_seconds=self.window_seconds,
                    runs=tuple(s.runs),
                    load=s.load,
                    trace=s.trace.stretches() if s.trace is not None else None,
                )
                for s in sorted(self._series.values(), key=lambda s: series_order(s.key))
            )
            sources = tuple(known.snapshot(upstream) for upstream, known in sorted(self._upstreams.items()))
            samples = tuple(sorted(self._samples.values(), key=lambda s: series_order(s.key)))
            return Snapshot(taken_at=now, series=series, sources=sources, series_dropped=self.series_dropped, samples=samples,
                            window_seconds=self.window_seconds)

    def memories(self) -> list[tuple[SeriesKey, SeriesMemory]]:
        """Each series' references and health history (those of series not seen yet last), for the state dir."""
        self.complete()
        with self._lock:
            for known in self._series.values():
                self._caught_up(known)
            live = [(s.key, s.memory) for s in self._series.values() if s.memory.last_at is not None]
            return [*live, *self._restored.items()]

    def memories_at(self) -> float | None:
        """The latest interval any series' memory has seen, on the series' own clock (a catch-up moves
        it by hours in a second; the state dir saves references when it has moved a minute)."""
        with self._lock:
            return max((s.memory.last_at for s in self._series.values() if s.memory.last_at is not None), default=None)

    def restore_memory(self, key: SeriesKey, memory: SeriesMemory) -> None:
        """A memory saved by an earlier run: the series' now, or when the series reappears."""
        with self._lock:
            self.version += 1
            series = self._series.get(key)
            if series is not None:
                series.memory = memory
            else:
                self._restored[key] = memory

    def counters(self) -> tuple[list[tuple[SeriesKey, Totals, dict[str, int]]], tuple[SourceSnapshot, ...]]:
        """Every series' lifetime totals and formats, and every source, for the state dir."""
        self.complete()
        with self._lock:
            series = [(s.key, s.lifetime, dict(s.variants)) for s in self._series.values()]
            return series, tuple(known.snapshot(upstream) for upstream, known in self._upstreams.items())

    def restore_series(self, key: SeriesKey, lifetime: Totals, variants: Mapping[str, int]) -> None:
        """Continue a series' counters from an earlier run, so Prometheus sees no reset."""
        with self._lock:
            self.version += 1
            series = self._series.get(key) or _Series(key, self.window_seconds, self._judged_seconds, self._restarts[(key.upstream, key.source)], self._trace)
            series.lifetime = lifetime
            series.variants.update(variants)
            self._series[key] = series

    def restore_counts(self, upstream: str, kind: str, saved: SourceCounts) -> None:
        """Continue a source's counters from an earlier run."""
        with self._lock:
            self.version += 1
            known = self._upstream(upstream, kind)
            self._upstreams[upstream] = dataclasses.replace(known, counts=known.counts.continued(saved))

    def _config_of(self, upstream: str) -> SpecConfig:
        """An upstream's config; what it does not say it borrows from its pairs (a target has no method)."""
        config = self._configs.get(upstream, SpecConfig())
        for first, second in self._pairs:
            partner = second if first == upstream else first if second == upstream else None
            if partner is not None:
                config = self._configs.get(partner, SpecConfig()).merged(config)
        return config
