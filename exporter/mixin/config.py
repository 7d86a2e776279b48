"""The one config block the rules, alerts and dashboards are generated from.

Every threshold and duration lives here, with why it has its value. Tests render the same
generators with a fast config (short windows and `for:` durations) instead of keeping copies.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MixinConfig:
    # Label selectors added to every raw vLLM / sidecar metric, e.g. 'job="vllm"'. Empty: all.
    vllm_selector: str = ""
    sidecar_selector: str = ""
    # Rate window of the recording rules: long enough to hold several of vLLM's 10 s log intervals
    # and several scrapes, short enough that a drop-off shows within minutes.
    rate_window: str = "5m"
    # The drop-off alert compares the last rate window against the series' own earlier baseline:
    # acceptance over `baseline_window`, ending `baseline_offset` ago (so the drop is not in it).
    baseline_window: str = "1h"
    baseline_offset: str = "15m"
    # How often Prometheus evaluates the groups.
    evaluation_interval: str = "30s"
    # Traffic floor: no acceptance alert for a server drafting less than this many drafts per second,
    # so idle or nearly idle servers never alert on noise.
    min_drafts_per_second: float = 0.5
    # SpecDecodeAcceptanceLengthLow: below this L a drafter rarely pays for itself.
    acceptance_length_floor: float = 1.5
    # SpecDecodeAcceptanceDropped: L − 1 fell by more than this fraction against the baseline.
    relative_drop: float = 0.3
    # SpecDecodePositionZeroCollapse: position 0 at most this and L at most the next value is the
    # misconfigured-drafter signature (the real case: 11% and L 1.1).
    collapse_position0: float = 0.25
    collapse_acceptance_length: float = 1.3
    # SpecDecodeWastedPositions: a drafted position accepted in fewer drafts than this costs more
    # than it returns for any common drafter (a draft token costs 1–10% of a target step).
    wasted_position_acceptance: float = 0.05
    # SpecDecodeSourcesDisagree: log-derived and counted L differ by more than this fraction …
    disagreement: float = 0.1
    # … over this sidecar window (the longest by default: short windows start at different moments).
    disagreement_window: str = "1h"
    # SpecDecodeLogStale: no spec line for this long while the same sidecar sees drafts in /metrics.
    log_stale: str = "10m"
    # `for:` durations: how long a condition must hold before it alerts.
    for_short: str = "5m"
    for_medium: str = "10m"
    for_long: str = "1h"
    # Conditional per-position rules are generated for positions below this (DFlash drafts 15).
    max_positions: int = 16
    # Where the runbook lives; each alert links to its section.
    runbook_url: str = "docs/runbook.md"


DEFAULT = MixinConfig()


# The compose and Kubernetes demos: hours become minutes so the drop-off alert fires within ~10
# minutes of the simulator's drop. Record names keep the 5m rate window, so dashboards are shared.
DEMO = MixinConfig(
    baseline_window="5m",
    baseline_offset="1m",
    evaluation_interval="15s",
    for_short="1m",
    for_medium="1m",
    for_long="2m",
    disagreement_window="5m",
)
