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
    # Labels (beyond job, instance, model_name, engine) that tell one speculative config from another
    # on raw vLLM series, e.g. a target label `drafter` set from a pod label. vLLM's /metrics names
    # only k (the number of position series); a method or drafter change is invisible without this.
    vllm_config_labels: tuple[str, ...] = ()
    # The drop-off alert compares the current level of each (server, k) with its reference: the best
    # level pooled over `reference_pool` that the same config reached within `reference_hold`
    # (mixin/reference.py says why). A day pools a whole daily traffic mix into one number.
    reference_pool: str = "1d"
    # How long a sustained drop keeps alerting before its level becomes the reference (the hold).
    reference_hold: str = "7d"
    # A config's level becomes a reference once the config has existed this long: its first hour is
    # a sample of its traffic, not of a few requests.
    reference_settle: str = "1h"
    # After a new k appears, its rates are ignored for this long: a rate window that spans the
    # restart mixes the old config's traffic into the new one's level.
    config_change_guard: str = "5m"
    # The reference group runs slower than the rest: its inputs move over hours.
    reference_interval: str = "5m"
    # The long-memory alerts keep firing this long after their condition last held, so a restart's
    # scrape gap (no series, then 5m of guarded rates) does not resolve and re-send them.
    keep_firing_for: str = "15m"
    # The sidecar's judged window (`serve --health-window`): the sidecar-fed drop alert reads it.
    sidecar_judged_window: str = "5m"
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


# The compose and Kubernetes demos: days and hours become minutes so the drop-off alert fires within
# a few minutes of the simulator's drop (at 5 minutes). Record names keep the 5m rate window, so
# dashboards are shared.
DEMO = MixinConfig(
    reference_pool="10m",
    reference_hold="1h",
    reference_settle="2m",
    config_change_guard="30s",
    reference_interval="15s",
    keep_firing_for="2m",
    evaluation_interval="15s",
    for_short="1m",
    for_medium="1m",
    for_long="2m",
    disagreement_window="5m",
)
