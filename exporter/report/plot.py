"""`analyze --plot FILE.png`: the status page's acceptance curve, drawn with matplotlib for reports.

matplotlib is an optional extra (`pip install 'specdecode-exporter[plot]'`): the sidecar never needs it.
"""

from __future__ import annotations

import logging
from typing import Any


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def plot_report(report: dict[str, Any], path: str) -> int:
    """Draw one panel per series (per-position and conditional bars, recommended k); return panels drawn."""
    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # its font-cache notice is not ours to show
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailable("--plot needs matplotlib: pip install 'specdecode-exporter[plot]'") from None
    series = [s for s in report["series"] if s["position_acceptance"]]
    if not series:
        raise ValueError("nothing to plot: no series with per-position acceptance")
    figure, axes = plt.subplots(len(series), 1, figsize=(8, 3.2 * len(series)), squeeze=False)
    for axis, entry in zip(axes[:, 0], series, strict=True):
        rates = entry["position_acceptance"]
        conditional = [c if c is not None else 0.0 for c in entry["conditional_acceptance"]]
        positions = list(range(len(rates)))
        axis.bar([p - 0.2 for p in positions], rates, width=0.4, label="reached position i", color="#2563eb")
        axis.bar([p + 0.2 for p in positions], conditional, width=0.4, label="accepted given i−1", color="#93c5fd")
        best = entry["recommended_speculative_tokens"]
        if best is not None:
            axis.axvline(best - 0.5, color="#b45309", linestyle="--", label=f"recommended k = {best}")
        length = entry["mean_acceptance_length"]
        axis.set_title(
            f"{entry['model_name']} · engine {entry['engine']} · L = {length:.2f} · {entry['health']}", fontsize=10
        )
        axis.set_xlabel("draft position")
        axis.set_ylabel("acceptance")
        axis.set_ylim(0, 1)
        axis.set_xticks(positions)
        axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=3, frameon=False)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return len(series)
