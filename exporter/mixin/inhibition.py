"""Alertmanager's side: the inhibition the alerts need, and the compose demo's whole alertmanager.yml.

One list of inhibit rules, written twice: into alertmanager.yml (a plain Alertmanager) and, as an
AlertmanagerConfig, for an operator-managed one (kubernetes.py; the operator adds the
AlertmanagerConfig's namespace to both sides of each rule). They follow the alerts' ranks
(alerts.Rank): a ranked alert inhibits every lower-ranked one of the same server — namespace, pod,
model and engine — so a broken drafter on one pod never silences another pod's drop. The rules
themselves already hold a lower alert back while a higher one is pending or firing; these
rules keep one that fired first (a slow decline, then a collapse) from paging again beside it.
"""

from __future__ import annotations

from typing import Any

from exporter.mixin.alerts import ranks
from exporter.mixin.config import MixinConfig
from exporter.mixin.scope import incident_labels


def inhibit_rules(config: MixinConfig) -> list[dict[str, Any]]:
    """One rule per ranked alert that has lower-ranked ones: it inhibits them all on the same server."""
    ranked = sorted(ranks(config).items(), key=lambda item: -item[1])
    rules = []
    for name, rank in ranked:
        lower = [other for other, other_rank in ranked if other_rank < rank]
        if lower:
            rules.append({
                "source_matchers": [f'alertname="{name}"'],
                "target_matchers": [f'alertname=~"{"|".join(lower)}"'],
                "equal": list(incident_labels(config)),
            })
    return rules


def alertmanager_file(config: MixinConfig) -> dict[str, Any]:
    """The compose demo's Alertmanager: one route (replace the placeholder receiver) and the inhibition."""
    return {
        "route": {
            "receiver": "default",
            "group_by": ["alertname", *config.topology_labels, "instance", "model_name"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
            "routes": [{"matchers": ['severity="info"'], "receiver": "default", "repeat_interval": "24h"}],
        },
        "receivers": [
            # a placeholder: point it at a real receiver
            {"name": "default", "webhook_configs": [{"url": "http://127.0.0.1:9099/alerts", "send_resolved": True}]},
        ],
        "inhibit_rules": inhibit_rules(config),
    }
