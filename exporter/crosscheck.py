"""Log vs /metrics of the same server: how far do they disagree on L and α over the same window?

The real case behind this product trusted log numbers blindly. When a server is read both ways
(a log path paired with a scrape target), each (model_name, engine) series of the pair is compared
window by window; the log side is reconstructed, the /metrics side counted, so a disagreement
beyond the reconstruction bound points at a parsing or attribution problem — or at two different
servers paired by mistake.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from exporter.derive import Derived, derive
from exporter.store import SeriesSnapshot, Snapshot

AGREEMENT_TOLERANCE = 0.05  # relative difference under which the two sources are said to agree


@dataclass(frozen=True, slots=True)
class Disagreement:
    metrics_upstream: str
    log_upstream: str
    model_name: str
    engine: str
    window: str
    quantity: str  # "mean_acceptance_length" | "draft_acceptance_ratio"
    log_value: float
    metrics_value: float

    @property
    def relative_difference(self) -> float:
        return abs(self.log_value - self.metrics_value) / self.metrics_value if self.metrics_value else 0.0

    @property
    def agree(self) -> bool:
        return self.relative_difference <= AGREEMENT_TOLERANCE


def _quantities(derived: Derived) -> dict[str, float | None]:
    return {"mean_acceptance_length": derived.mean_acceptance_length, "draft_acceptance_ratio": derived.draft_acceptance_ratio}


def cross_check(snapshot: Snapshot, pairs: Mapping[str, str]) -> list[Disagreement]:
    """Compare every paired (metrics target → log path) series over every window both have data in."""
    by_key: dict[tuple[str, str, str], SeriesSnapshot] = {
        (s.key.upstream, s.key.model_name, s.key.engine): s for s in snapshot.series
    }
    results = []
    for metrics_upstream, log_upstream in sorted(pairs.items()):
        for (upstream, model, engine), metrics_series in sorted(by_key.items()):
            if upstream != metrics_upstream or metrics_series.key.source != "metrics":
                continue
            log_series = by_key.get((log_upstream, model, engine))
            if log_series is None:
                continue
            for window, totals in metrics_series.windows.items():
                from_metrics, from_log = derive(totals), derive(log_series.windows.get(window, totals))
                if from_metrics is None or from_log is None or log_series.windows.get(window) is None:
                    continue
                log_values, metrics_values = _quantities(from_log), _quantities(from_metrics)
                for quantity, metrics_value in metrics_values.items():
                    log_value = log_values[quantity]
                    if metrics_value is None or log_value is None:
                        continue
                    results.append(
                        Disagreement(metrics_upstream, log_upstream, model, engine, window, quantity, log_value, metrics_value)
                    )
    return results
