"""The custom prometheus_client collector: one consistent snapshot of the store per scrape.

A window with no drafts exports nothing for that window (absent, not zero, not NaN); a source
that cannot be read shows `specdecode_source_up 0`, never a zero acceptance.
"""

from __future__ import annotations

import platform
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from exporter import metric_names as names
from exporter.config import DeriveSettings
from exporter.derive import derive
from exporter.labels import clean
from exporter.store import SeriesSnapshot, Store
from exporter.verdict import STATES, verdict
from exporter.window import parse_duration

from exporter import __version__ as VERSION


def _family(spec: names.MetricSpec) -> Metric:
    if spec.type == "counter":
        return CounterMetricFamily(spec.name, spec.help, labels=spec.labels)
    if spec.type == "info":  # prometheus_client appends "_info" to the samples itself
        return InfoMetricFamily(spec.name.removesuffix("_info"), spec.help, labels=())
    return GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)


def _series_labels(series: SeriesSnapshot) -> list[str]:
    key = series.key
    return [clean(key.upstream), clean(key.model_name), clean(key.engine), key.source]


class SpecDecodeCollector(Collector):
    """Renders the store's snapshot as Prometheus metric families."""

    def __init__(self, store: Store, settings: DeriveSettings) -> None:
        self.store = store
        self.settings = settings

    def describe(self) -> Iterator[Metric]:
        for spec in names.ALL:
            yield _family(spec)

    def collect(self) -> Iterator[Metric]:
        snapshot = self.store.snapshot()
        families = {spec.name: _family(spec) for spec in names.ALL}

        def add(spec: names.MetricSpec, labels: list[str], value: float) -> None:
            families[spec.name].add_metric(labels, value)  # type: ignore[attr-defined]

        families[names.BUILD_INFO.name].add_metric([], {"version": VERSION, "python_version": platform.python_version()})  # type: ignore[attr-defined]
        windows = sorted(self.store.window_seconds, key=parse_duration)
        for series in snapshot.series:
            labels = _series_labels(series)
            life = series.lifetime
            add(names.DRAFT_TOKENS, labels, life.draft_tokens)
            add(names.ACCEPTED_TOKENS, labels, life.accepted_tokens)
            if life.known_drafts is not None:
                add(names.DRAFTS, labels, life.known_drafts)
            for position, count in enumerate(life.accepted_per_position):
                add(names.ACCEPTED_PER_POSITION, [*labels, str(position)], count)
            self._windowed(series, labels, windows, add, families)
        self._config_info(snapshot, families)
        self._self_metrics(snapshot, add)
        yield from families.values()

    def _windowed(self, series: SeriesSnapshot, labels: list[str], windows: list[str], add, families) -> None:  # type: ignore[no-untyped-def]
        cost = self.settings.cost_for(series.config.method)
        derived_by_window = {name: derive(series.windows[name], cost) for name in windows}
        for name, derived in derived_by_window.items():
            if derived is None:
                continue
            w = [*labels, name]
            add(names.DRAFT_ACCEPTANCE_RATIO, w, derived.draft_acceptance_ratio)
            if derived.seconds:
                add(names.WASTED_TOKENS_RATE, w, derived.wasted_draft_tokens / derived.seconds)
            if derived.mean_acceptance_length is None:
                continue
            add(names.MEAN_ACCEPTANCE_LENGTH, w, derived.mean_acceptance_length)
            add(names.MEAN_DRAFT_LENGTH, w, derived.mean_draft_length)
            for position, rate in enumerate(derived.position_acceptance):
                add(names.POSITION_ACCEPTANCE, [*w, str(position)], rate)
            for position, conditional in enumerate(derived.conditional_acceptance):
                if conditional is not None:
                    add(names.POSITION_CONDITIONAL, [*w, str(position)], conditional)
            if derived.recommended_speculative_tokens is not None:
                add(names.RECOMMENDED_K, w, derived.recommended_speculative_tokens)
        if windows:
            judged = self.settings.health_window if self.settings.health_window in derived_by_window else windows[0]
            current = derived_by_window[judged]
            baseline = derived_by_window[windows[-1]] if windows[-1] != judged else None
            state = verdict(current, baseline, self.settings.thresholds)
            for candidate in STATES:
                add(names.HEALTH, [*labels, candidate], 1.0 if candidate == state else 0.0)

    @staticmethod
    def _config_info(snapshot, families) -> None:  # type: ignore[no-untyped-def]
        seen = set()
        for series in snapshot.series:
            config = series.config
            key = (series.key.upstream, series.key.model_name)
            if key in seen or config.method is None and config.num_speculative_tokens is None:
                continue
            seen.add(key)
            families[names.INFO.name].add_metric(
                [],
                {
                    "upstream": clean(series.key.upstream),
                    "model_name": clean(series.key.model_name),
                    "method": clean(config.method or ""),
                    "num_speculative_tokens": str(config.num_speculative_tokens or ""),
                    "draft_model": clean(config.draft_model or ""),
                    "server_version": clean(config.server_version or ""),
                },
            )

    @staticmethod
    def _self_metrics(snapshot, add) -> None:  # type: ignore[no-untyped-def]
        for source in snapshot.sources:
            upstream = clean(source.upstream)
            add(names.SOURCE_UP, [source.kind, upstream], 1.0 if source.up else 0.0)
            if source.last_success is not None:
                add(names.SOURCE_LAST_SUCCESS, [source.kind, upstream], source.last_success)
            add(names.LOG_LINES, [upstream], source.lines)
            for variant, count in sorted(source.variants.items()):
                add(names.LOG_SPEC_LINES, [upstream, variant], count)
            for reason, count in sorted(source.problems.items()):
                add(names.LOG_PARSE_ERRORS, [upstream, reason], count)
            if source.last_spec_line is not None:
                add(names.LAST_SPEC_LINE, [upstream], source.last_spec_line)
            add(names.LOG_ROTATIONS, [upstream], source.rotations)
            add(names.LOG_TRUNCATIONS, [upstream], source.truncations)
        add(names.SERIES_DROPPED, [], snapshot.series_dropped)
