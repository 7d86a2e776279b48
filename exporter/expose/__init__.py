"""Expose: what the sidecar serves — /metrics text, /api/v1/status, the status page, web security.

Enters: Snapshots from state and judgements from judge.
Leaves: HTTP responses (Prometheus text 0.0.4, JSON, HTML/JS/CSS from web/).
May import: judge, state, config, records, metric_names. Never report or cli.
"""
