"""The monitoring mixin: Prometheus recording and alert rules, Grafana dashboards, Kubernetes manifests.

Generated from code by `scripts/generate` (the output is committed; a test fails on drift). Metric
names come from exporter.metric_names, so a renamed metric cannot leave a panel querying nothing.
May import: exporter.metric_names and itself only.
"""
