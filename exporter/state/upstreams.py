"""One upstream as the store keeps it: its source's last word on health, and the counts of what was read.

Two writers, one each: the source that reads the upstream posts its SourceHealth whole
(sources/, `Store.post_health`); the interval stage's ReadCounts are added to the counts
(`Store.count_read`, through `SourceCounts.plus`). The snapshot is made of the two records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from exporter.records import ReadCounts, SourceHealth
from exporter.state.snapshot import SourceSnapshot
from exporter.vocabulary import LogProblem

TOO_LONG: LogProblem = "line_too_long"  # what a source's over-long lines count as among the problems
RESTARTS_FROM_RESETS = "metrics"  # a scrape source: a restart shows as counters that reset


@dataclass(frozen=True, slots=True)
class SourceCounts:
    """What the interval stage counted in one upstream since start (or since the state dir's last save)."""

    lines: int = 0
    spec_lines: int = 0
    problems: Mapping[str, int] = field(default_factory=dict)
    variants: Mapping[str, int] = field(default_factory=dict)
    last_success: float | None = None  # the last read: lines read, or a body scraped and taken
    last_spec_line: float | None = None
    last_spec_line_logged: float | None = None  # that line's own time: how far behind the live edge the source reads
    resets: int = 0  # server restarts seen (counter resets, startups)
    log_zone: str | None = None  # the zone its local stamps are read in (intervals/clock.py); None: not a log
    log_utc_offset: float | None = None  # that zone's offset now, seconds east of UTC; None: not known yet
    log_zone_from: str | None = None  # flag, file (mtime against the last line), arrival, assumed, not yet learned

    def plus(self, read: ReadCounts, kind: str) -> SourceCounts:
        """These counts with one read added (pure: the store swaps the record under its lock)."""
        zone = read.zone or (self.log_zone, self.log_utc_offset, self.log_zone_from)
        resets = self.resets
        if read.restarts is not None:
            # a scrape's count is its deltas' own since the sidecar started; a log's never goes below
            # what the state dir restored (both as they were before the split)
            resets = read.restarts if kind == RESTARTS_FROM_RESETS else max(self.resets, read.restarts)
        return SourceCounts(
            lines=self.lines + read.lines,
            spec_lines=self.spec_lines + read.spec_lines,
            problems=added(self.problems, read.problems) if read.problems else self.problems,
            variants=added(self.variants, read.variants) if read.variants else self.variants,
            last_success=self.last_success if read.read_at is None else read.read_at,
            last_spec_line=read.read_at if read.read_at is not None and read.spec_lines else self.last_spec_line,
            last_spec_line_logged=self.last_spec_line_logged if read.logged is None else read.logged,
            resets=resets,
            log_zone=zone[0], log_utc_offset=zone[1], log_zone_from=zone[2],
        )

    def continued(self, saved: SourceCounts) -> SourceCounts:
        """These counts continuing those an earlier run saved (the state dir's, read at start)."""
        return dataclasses.replace(self, lines=saved.lines, spec_lines=saved.spec_lines, resets=saved.resets,
                                   problems=added(self.problems, saved.problems), variants=added(self.variants, saved.variants))


def added(counts: Mapping[str, int], more: Mapping[str, int]) -> dict[str, int]:
    """Two name → count mappings summed, the first's names first (a new dict: records stay immutable)."""
    total = dict(counts)
    for name, count in more.items():
        total[name] = total.get(name, 0) + count
    return total


@dataclass(frozen=True, slots=True)
class Upstream:
    """One upstream in the store: its kind (fixed by whoever names it first), health and counts."""

    kind: str
    health: SourceHealth | None = None  # None: no source has posted (a pipeline fed directly: analyze, tests)
    counts: SourceCounts = field(default_factory=SourceCounts)

    def snapshot(self, upstream: str) -> SourceSnapshot:
        """The snapshot of this upstream, made of its two records."""
        health = self.health or SourceHealth()
        problems = added(self.counts.problems, health.failures)
        if health.too_long:
            problems = added(problems, {TOO_LONG: health.too_long})
        counted = {name.name: getattr(self.counts, name.name) for name in dataclasses.fields(SourceCounts)}
        return SourceSnapshot(
            upstream=upstream,
            kind=self.kind,
            # what the source said; with none behind a pipeline, up once read from (as a source would say)
            up=health.up if self.health is not None else self.counts.last_success is not None,
            rotations=health.rotations,
            truncations=health.truncations,
            scrape_duration=health.scrape_duration,
            last_error=health.last_error,
            extra_labels=health.extra_labels,
            **{**counted, "problems": problems},
        )
