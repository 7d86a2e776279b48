"""The server's load beside its acceptance: what the pay-off estimate (judge/payoff.py) reads.

A stats line (or a scrape's gauges and counters) says how many requests were running and how many
tokens the engine emitted; the spec line of the same interval says what speculation drafted and
got accepted. Two sums are kept:
  * `LoadSums` in every window's Totals: the load and the speculation of the intervals that
    printed a load, summed (mean running requests, tokens per second, the share of decode steps
    that speculated — all ratios of these sums);
  * `LoadProfile` per series (the current run: a new speculative config starts a new one): the
    same sums by load band — round(log2(running)), so 1, 2, 4 … 256 running requests each have a
    band — of the intervals whose load was steady (the running count printed at the interval's
    start and at its end fall in the same band). An interval where load moved (a step of traffic,
    a drain) says nothing about the throughput of either load and is left out of the bands.
    Within a band, an interval that ran far slower than the band's usual pace is a stall, left out
    too (`stalled`): a speculating vLLM 0.26 compiles for a batch size the first time it meets one,
    and the request that meets it takes 3 s where the next take 0.4 s (the golden load ladder).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from exporter.records import Interval

if TYPE_CHECKING:
    from exporter.intervals.columns import IntervalColumns


@dataclass(frozen=True, slots=True)
class LoadSums:
    """Σ over the intervals that printed their load (and lasted a known time)."""

    intervals: int = 0
    seconds: float = 0.0
    generated: float = 0.0  # tokens emitted: Σ generation throughput × seconds
    running: float = 0.0  # Σ running × seconds (÷ seconds: the mean running requests)
    drafts: int = 0  # D, A and T of the same intervals, so ratios compare like with like
    accepted: int = 0
    draft_tokens: int = 0
    accepted_per_position: tuple[int, ...] = ()  # kept in the profile's bands only

    def plus(self, seconds: float, generation: float, running: int, interval: Interval | None, sign: int = 1,
             positions: bool = False) -> LoadSums:
        drafts = (interval.drafts or 0) if interval is not None else 0
        return LoadSums(
            intervals=self.intervals + sign,
            seconds=max(0.0, self.seconds + sign * seconds),
            generated=max(0.0, self.generated + sign * generation * seconds),
            running=max(0.0, self.running + sign * running * seconds),
            drafts=self.drafts + sign * drafts,
            accepted=self.accepted + sign * (interval.accepted_tokens if interval is not None else 0),
            draft_tokens=self.draft_tokens + sign * (interval.draft_tokens if interval is not None else 0),
            accepted_per_position=_added(self.accepted_per_position, interval.accepted_per_position, sign)
            if positions and interval is not None else self.accepted_per_position,
        )

    @property
    def mean_running(self) -> float | None:
        return self.running / self.seconds if self.seconds > 0 else None

    @property
    def generation_rate(self) -> float | None:
        """Tokens the engine emitted per second."""
        return self.generated / self.seconds if self.seconds > 0 else None

    @property
    def mean_acceptance_length(self) -> float | None:
        return 1.0 + self.accepted / self.drafts if self.drafts else None

    @property
    def drafted_length(self) -> float | None:
        """T/D: the tokens a draft actually held (k for a fixed-length drafter, less for n-gram, suffix, dynamic k)."""
        return self.draft_tokens / self.drafts if self.drafts else None

    @property
    def speculated_share(self) -> float | None:
        """The share of decode steps that speculated: a step that drafted emitted 1 + its accepted
        tokens, one that did not emitted 1, so steps = emitted − accepted and D of them drafted."""
        steps = self.generated - self.accepted
        return min(1.0, self.drafts / steps) if steps > 0 else None


def _added(left: tuple[int, ...], right: tuple[int, ...], sign: int) -> tuple[int, ...]:
    width = max(len(left), len(right))
    left, right = left + (0,) * (width - len(left)), right + (0,) * (width - len(right))
    return tuple(map(operator.add if sign > 0 else operator.sub, left, right))


def load_of(interval: Interval) -> tuple[float, float, int] | None:
    """(seconds, generation throughput, running) of an interval that printed its load, else None."""
    if interval.running is None or interval.generation_throughput is None or not interval.seconds or interval.seconds <= 0:
        return None
    return interval.seconds, interval.generation_throughput, interval.running


NO_PACE = -1024  # the pace of an interval that emitted nothing
STALL_PACES = 1  # how many paces under the band's median pace an interval may run before it is a stall


def pace_of(generation: float, running: float) -> int:
    """floor(log2(tokens per second per running request)): an interval's pace, in powers of two."""
    per_request = generation / running if running > 0 else 0.0
    return math.floor(math.log2(per_request)) if per_request > 0 else NO_PACE


def stalled(weights: Mapping[int, float]) -> frozenset[int]:
    """The paces of one band that are stalls: more than STALL_PACES under the pace that holds the band's
    median (by `weights`: seconds, or intervals) — under a quarter to a half of its usual tokens per
    second per request. A compile on first sight of a batch size, a pause: not the throughput of the load."""
    total = sum(weights.values())
    seen = 0.0
    for pace in sorted(weights):
        seen += weights[pace]
        if seen >= total / 2:
            return frozenset(p for p in weights if p < pace - STALL_PACES)
    return frozenset()


def band_of(running: int) -> int | None:
    """The load band of a running count: round(log2(running)); None for an idle engine."""
    return round(math.log2(running)) if running >= 1 else None


def steady_band(interval: Interval) -> int | None:
    """The interval's band if its load held across it (same band at its start and end), else None."""
    if interval.running is None or interval.running_before is None:
        return None
    band = band_of(interval.running)
    return band if band is not None and band == band_of(interval.running_before) else None


@dataclass(frozen=True, slots=True)
class LoadProfile:
    """A series' steady intervals summed by load band and pace: ((band, pace), sums) in order. `bands`
    gives each band's sums without its stalls."""

    cells: tuple[tuple[tuple[int, int], LoadSums], ...] = ()

    @property
    def bands(self) -> tuple[tuple[int, LoadSums], ...]:
        by_band: dict[int, dict[int, LoadSums]] = {}
        for (band, pace), sums in self.cells:
            by_band.setdefault(band, {})[pace] = sums
        out = []
        for band, paces in sorted(by_band.items()):
            drop = stalled({pace: sums.seconds for pace, sums in paces.items()})
            kept = LoadSums()
            for pace in sorted(paces):
                if pace not in drop:
                    kept = combined(kept, paces[pace])
            out.append((band, kept))
        return tuple(out)

    def plus(self, interval: Interval) -> LoadProfile:
        load = load_of(interval)
        band = steady_band(interval) if load is not None else None
        if load is None or band is None:
            return self
        _, generation, running = load
        key = (band, pace_of(generation, running))
        table = dict(self.cells)
        table[key] = table.get(key, LoadSums()).plus(*load, interval, positions=True)
        return LoadProfile(tuple(sorted(table.items())))

    def plus_columns(self, columns: IntervalColumns) -> LoadProfile:
        """plus() for each row of `columns`, the cells summed at once."""
        import numpy as np  # the batch path only

        running, before = columns.running, columns.running_before
        with np.errstate(divide="ignore", invalid="ignore"):
            band = np.where(running >= 1, np.round(np.log2(np.maximum(running, 1))), np.nan)
            band_before = np.where(before >= 1, np.round(np.log2(np.maximum(before, 1))), np.nan)
            pace = np.floor(np.log2(columns.generation / np.maximum(running, 1)))  # -inf where nothing was emitted
        seconds = columns.seconds
        usable = (band == band_before) & ~np.isnan(columns.generation) & ~np.isnan(seconds) & (seconds > 0)
        if not usable.any():
            return self
        rows_of = np.flatnonzero(usable)
        pace = np.where(np.isfinite(pace), pace, NO_PACE)
        cells, cell_of = np.unique(np.stack([band[rows_of], pace[rows_of]], axis=1), axis=0, return_inverse=True)
        table = dict(self.cells)
        for i, (value, speed) in enumerate(cells.tolist()):
            rows = rows_of[cell_of.reshape(-1) == i]
            s = seconds[rows]
            k = int(columns.ks[rows].max())
            add = LoadSums(intervals=len(rows), seconds=float(s.sum()), generated=float((columns.generation[rows] * s).sum()),
                           running=float((running[rows] * s).sum()), drafts=int(columns.drafts[rows].sum()),
                           accepted=int(columns.accepted[rows].sum()), draft_tokens=int(columns.draft_tokens[rows].sum()),
                           accepted_per_position=tuple(columns.positions[rows, :k].sum(axis=0).tolist()))
            key = (int(value), int(speed))
            table[key] = combined(table.get(key, LoadSums()), add)
        return LoadProfile(tuple(sorted(table.items())))


def combined(left: LoadSums, right: LoadSums, sign: int = 1) -> LoadSums:
    """left ± right (the float sums clamped at 0, as LoadSums.plus clamps them)."""
    return replace(
        left,
        intervals=left.intervals + sign * right.intervals, seconds=max(0.0, left.seconds + sign * right.seconds),
        generated=max(0.0, left.generated + sign * right.generated), running=max(0.0, left.running + sign * right.running),
        drafts=left.drafts + sign * right.drafts, accepted=left.accepted + sign * right.accepted,
        draft_tokens=left.draft_tokens + sign * right.draft_tokens,
        accepted_per_position=_added(left.accepted_per_position, right.accepted_per_position, sign),
    )


def with_interval(sums: LoadSums, interval: Interval) -> LoadSums:
    """`sums` plus one interval's load, if it printed one (what Totals.plus adds)."""
    found = load_of(interval)
    return sums if found is None else sums.plus(*found, interval)


def columns_load(sums: LoadSums, columns: IntervalColumns) -> LoadSums:
    """`sums` plus the rows of `columns` that printed a load: LoadSums.plus for each in turn, at once
    (the float sums added left to right, as the loop adds them, so both give the same numbers)."""
    import numpy as np

    seconds = columns.seconds
    usable = (columns.running >= 0) & ~np.isnan(columns.generation) & ~np.isnan(seconds) & (seconds > 0)
    if not usable.any():
        return sums
    s = seconds[usable]

    def after(start: float, values: np.ndarray) -> float:
        return float(np.add.accumulate(np.concatenate(([start], values)))[-1])

    return replace(
        sums, intervals=sums.intervals + int(usable.sum()), seconds=after(sums.seconds, s),
        generated=after(sums.generated, columns.generation[usable] * s), running=after(sums.running, columns.running[usable] * s),
        drafts=sums.drafts + int(columns.drafts[usable].sum()), accepted=sums.accepted + int(columns.accepted[usable].sum()),
        draft_tokens=sums.draft_tokens + int(columns.draft_tokens[usable].sum()),
    )
