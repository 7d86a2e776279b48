"""Alertmanager's side: the inhibition the alerts need, and the compose demo's whole alertmanager.yml.

One list of inhibit rules, written twice: into alertmanager.yml (a plain Alertmanager) and, as an
AlertmanagerConfig, for an operator-managed one (kubernetes.py). Both match on the topology labels,
so a broken drafter on one pod never silences another pod's drop.
"""

from __future__ import annotations

from typing import Any

from exporter.mixin.config import MixinConfig
from exporter.mixin.counters import server_labels


def inhibit_rules(config: MixinConfig) -> list[dict[str, Any]]:
    return [
        # a broken drafter explains its low acceptance length: page once
        {
            "source_matchers": ['alertname="SpecDecodePositionZeroCollapse"'],
            "target_matchers": ['alertname=~"SpecDecodeAcceptanceLengthLow|SpecDecodeAcceptanceDropped"'],
            "equal": [*server_labels(config), "model_name", "engine"],
        },
    ]


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
