"""Collecting: a store's snapshot → the body's owners (each series, each source, the rest), as pieces.

A source that cannot be read shows `specdecode_source_up 0`, never a zero acceptance; once it has
been down longer than the grace period its series stop exporting windowed gauges and a verdict, so
nothing stale is presented as current. The counters stay: they are still true totals.

Each series' sample lines are written once and reused while its inputs (totals, windows, config,
reference memory, staleness) stay equal, and so are each source's: an owner that did not change is
handed over as the same object, which is how the body (expose/body.py) knows nothing changed.
"""

from __future__ import annotations

import platform

from exporter import __version__
from exporter import metric_names as names
from exporter.config import DeriveSettings, ExpositionSettings
from exporter.expose.body import Owner
from exporter.expose.families import (
    SAMPLED,
    config_info,
    counters,
    memory_gauges,
    payoff_gauges,
    series_labels,
    source_metrics,
    stale_upstreams,
    window_gauges,
)
from exporter.expose.labels import clean
from exporter.expose.lines import Add, Info, Lines
from exporter.judge.assess import assess, judged_window
from exporter.judge.crosscheck import cross_check
from exporter.judge.derive import derive
from exporter.judge.verdict import STATES
from exporter.records import SeriesKey
from exporter.state.reference import UNHEALTHY
from exporter.state.snapshot import SeriesSnapshot, Snapshot, SourceSnapshot
from exporter.state.store import Store


class Collector:
    """The owners of a snapshot; those whose inputs are unchanged since the last call are the same objects."""

    def __init__(self, store: Store, settings: DeriveSettings, exposition: ExpositionSettings) -> None:
        self.store = store
        self.settings = settings
        self.exposition = exposition
        self._series: dict[SeriesKey, tuple[object, Owner]] = {}  # key → (its inputs, its pieces)
        self._sources: dict[str, tuple[SourceSnapshot, Owner]] = {}
        self._rest: Owner = {}
        self._configs: tuple[object, list[str]] = ((), [])  # (the series' configs, their info lines)
        self.rendered_series = 0  # series written anew (not reused), for tests and benchmarks

    def owners(self, snapshot: Snapshot) -> list[Owner]:
        windows = sorted(self.store.window_seconds, key=self.store.window_seconds.__getitem__)
        judged = judged_window(self.settings, self.store.window_seconds)
        exposed = self.exposition.windows(windows, judged)
        stale = stale_upstreams(snapshot, self.settings.stale_after)
        kept: dict[SeriesKey, tuple[object, Owner]] = {}
        for series in snapshot.series:
            is_stale = series.key.upstream in stale
            fingerprint = (series.lifetime, series.windows, series.config, series.memory, is_stale)
            cached = self._series.get(series.key)
            if cached is None or cached[0] != fingerprint:
                lines = Lines()
                labels = series_labels(series.key)
                counters(series, labels, lines.add)
                if not is_stale and judged is not None:
                    self._windowed(series, labels, windows, judged, exposed, lines.add, lines.info)
                cached = (fingerprint, lines.pieces())
                self.rendered_series += 1
            kept[series.key] = cached
        self._series = kept  # series dropped from the store leave the cache too
        sources: dict[str, tuple[SourceSnapshot, Owner]] = {}
        for source in snapshot.sources:
            known = self._sources.get(source.upstream)
            if known is None or known[0] != source:
                lines = Lines()
                source_metrics(source, lines.add, lines.info)
                known = (source, lines.pieces())
            sources[source.upstream] = known
        self._sources = sources
        rest = self._rest_of(snapshot, stale)
        if {name: piece.text for name, piece in rest.items()} != {name: piece.text for name, piece in self._rest.items()}:
            self._rest = rest  # else the old object stays, so an unchanged body is recognised by identity
        return [*(owner for _, owner in kept.values()), self._rest, *(owner for _, owner in sources.values())]

    def _rest_of(self, snapshot: Snapshot, stale: set[str]) -> Owner:
        """What belongs to no one series or source: build info, sampled values, configs, cross-checks."""
        shared = Lines()
        shared.info(names.BUILD_INFO, {"version": __version__, "python_version": platform.python_version()})
        for sample in snapshot.samples:
            if sample.key.upstream in stale:
                continue
            labels = series_labels(sample.key)
            for name, value in sample.values:
                spec = SAMPLED.get(name)
                if spec is not None:
                    shared.add(spec, labels, value)
            shared.add(names.SAMPLED_TIMESTAMP, labels, sample.at)
        configs = tuple((series.key.upstream, series.key.model_name, series.config) for series in snapshot.series)
        if configs != self._configs[0]:
            lines = Lines()
            config_info(snapshot, lines.info)
            self._configs = (configs, lines.by_family.get(names.INFO.name, []))
        shared.by_family[names.INFO.name] = self._configs[1]
        self._cross_check(snapshot, shared.add)
        shared.add(names.SERIES_DROPPED, [], snapshot.series_dropped)
        return shared.pieces()

    def _windowed(
        self, series: SeriesSnapshot, labels: list[str], windows: list[str], judged: str, exposed: list[str], add: Add, info: Info
    ) -> None:
        cost = self.settings.cost_for(series.config.method, series.key.model_name)
        # only the judged window needs a baseline and a verdict; the others just derive
        verdict = assess(series, self.settings, judged) if judged in windows else None
        # while the drafter fails, no window's curve gives k advice: the fix is the drafter (the status's is the reference's)
        advise = verdict is None or verdict.verdict.state not in UNHEALTHY
        for name in windows:
            if name != judged and name not in exposed:
                continue
            assessment = verdict if name == judged else None
            derived = assessment.derived if assessment else derive(series.windows[name], cost)
            if derived is not None and name in exposed:
                window_gauges(derived, [*labels, name], add, self.exposition, advise=advise)
            if assessment is not None:
                state = assessment.verdict.state
                for candidate in STATES:
                    add(names.HEALTH, [*labels, candidate], 1.0 if candidate == state else 0.0)
                info(names.VERDICT_INFO, {**dict(zip(names.SERIES_LABELS, labels, strict=False)), "state": state, "reason": assessment.verdict.reason})
                # slower than plain decoding is the load's doing, not the drafter's: its health began when the memory's did
                since_state = series.memory.state if assessment.verdict.reason == "slower_than_plain" and series.memory is not None else state
                memory_gauges(series, since_state, labels, add)
                payoff_gauges(assessment, labels, [*labels, name], add, advise=advise)

    def _cross_check(self, snapshot: Snapshot, add: Add) -> None:
        for gap in cross_check(snapshot, self.store.pairs):
            labels = [clean(gap.reference_upstream), clean(gap.compared_upstream), clean(gap.model_name), clean(gap.engine), gap.window, gap.quantity]
            add(names.DISAGREEMENT, labels, gap.relative_difference)
