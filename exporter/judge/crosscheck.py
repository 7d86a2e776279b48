"""Two sources of the same server: how far do they disagree on L and α over the same window?

The real case behind this product trusted log numbers blindly. When one server is read two ways
(a pair of upstreams: log path, /metrics target, plugin directory), each (model_name, engine)
series of the pair is compared window by window against the *reference*, the more exact side:
plugin records (exact per interval) over /metrics counters (exact totals) over the log
(reconstructed from rounded numbers). A disagreement beyond the reconstruction bound points at a
parsing or attribution problem — or at two different servers paired by mistake.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from exporter.judge.derive import Derived, derive
from exporter.state.snapshot import SeriesSnapshot, Snapshot

AGREEMENT_TOLERANCE = 0.05  # relative difference under which the two sources are said to agree
EXACTNESS = {"plugin": 0, "metrics": 1, "log": 2}  # lower is more exact: the reference of a pair


@dataclass(frozen=True, slots=True)
class Disagreement:
    reference_upstream: str
    compared_upstream: str
    reference_source: str  # "plugin" | "metrics" | "log"
    compared_source: str
    model_name: str
    engine: str
    window: str
    quantity: str  # "mean_acceptance_length" | "draft_acceptance_ratio"
    reference_value: float
    compared_value: float

    @property
    def relative_difference(self) -> float:
        return abs(self.compared_value - self.reference_value) / self.reference_value if self.reference_value else 0.0

    @property
    def agree(self) -> bool:
        return self.relative_difference <= AGREEMENT_TOLERANCE


def _quantities(derived: Derived) -> dict[str, float | None]:
    return {"mean_acceptance_length": derived.mean_acceptance_length, "draft_acceptance_ratio": derived.draft_acceptance_ratio}


def _ordered(a: SeriesSnapshot, b: SeriesSnapshot) -> tuple[SeriesSnapshot, SeriesSnapshot]:
    """(reference, compared): the more exact source first."""
    return (a, b) if EXACTNESS.get(a.key.source, 9) <= EXACTNESS.get(b.key.source, 9) else (b, a)


def cross_check(snapshot: Snapshot, pairs: Iterable[tuple[str, str]]) -> list[Disagreement]:
    """Compare the series of every paired upstream over every window both have data in."""
    by_upstream: dict[str, dict[tuple[str, str], SeriesSnapshot]] = {}
    for series in snapshot.series:
        by_upstream.setdefault(series.key.upstream, {})[(series.key.model_name, series.key.engine)] = series
    results = []
    for first, second in sorted(set(pairs)):
        mine, theirs = by_upstream.get(first, {}), by_upstream.get(second, {})
        for model_engine in sorted(mine.keys() & theirs.keys()):
            reference, compared = _ordered(mine[model_engine], theirs[model_engine])
            for window, totals in reference.windows.items():
                other = compared.windows.get(window)
                from_reference, from_compared = derive(totals), derive(other) if other is not None else None
                if from_reference is None or from_compared is None:
                    continue
                compared_values = _quantities(from_compared)
                for quantity, reference_value in _quantities(from_reference).items():
                    compared_value = compared_values[quantity]
                    if reference_value is None or compared_value is None:
                        continue
                    results.append(
                        Disagreement(
                            reference.key.upstream, compared.key.upstream, reference.key.source, compared.key.source,
                            *model_engine, window, quantity, reference_value, compared_value,
                        )
                    )
    return results
