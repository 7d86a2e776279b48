"""`analyze --plot FILE.png`: the status page's acceptance curve, drawn with matplotlib for reports.

matplotlib is an optional extra (`pip install 'specdecode-exporter[plot]'`): the sidecar never needs it.
"""

from __future__ import annotations

import logging
import time
from typing import Any


def _spans(axis: Any, entry: dict[str, Any]) -> None:
    """The log's time as a strip, its degraded and broken spans shaded (hours from the first line)."""
    start, end = entry.get("start"), entry.get("end")
    axis.set_yticks([])
    if start is None or end is None or end <= start:
        axis.set_visible(False)
        return
    for span in entry.get("unhealthy_spans", []):
        stop = span["end"] if span["end"] is not None else end
        colour = "#b91c1c" if span["worst"] == "broken" else "#c2410c"
        axis.axvspan((span["start"] - start) / 3600, (stop - start) / 3600, color=colour, alpha=0.6, label=span["worst"])
    axis.set_xlim(0, (end - start) / 3600)
    axis.set_xlabel(f"hours since {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(start))} (shaded: degraded or broken)", fontsize=8)


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
    figure, axes = plt.subplots(
        2 * len(series), 1, figsize=(8, 4.0 * len(series)), squeeze=False, gridspec_kw={"height_ratios": [5, 1] * len(series)}
    )
    for index, entry in enumerate(series):
        axis = axes[2 * index, 0]
        _spans(axes[2 * index + 1, 0], entry)
        now = entry.get("current_period") or entry  # the curve of what is true now, as the verdict and its advice
        if not now["position_acceptance"]:
            now = entry
        rates = now["position_acceptance"]
        conditional = [c if c is not None else 0.0 for c in now["conditional_acceptance"]]
        positions = list(range(len(rates)))
        axis.bar([p - 0.2 for p in positions], rates, width=0.4, label="reached position i", color="#2563eb")
        axis.bar([p + 0.2 for p in positions], conditional, width=0.4, label="accepted given i−1", color="#93c5fd")
        reference = entry.get("reference") or {}
        if reference.get("ready"):
            axis.hlines(reference["position_acceptance"], [p - 0.42 for p in positions[: len(reference["position_acceptance"])]],
                        [p + 0.42 for p in positions[: len(reference["position_acceptance"])]], colors="#111827", linewidth=1.5,
                        label=f"reference (L = {reference['mean_acceptance_length']:.2f})")
        best = now["recommended_speculative_tokens"]
        if best is not None:
            axis.axvline(best - 0.5, color="#b45309", linestyle="--", label=f"recommended k = {best}")
        length = now["mean_acceptance_length"]
        since = entry.get("health_since")
        when = f" since {time.strftime('%m-%d %H:%M UTC', time.gmtime(since))}" if since is not None else ""
        shown = f"L = {length:.2f}" if length is not None else "L unknown"
        axis.set_title(f"{entry['model_name']} · engine {entry['engine']} · {shown} · {entry['health']}{when}", fontsize=10)
        axis.set_xlabel("draft position")
        axis.set_ylabel("acceptance")
        axis.set_ylim(0, 1)
        axis.set_xticks(positions)
        axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=4, frameon=False)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return len(series)
