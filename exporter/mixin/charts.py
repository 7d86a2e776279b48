"""The chart's half of the integration: Helm values that turn on a chart's own vLLM monitor and give
it the labels the monitoring stack selects our PodMonitor and PrometheusRule by (monitor_labels).

production-stack and llm-d scrape vLLM with their own ServiceMonitor / PodMonitor, which carry no
selecting label by default (`servingEngineSpec.serviceMonitor.additionalLabels: {}`,
`decode.monitoring.podmonitor.labels: {}`), while kube-prometheus-stack selects monitors by
`release`: without these values the sidecar is scraped and vLLM is not. The templates these paths
come from are kept, with their sources, in tests/golden/charts/ (tests/test_stack_selection.py).
"""

from __future__ import annotations

from typing import Any

from exporter.mixin.config import MixinConfig

# chart → (path of its vLLM monitor's values, the key of that monitor's extra labels)
MONITOR_VALUES: dict[str, tuple[tuple[str, ...], str]] = {
    # vllm-project/production-stack helm/templates/servicemonitor-engine.yaml
    "production-stack": (("servingEngineSpec", "serviceMonitor"), "additionalLabels"),
    # llm-d-incubation/llm-d-modelservice charts/llm-d-modelservice/templates/decode-podmonitor.yaml
    "llm-d": (("decode", "monitoring", "podmonitor"), "labels"),
}


def chart_values(config: MixinConfig) -> dict[str, Any]:
    """`helm upgrade … -f chart-values.yaml`: the chart's monitor on, labelled as the stack selects ours."""
    path, labels_key = MONITOR_VALUES[config.chart]
    values: dict[str, Any] = {"enabled": True, labels_key: dict(config.monitor_labels)}
    for key in reversed(path):
        values = {key: values}
    return values
