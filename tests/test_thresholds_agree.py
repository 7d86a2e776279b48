"""The shipped alerts and the sidecar's verdict hold one set of health thresholds.

The mixin's defaults (exporter/mixin/defaults.toml) are read by Prometheus operators, the verdict's
(`HealthThresholds`) by the sidecar and `analyze`; they are written in two places because one is a
TOML file for people and one a typed record, so this test is what keeps them one rule.
"""

from exporter.config import HealthThresholds
from exporter.mixin.config import load


def test_the_alerts_and_the_verdict_share_their_thresholds() -> None:
    mixin, verdict = load(), HealthThresholds()
    assert mixin.collapse_acceptance_length == verdict.broken_max_mean_acceptance_length
    assert mixin.collapse_position0 == verdict.broken_max_position0_acceptance
    assert mixin.relative_drop == verdict.degraded_relative_drop
