"""The monitoring mixin: Prometheus recording and alert rules, Grafana dashboards, Kubernetes manifests.

Rendered from one TOML config (defaults.toml, over which a file of the operator's is read) by
`specdecode-exporter mixin`; the repository's copies are committed (`scripts/generate`; a test fails
on drift). Metric names come from exporter.metric_names, so a renamed metric cannot leave a panel
querying nothing. May import: exporter.metric_names, exporter.config (durations, ConfigError) and itself.
"""
