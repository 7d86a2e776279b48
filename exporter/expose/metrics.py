"""/metrics text: the store's snapshot in Prometheus text format 0.0.4, one series at a time, cached.

A window with no drafts exports nothing for that window (absent, not zero, not NaN). A source
that cannot be read shows `specdecode_source_up 0`, never a zero acceptance; once it has been down
longer than the grace period its series stop exporting windowed gauges and a verdict, so nothing
stale is presented as current. The counters stay: they are still true totals.

Each series' sample lines are rendered once and reused while its inputs (totals, windows, config,
reference memory, staleness) stay equal, and so are each source's; the body itself is joined (and
gzipped) only when one of them changed (expose/body.py), so a scrape between two changes costs
a snapshot and a comparison. prometheus_client's collector model would format every sample on
every scrape (≈0.6 s for a thousand series); its exact text is kept (expose/lines.py).

What a series exports beyond its counters and verdict is chosen by ExpositionSettings: by default
the derived gauges of the health window only (issue 19; README, "Lean by default").
"""

from __future__ import annotations

import platform
import threading
import time
from collections.abc import Callable

from exporter import __version__
from exporter import metric_names as names
from exporter.config import DeriveSettings, ExpositionSettings
from exporter.expose.body import Body, Owner
from exporter.expose.labels import clean
from exporter.expose.lines import Add, Info, Lines, header
from exporter.judge.assess import assess, judged_window
from exporter.judge.crosscheck import cross_check
from exporter.judge.derive import Derived, derive
from exporter.judge.memory import health_since
from exporter.judge.verdict import STATES
from exporter.records import SeriesKey
from exporter.state.snapshot import SeriesSnapshot, Snapshot, SourceSnapshot
from exporter.state.store import Store


def _series_labels(key: SeriesKey) -> list[str]:
    return [clean(key.upstream), clean(key.model_name), clean(key.engine), key.source]


def stale_upstreams(snapshot: Snapshot, grace_seconds: float) -> set[str]:
    """Upstreams whose source has been down for longer than the grace period."""
    return {
        source.upstream
        for source in snapshot.sources
        if not source.up and (source.last_success is None or snapshot.taken_at - source.last_success > grace_seconds)
    }


class MetricsRenderer:
    """Renders the store as /metrics text; per-series and per-source text is cached while unchanged."""

    def __init__(self, store: Store, settings: DeriveSettings, exposition: ExpositionSettings | None = None) -> None:
        self.store = store
        self.settings = settings
        self.exposition = exposition or ExpositionSettings()
        self._cache: dict[SeriesKey, tuple[object, Owner]] = {}
        self._sources: dict[str, tuple[SourceSnapshot, Owner]] = {}
        self._rest: Owner = {}
        self._configs: tuple[object, list[str]] = ((), [])  # (the series' configs, their info lines)
        self._body = Body([spec.name for spec in names.ALL], {spec.name: header(spec).encode() for spec in names.ALL})
        self._lock = threading.Lock()  # concurrent scrapes share one cache
        self.rendered_series = 0  # cache misses, for tests and benchmarks
        self.refreshed = (float("-inf"), -1)  # (monotonic time, store version) of the last body built
        self._published: bytes | None = None  # the gzip body of the last refresh, read without the lock
        self.background = False  # a refresher keeps the body young (set by expose/refresh.py)
        self.wanted = threading.Event()  # set when a scrape got an old body: the refresher rebuilds it at once

    @property
    def generation(self) -> int:
        """Bumped each time the body changed since the previous render."""
        return self._body.generation

    def render(self) -> str:
        return self.render_bytes().decode()

    def render_bytes(self, gzip: bool = False) -> bytes:
        """The body of the store as it is now: UTF-8 text, or one gzip member of that text."""
        with self._lock:
            self._refresh()
            return self._body.gzip() if gzip else self._body.text()

    def refresh(self) -> None:
        """Bring the body up to the store now, gzipped (what Prometheus asks for), off the request path."""
        with self._lock:
            self._refresh()
            self._published = self._body.gzip()

    def _refresh(self) -> None:
        self.store.complete()  # lines read but not yet handed over count in the version read next
        version = self.store.version  # read before the snapshot: a write after it is seen next time
        generation = self._body.generation
        self._body.update(self._owners(self.store.snapshot()))
        if self._body.generation != generation:
            self._published = None
        self.refreshed = (time.monotonic(), version)

    def cached(self, gzip: bool, max_age: float) -> bytes | None:
        """The last gzip body without waiting, or None when one must be built first.

        It is sent if younger than `max_age` seconds, while a newer one is being built, when no
        source wrote since it was built (only windows moving with time can differ), or whenever a
        refresher keeps the body (it rebuilds within about `max_age` of a write): a scrape should not
        wait for a render. An old body sent asks the refresher to rebuild at once."""
        published = self._published
        if not gzip or published is None:
            return None
        if time.monotonic() - self.refreshed[0] < max_age or self._lock.locked():
            return published
        if self.background or self.store.version == self.refreshed[1]:
            self.wanted.set()
            return published
        return None

    def latest(self, gzip: bool, max_age: float) -> bytes:
        """`cached`, else a body built now. The refresher (expose/refresh.py) keeps the body young, so
        that a GET costs no rendering; the text form (browsers, tests) is joined on demand."""
        body = self.cached(gzip, max_age)
        if body is not None:
            return body
        if gzip:
            self.refresh()
            published = self._published
            if published is not None:
                return published
        return self.render_bytes(gzip)

    def _owners(self, snapshot: Snapshot) -> list[Owner]:
        windows = sorted(self.store.window_seconds, key=self.store.window_seconds.__getitem__)
        judged = judged_window(self.settings, self.store.window_seconds)
        exposed = self.exposition.windows(windows, judged)
        stale = stale_upstreams(snapshot, self.settings.stale_after)
        cache: dict[SeriesKey, tuple[object, Owner]] = {}
        for series in snapshot.series:
            is_stale = series.key.upstream in stale
            fingerprint = (series.lifetime, series.windows, series.config, series.memory, is_stale)
            cached = self._cache.get(series.key)
            if cached is None or cached[0] != fingerprint:
                lines = Lines()
                labels = _series_labels(series.key)
                self._counters(series, labels, lines.add)
                if not is_stale and judged is not None:
                    self._windowed(series, labels, windows, judged, exposed, lines.add, lines.info)
                cached = (fingerprint, lines.pieces())
                self.rendered_series += 1
            cache[series.key] = cached
        self._cache = cache  # series dropped from the store leave the cache too
        sources: dict[str, tuple[SourceSnapshot, Owner]] = {}
        for source in snapshot.sources:
            kept = self._sources.get(source.upstream)
            if kept is None or kept[0] != source:
                lines = Lines()
                self._source_metrics(source, lines.add, lines.info)
                kept = (source, lines.pieces())
            sources[source.upstream] = kept
        self._sources = sources
        rest = self._rest_of(snapshot, stale)
        if {name: piece.text for name, piece in rest.items()} != {name: piece.text for name, piece in self._rest.items()}:
            self._rest = rest  # else the old object stays, so an unchanged body is recognised by identity
        return [*(owner for _, owner in cache.values()), self._rest, *(owner for _, owner in sources.values())]

    def _rest_of(self, snapshot: Snapshot, stale: set[str]) -> Owner:
        """What belongs to no one series or source: build info, sampled values, configs, cross-checks."""
        shared = Lines()
        shared.info(names.BUILD_INFO, {"version": __version__, "python_version": platform.python_version()})
        for sample in snapshot.samples:
            if sample.key.upstream in stale:
                continue
            labels = _series_labels(sample.key)
            for name, value in sample.values:
                spec = _SAMPLED.get(name)
                if spec is not None:
                    shared.add(spec, labels, value)
            shared.add(names.SAMPLED_TIMESTAMP, labels, sample.at)
        configs = tuple((series.key.upstream, series.key.model_name, series.config) for series in snapshot.series)
        if configs != self._configs[0]:
            lines = Lines()
            self._config_info(snapshot, lines.info)
            self._configs = (configs, lines.by_family.get(names.INFO.name, []))
        shared.by_family[names.INFO.name] = self._configs[1]
        self._cross_check(snapshot, shared.add)
        shared.add(names.SERIES_DROPPED, [], snapshot.series_dropped)
        return shared.pieces()

    @staticmethod
    def _counters(series: SeriesSnapshot, labels: list[str], add: Add) -> None:
        life = series.lifetime
        add(names.DRAFT_TOKENS, labels, life.draft_tokens)
        add(names.ACCEPTED_TOKENS, labels, life.accepted_tokens)
        if life.known_drafts is not None:
            add(names.DRAFTS, labels, life.known_drafts)
        for position, count in enumerate(life.accepted_per_position):
            add(names.ACCEPTED_PER_POSITION, [*labels, str(position)], count)
        for position, count in enumerate(life.draft_tokens_per_position):
            add(names.DRAFT_TOKENS_PER_POSITION, [*labels, str(position)], count)

    def _windowed(
        self, series: SeriesSnapshot, labels: list[str], windows: list[str], judged: str, exposed: list[str], add: Add, info: Info
    ) -> None:
        cost = self.settings.cost_for(series.config.method, series.key.model_name)
        for name in windows:
            if name != judged and name not in exposed:
                continue
            # only the judged window needs a baseline and a verdict; the others just derive
            assessment = assess(series, self.settings, name) if name == judged else None
            derived = assessment.derived if assessment else derive(series.windows[name], cost)
            if derived is not None and name in exposed:
                _window_gauges(derived, [*labels, name], add, self.exposition)
            if assessment is not None:
                state = assessment.verdict.state
                for candidate in STATES:
                    add(names.HEALTH, [*labels, candidate], 1.0 if candidate == state else 0.0)
                info(names.VERDICT_INFO, {**dict(zip(names.SERIES_LABELS, labels, strict=False)), "state": state, "reason": assessment.verdict.reason})
                _memory_gauges(series, state, labels, add)

    @staticmethod
    def _config_info(snapshot: Snapshot, info: Callable[[names.MetricSpec, dict[str, str]], None]) -> None:
        seen = set()
        for series in snapshot.series:
            config = series.config
            key = (series.key.upstream, series.key.model_name)
            if key in seen or (config.method is None and config.num_speculative_tokens is None):
                continue
            seen.add(key)
            info(
                names.INFO,
                {
                    "upstream": clean(series.key.upstream),
                    "model_name": clean(series.key.model_name),
                    "method": clean(config.method or ""),
                    "num_speculative_tokens": str(config.num_speculative_tokens or ""),
                    "draft_model": clean(config.draft_model or ""),
                    "server_version": clean(config.server_version or ""),
                },
            )

    def _cross_check(self, snapshot: Snapshot, add: Add) -> None:
        for gap in cross_check(snapshot, self.store.pairs):
            labels = [clean(gap.reference_upstream), clean(gap.compared_upstream), clean(gap.model_name), clean(gap.engine), gap.window, gap.quantity]
            add(names.DISAGREEMENT, labels, gap.relative_difference)

    @staticmethod
    def _source_metrics(source: SourceSnapshot, add: Add, info: Callable[[names.MetricSpec, dict[str, str]], None]) -> None:
        upstream = clean(source.upstream)
        add(names.SOURCE_UP, [source.kind, upstream], 1.0 if source.up else 0.0)
        if source.last_success is not None:
            add(names.SOURCE_LAST_SUCCESS, [source.kind, upstream], source.last_success)
        add(names.SERVER_RESTARTS, [upstream], source.resets)
        if source.kind == "metrics":
            if source.scrape_duration is not None:
                add(names.SCRAPE_DURATION, [upstream], source.scrape_duration)
            for reason, count in sorted(source.problems.items()):
                add(names.SCRAPE_ERRORS, [upstream, reason], count)
            info(names.TARGET_INFO, {"upstream": upstream, **{k: clean(v) for k, v in sorted(source.extra_labels.items()) if k != "upstream"}})
            return
        add(names.LOG_LINES, [upstream], source.lines)
        for variant, count in sorted(source.variants.items()):
            add(names.LOG_SPEC_LINES, [upstream, variant], count)
        for reason, count in sorted(source.problems.items()):
            add(names.LOG_PARSE_ERRORS, [upstream, reason], count)
        if source.last_spec_line is not None:
            add(names.LAST_SPEC_LINE, [upstream], source.last_spec_line)
        add(names.LOG_ROTATIONS, [upstream], source.rotations)
        add(names.LOG_TRUNCATIONS, [upstream], source.truncations)


def _memory_gauges(series: SeriesSnapshot, state: str, labels: list[str], add: Add) -> None:
    """When the current health began, and the reference it is judged against (once it judges)."""
    since = health_since(series.memory, state)
    if since is not None:
        add(names.HEALTH_SINCE, labels, since)
    if series.memory is None or series.reference_rule is None:
        return
    reference = series.memory.ready(series.reference_rule)
    if reference is None or reference.mean_acceptance_length is None:
        return
    add(names.REFERENCE_MEAN_ACCEPTANCE_LENGTH, labels, reference.mean_acceptance_length)
    for position, rate in enumerate(reference.position_acceptance):
        add(names.REFERENCE_POSITION_ACCEPTANCE, [*labels, str(position)], rate)


_SAMPLED = {
    "mean_acceptance_length": names.SAMPLED_MEAN_ACCEPTANCE_LENGTH,
    "draft_acceptance_ratio": names.SAMPLED_DRAFT_ACCEPTANCE_RATIO,
    "system_efficiency_ratio": names.SAMPLED_SYSTEM_EFFICIENCY,
    "num_draft_tokens": names.SAMPLED_NUM_DRAFT_TOKENS,
}


def speedup_candidates(derived: Derived, every: bool) -> list[int]:
    """The k whose expected speed-up is exported: all of 0..k, or the recommended and the running one."""
    if every:
        return list(range(len(derived.speedup)))
    running = derived.num_speculative_tokens if derived.num_speculative_tokens is not None else len(derived.speedup) - 1
    chosen = {running, derived.recommended_speculative_tokens}
    return sorted(k for k in chosen if k is not None and 0 <= k < len(derived.speedup))


def _window_gauges(derived: Derived, w: list[str], add: Add, exposition: ExpositionSettings) -> None:
    if derived.draft_acceptance_ratio is not None:
        add(names.DRAFT_ACCEPTANCE_RATIO, w, derived.draft_acceptance_ratio)
    if derived.seconds:
        add(names.WASTED_TOKENS_RATE, w, derived.wasted_draft_tokens / derived.seconds)
    if derived.mean_acceptance_length is None:
        return
    add(names.MEAN_ACCEPTANCE_LENGTH, w, derived.mean_acceptance_length)
    if derived.mean_draft_length is not None:
        add(names.MEAN_DRAFT_LENGTH, w, derived.mean_draft_length)
    for position, rate in enumerate(derived.position_acceptance):
        add(names.POSITION_ACCEPTANCE, [*w, str(position)], rate)
    if exposition.conditional:  # else the recording rules compute it from the per-position counters
        for position, conditional in enumerate(derived.conditional_acceptance):
            if conditional is not None:
                add(names.POSITION_CONDITIONAL, [*w, str(position)], conditional)
    if derived.recommended_speculative_tokens is not None:
        add(names.RECOMMENDED_K, w, derived.recommended_speculative_tokens)
    for k in speedup_candidates(derived, exposition.speedup_all):
        add(names.EXPECTED_SPEEDUP, [*w, str(k)], derived.speedup[k])
