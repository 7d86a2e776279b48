"""Alert rules. Acceptance alerts read the raw-vLLM recording rules (they work with no sidecar);
source health, staleness and disagreement read the sidecar's own metrics. Every acceptance alert
carries a traffic floor, so an idle server never alerts; runbook links are added in one pass.
"""

from __future__ import annotations

from typing import Any

from exporter.mixin.config import MixinConfig
from exporter.mixin.rules import rule_names, vllm_counters

SERVER = "{{ $labels.instance }} ({{ $labels.model_name }}, engine {{ $labels.engine }})"


def anchor(alert: str) -> str:
    """The runbook section of an alert: `## SpecDecodeFoo` renders as `#specdecodefoo`."""
    return alert.lower()


def _alert(name: str, expr: str, duration: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": description},
    }


def alerts(config: MixinConfig) -> list[dict[str, Any]]:
    v = rule_names(vllm_counters(config), config)
    by = ", ".join(vllm_counters(config).by)
    traffic = f"on({by}) {v['drafts']} > {config.min_drafts_per_second}"
    side_sel = config.sidecar_selector
    side = (lambda extra: "{" + ", ".join(p for p in (side_sel, extra) if p) + "}")
    metrics_source = side('source="metrics"')
    disagreement = side(f'quantity="mean_acceptance_length", window="{config.disagreement_window}"')
    listing = [
        _alert(
            "SpecDecodeAcceptanceLengthLow",
            f"{v['mean_acceptance_length']} < {config.acceptance_length_floor} and {traffic}",
            config.for_medium,
            "warning",
            f"Speculative decoding barely pays off on {SERVER}",
            f"Mean acceptance length has been {{{{ $value | printf \"%.2f\" }}}} tokens per step over {config.rate_window} "
            f"(floor {config.acceptance_length_floor}): most drafted tokens are rejected.",
        ),
        _alert(
            "SpecDecodeAcceptanceDropped",
            f"{v['mean_acceptance_length']} < 1 + {1 - config.relative_drop:g} * ({v['baseline_mean_acceptance_length']} - 1) and {traffic}",
            config.for_medium,
            "warning",
            f"Speculative decoding acceptance dropped on {SERVER}",
            f"Mean acceptance length fell to {{{{ $value | printf \"%.2f\" }}}}: more than {config.relative_drop:.0%} fewer "
            f"accepted tokens per step than over the {config.baseline_window} that ended {config.baseline_offset} ago.",
        ),
        _alert(
            "SpecDecodePositionZeroCollapse",
            f'{v["position_acceptance"]}{{position="0"}} <= {config.collapse_position0}'
            f" and on({by}) {v['mean_acceptance_length']} <= {config.collapse_acceptance_length} and {traffic}",
            config.for_medium,
            "critical",
            f"The drafter on {SERVER} is effectively broken",
            f"Only {{{{ $value | humanizePercentage }}}} of drafts get their first token accepted and L is at most "
            f"{config.collapse_acceptance_length}: the misconfigured-drafter signature (stale config.json, wrong target layers).",
        ),
        _alert(
            "SpecDecodeWastedPositions",
            f"min by ({by}) ({v['position_acceptance']}) < {config.wasted_position_acceptance} and {traffic}",
            config.for_long,
            "info",
            f"Trailing draft positions are wasted on {SERVER}",
            f"The last drafted position is accepted in {{{{ $value | humanizePercentage }}}} of drafts (under "
            f"{config.wasted_position_acceptance:.0%}): those positions cost more than they return. Reduce num_speculative_tokens.",
        ),
        _alert(
            "SpecDecodeDataAbsent",
            f"sum by (job, instance, model_name) (rate(vllm:generation_tokens_total{_sel(config.vllm_selector)}[{config.rate_window}])) > 0"
            f" unless on(job, instance, model_name) "
            f"sum by (job, instance, model_name) (rate({vllm_counters(config).draft_tokens}[{config.rate_window}])) > 0",
            config.for_medium,
            "warning",
            "{{ $labels.instance }} ({{ $labels.model_name }}) generates tokens but drafts none",
            "The server serves traffic but its spec-decode counters are absent or flat: speculative decoding is off, "
            "not configured, or its drafter stopped proposing.",
        ),
        _alert(
            "SpecDecodeSidecarSourceDown",
            f"specdecode_source_up{side('')} == 0",
            config.for_short,
            "warning",
            "specdecode-exporter cannot read {{ $labels.upstream }}",
            "The sidecar's {{ $labels.source }} source {{ $labels.upstream }} is down: a missing log file or a target that "
            "refuses, times out or returns garbage (see specdecode_scrape_errors_total). Its acceptance numbers are not current.",
        ),
        _alert(
            "SpecDecodeLogStale",
            f"(time() - specdecode_last_spec_line_timestamp_seconds{side('')}) > {_seconds(config.log_stale)}"
            f" and on(job, instance) sum by (job, instance) (rate(specdecode_drafts_total{metrics_source}[{config.rate_window}])) > 0",
            config.for_short,
            "warning",
            "No spec-decode log line from {{ $labels.upstream }} although the server drafts",
            f"The log has printed no SpecDecoding metrics line for over {config.log_stale} while the same server's /metrics "
            "shows drafts: the log is not where the sidecar looks (rotation to another path, --disable-log-stats, "
            "--api-server-count > 1) or logging is broken.",
        ),
        _alert(
            "SpecDecodeSourcesDisagree",
            f"specdecode_source_disagreement_ratio{disagreement} > {config.disagreement}",
            config.for_medium,
            "warning",
            "Log and /metrics disagree on acceptance for {{ $labels.model_name }} on {{ $labels.upstream }}",
            f"The log-derived mean acceptance length differs from the counted one by {{{{ $value | humanizePercentage }}}} over "
            f"{config.disagreement_window} (tolerated: {config.disagreement:.0%}): the log and the target are not the same server, "
            "or one of them is misread.",
        ),
    ]
    for alert in listing:
        alert["annotations"]["runbook_url"] = f"{config.runbook_url}#{anchor(alert['alert'])}"
    return listing


def _sel(selector: str) -> str:
    return "{" + selector + "}" if selector else ""


def _seconds(duration: str) -> int:
    from exporter.config import parse_duration

    return int(parse_duration(duration))


def alert_groups(config: MixinConfig) -> list[dict[str, Any]]:
    return [{"name": "specdecode.alerts", "interval": config.evaluation_interval, "rules": alerts(config)}]
