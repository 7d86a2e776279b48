"""What leaves the state stage: immutable snapshots of every series and source, one per read.

The exporter, the status API and analyze each read one Snapshot, so a scrape sees one consistent state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from exporter.records import SampledValues, SeriesKey, SpecConfig
from exporter.state.load import LoadProfile
from exporter.state.reference import ReferenceRule, SeriesMemory, SpecIdentity
from exporter.state.trace import Stretch
from exporter.state.window import Totals


@dataclass(frozen=True, slots=True)
class SeriesSnapshot:
    key: SeriesKey
    lifetime: Totals
    windows: Mapping[str, Totals]
    config: SpecConfig
    last_update: float
    variant: str  # the log layout (or source format) most of this series' data came in
    timeline: tuple[tuple[float, float], ...] = ()  # (end, L) of recent intervals, when asked for
    memory: SeriesMemory | None = None  # the reference and health history (None: the store keeps none)
    recent: Totals | None = None  # the judged window as of the series' last interval (its own clock)
    reference_rule: ReferenceRule | None = None
    # each window's length, typed once where the flags are read: stages never parse a window's name
    window_seconds: Mapping[str, float] = field(default_factory=dict)
    # the lifetime cut where the speculative config changed (a restart with another k): each run's own totals
    runs: tuple[tuple[SpecIdentity, Totals], ...] = ()
    load: LoadProfile = field(default_factory=LoadProfile)  # the current run's steady intervals by load band: what the pay-off estimate reads
    trace: tuple[Stretch, ...] | None = None  # its stretches (state/trace.py), where the store keeps them: analyze


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
    last_spec_line_logged: float | None = None
    log_zone: str | None = None
    log_utc_offset: float | None = None
    log_zone_from: str | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    taken_at: float
    series: tuple[SeriesSnapshot, ...]
    sources: tuple[SourceSnapshot, ...]
    series_dropped: int
    samples: tuple[SampledValues, ...] = ()
    window_seconds: Mapping[str, float] = field(default_factory=dict)  # each window's length


def series_order(key: SeriesKey) -> tuple[str, str, int, str, str]:
    """How snapshots list series: by upstream, model, then engine in numeric order."""
    engine = int(key.engine) if key.engine.isdigit() else 1 << 30
    return (key.upstream, key.model_name, engine, key.engine, key.source)


def merged(snapshots: list[Snapshot]) -> Snapshot:
    """One snapshot of several stores that share no upstream (analyze's files read in parallel),
    listed as one store holding them all would list them."""
    return Snapshot(
        taken_at=max(s.taken_at for s in snapshots),
        series=tuple(sorted((series for s in snapshots for series in s.series), key=lambda series: series_order(series.key))),
        sources=tuple(sorted((source for s in snapshots for source in s.sources), key=lambda source: source.upstream)),
        series_dropped=sum(s.series_dropped for s in snapshots),
        samples=tuple(sorted((sample for s in snapshots for sample in s.samples), key=lambda sample: series_order(sample.key))),
        window_seconds=snapshots[0].window_seconds if snapshots else {},
    )
