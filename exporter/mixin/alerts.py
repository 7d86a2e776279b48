"""Alert rules. Acceptance alerts read the raw-vLLM recording rules (they work with no sidecar);
source health, staleness, disagreement and the sidecar-fed drop read the sidecar's own metrics.
Every acceptance alert carries a traffic floor, so an idle server never alerts; runbook links are
added in one pass. Metric names come from the catalogue (exporter/metric_names.py).
"""

from __future__ import annotations

from typing import Any

from exporter import metric_names as names
from exporter.mixin.config import MixinConfig
from exporter.mixin.counters import selector, server_labels, sidecar_counters, vllm_counters
from exporter.mixin.reference import K_LABEL, keyed_by, reference_names
from exporter.mixin.rules import rule_names


def where(config: MixinConfig) -> str:
    """The alert's server as an operator names it: `namespace/pod` when the scrape set the topology
    labels (the last one named, the others before it), else the scrape target's `instance`."""
    if not config.topology_labels:
        return "{{ $labels.instance }}"
    *outer, name = config.topology_labels
    path = "/".join(f"{{{{ $labels.{label} }}}}" for label in (*outer, name))
    return f"{{{{ if $labels.{name} }}}}{path}{{{{ else }}}}{{{{ $labels.instance }}}}{{{{ end }}}}"


def server(config: MixinConfig) -> str:
    return f"{where(config)} ({{{{ $labels.model_name }}}}, engine {{{{ $labels.engine }}}})"


def _alert(config: MixinConfig, name: str, expr: str, summary: str, description: str, keep_firing_for: str | None = None) -> dict[str, Any]:
    settings = config.alert(name)
    alert: dict[str, Any] = {"alert": name, "expr": expr, "for": settings.for_}
    if keep_firing_for:  # Prometheus >= 2.42
        alert["keep_firing_for"] = keep_firing_for
    alert["labels"] = {"severity": settings.severity}
    alert["annotations"] = {"summary": summary, "description": description, "runbook_url": config.runbook(name)}
    return alert


def _first_value(query_format: str, labels: tuple[str, ...], fmt: str) -> str:
    """A template that queries one value by the alert's own labels, and prints nothing if absent."""
    matchers = ", ".join(f"{label}=%q" for label in labels)
    args = " ".join(f"$labels.{label}" for label in labels * query_format.count("MATCHERS"))  # once per selector
    query = query_format.replace("MATCHERS", matchers)
    return f"{{{{ with printf `{query}` {args} | query }}}}{fmt}{{{{ end }}}}"


def _drop_alerts(config: MixinConfig, traffic: str) -> list[dict[str, Any]]:
    """The two long-memory drop alerts: raw vLLM counters against their reference, and the sidecar's window
    against the sidecar's frozen reference."""
    keep = 1 - config.relative_drop
    r = reference_names(config, vllm_counters(config))
    key = keyed_by(config)
    reference = _first_value(r["reference"] + "{MATCHERS}", key, '{{ . | first | value | printf "%.2f" }}')
    side = sidecar_counters(config)
    judged = names.MEAN_ACCEPTANCE_LENGTH.name + selector(config.sidecar_selector, f'window="{config.sidecar_judged_window}"')
    frozen = names.REFERENCE_MEAN_ACCEPTANCE_LENGTH.name + selector(config.sidecar_selector)
    series = (*server_labels(config), *names.SERIES_LABELS)
    side_reference = _first_value(names.REFERENCE_MEAN_ACCEPTANCE_LENGTH.name + "{MATCHERS}", series, '{{ . | first | value | printf "%.2f" }}')
    since = _first_value(
        f"{names.HEALTH_SINCE.name}{{MATCHERS}} * on({', '.join(series)}) group_left(state) ({names.HEALTH.name}{{MATCHERS}} == 1)",
        series,
        '; its verdict has been {{ . | first | label "state" }} since {{ . | first | value | humanizeTimestamp }}',
    )
    side_traffic = f"on({', '.join(series)}) {rule_names(side, config)['drafts']} > {config.min_drafts_per_second}"
    return [
        _alert(
            config,
            "SpecDecodeAcceptanceDropped",
            # each server against its identity's reference, pooled across replicas (many servers to one key)
            f"{r['mean_acceptance_length']} < on({', '.join(key)}) group_left() (1 + {keep:g} * ({r['reference']} - 1)) and {traffic}",
            f"Speculative decoding acceptance dropped on {server(config)}",
            f"Mean acceptance length is {{{{ $value | printf \"%.2f\" }}}} against {reference} for this config "
            f"(k={{{{ $labels.{K_LABEL} }}}}): more than {config.relative_drop:.0%} fewer accepted tokens per step than its best "
            f"{config.reference_pool} within {config.reference_hold}, pooled over the replicas of {{{{ $labels.job }}}}.",
            config.keep_firing_for,
        ),
        _alert(
            config,
            "SpecDecodeAcceptanceBelowReference",
            f"{judged} < ignoring(window) (1 + {keep:g} * ({frozen} - 1)) and {side_traffic}",
            f"Acceptance on {where(config)} ({{{{ $labels.model_name }}}}, engine {{{{ $labels.engine }}}}, {{{{ $labels.upstream }}}}) "
            "is below the sidecar's reference",
            f"The sidecar's {config.sidecar_judged_window} mean acceptance length is {{{{ $value | printf \"%.2f\" }}}} against "
            f"its frozen reference {side_reference}: more than {config.relative_drop:.0%} fewer accepted tokens per step{since}.",
            config.keep_firing_for,
        ),
    ]


def alerts(config: MixinConfig) -> list[dict[str, Any]]:
    v = rule_names(vllm_counters(config), config)
    by = ", ".join(vllm_counters(config).by)
    traffic = f"on({by}) {v['drafts']} > {config.min_drafts_per_second}"

    def side(extra: str) -> str:
        return selector(config.sidecar_selector, extra)

    model_server = ", ".join((*server_labels(config), "model_name"))
    metrics_source = side('source="metrics"')
    disagreement = side(f'quantity="mean_acceptance_length", window="{config.disagreement_window}"')
    listing = [
        _alert(
            config,
            "SpecDecodeAcceptanceLengthLow",
            f"{v['mean_acceptance_length']} < {config.acceptance_length_floor} and {traffic}",
            f"Speculative decoding barely pays off on {server(config)}",
            f"Mean acceptance length has been {{{{ $value | printf \"%.2f\" }}}} tokens per step over {config.rate_window} "
            f"(floor {config.acceptance_length_floor}): most drafted tokens are rejected.",
        ),
        *_drop_alerts(config, traffic),
        _alert(
            config,
            "SpecDecodePositionZeroCollapse",
            f'{v["position_acceptance"]}{{position="0"}} <= {config.collapse_position0}'
            f" and on({by}) {v['mean_acceptance_length']} <= {config.collapse_acceptance_length} and {traffic}",
            f"The drafter on {server(config)} is effectively broken",
            f"Only {{{{ $value | humanizePercentage }}}} of drafts get their first token accepted and L is at most "
            f"{config.collapse_acceptance_length}: the misconfigured-drafter signature (stale config.json, wrong target layers).",
        ),
        _alert(
            config,
            "SpecDecodeWastedPositions",
            f"min by ({by}) ({v['position_acceptance']}) < {config.wasted_position_acceptance} and {traffic}",
            f"Trailing draft positions are wasted on {server(config)}",
            f"The last drafted position is accepted in {{{{ $value | humanizePercentage }}}} of drafts (under "
            f"{config.wasted_position_acceptance:.0%}): those positions cost more than they return. Reduce num_speculative_tokens.",
        ),
        _alert(
            config,
            "SpecDecodeDataAbsent",
            f"sum by ({model_server}) (rate({names.VLLM_GENERATION_TOKENS.sample_name}{selector(config.vllm_selector)}[{config.rate_window}])) > 0"
            f" unless on({model_server}) "
            f"sum by ({model_server}) (rate({vllm_counters(config).draft_tokens}[{config.rate_window}])) > 0",
            f"{where(config)} ({{{{ $labels.model_name }}}}) generates tokens but drafts none",
            "The server serves traffic but its spec-decode counters are absent or flat: speculative decoding is off, "
            "not configured, or its drafter stopped proposing.",
        ),
        _alert(
            config,
            "SpecDecodeSidecarSourceDown",
            f"{names.SOURCE_UP.name}{side('')} == 0",
            f"specdecode-exporter on {where(config)} cannot read {{{{ $labels.upstream }}}}",
            "The sidecar's {{ $labels.source }} source {{ $labels.upstream }} is down: a missing log file or a target that "
            f"refuses, times out or returns garbage (see {names.SCRAPE_ERRORS.sample_name}). Its acceptance numbers are not current.",
        ),
        _alert(
            config,
            "SpecDecodeLogStale",
            f"(time() - {names.LAST_SPEC_LINE.name}{side('')}) > {_seconds(config.log_stale)}"
            f" and on(job, instance) sum by (job, instance) (rate({names.DRAFTS.sample_name}{metrics_source}[{config.rate_window}])) > 0",
            f"No spec-decode log line from {{{{ $labels.upstream }}}} on {where(config)} although the server drafts",
            f"The log has printed no SpecDecoding metrics line for over {config.log_stale} while the same server's /metrics "
            "shows drafts: the log is not where the sidecar looks (rotation to another path, --disable-log-stats, "
            "--api-server-count > 1) or logging is broken.",
        ),
        _alert(
            config,
            "SpecDecodeSourcesDisagree",
            f"{names.DISAGREEMENT.name}{disagreement} > {config.disagreement}",
            f"Log and /metrics disagree on acceptance for {{{{ $labels.model_name }}}} on {where(config)} ({{{{ $labels.upstream }}}})",
            f"The log-derived mean acceptance length differs from the counted one by {{{{ $value | humanizePercentage }}}} over "
            f"{config.disagreement_window} (tolerated: {config.disagreement:.0%}): the log and the target are not the same server, "
            "or one of them is misread.",
        ),
        *_payoff_alerts(config),
    ]
    return listing


def _payoff_alerts(config: MixinConfig) -> list[dict[str, Any]]:
    """Pay-off at load (the sidecar's measured speed-up over plain decoding) and how much of decoding
    speculates (from vLLM's own counters: no sidecar needed)."""
    series = (*server_labels(config), *names.SERIES_LABELS)
    window = f'window="{config.sidecar_judged_window}"'
    speedup = names.PAYOFF_SPEEDUP.name + selector(config.sidecar_selector, window)
    running = _first_value(names.PAYOFF_RUNNING.name + "{MATCHERS, " + window + "}", series, ' at {{ . | first | value | printf "%.0f" }} running requests')
    even = _first_value(names.BREAK_EVEN_RUNNING.name + "{MATCHERS}", series,
                        '; it pays below about {{ . | first | value | printf "%.0f" }} running requests')
    best = _first_value(names.PAYOFF_BEST_K.name + "{MATCHERS, " + window + "}", series,
                        '; the measured step costs favour k = {{ . | first | value | printf "%.0f" }} at this load')
    counters = vllm_counters(config)
    by = ", ".join(counters.by)
    rw = config.rate_window
    generated = f"sum by ({by}) (rate({names.VLLM_GENERATION_TOKENS.sample_name}{selector(config.vllm_selector)}[{rw}]))"
    drafts = f"sum by ({by}) (rate({counters.drafts}[{rw}]))"
    accepted = f"sum by ({by}) (rate({counters.accepted}[{rw}]))"
    return [
        _alert(
            config,
            "SpecDecodeSlowerThanPlain",
            f"{speedup} < {config.slower_than_plain:g}",
            f"Speculative decoding is slower than plain decoding on {where(config)} ({{{{ $labels.model_name }}}}, engine {{{{ $labels.engine }}}})",
            f"At this load the server emits {{{{ $value | printf \"%.2f\" }}}}× the tokens per second plain decoding emits{running} "
            f"(the sidecar's {config.sidecar_judged_window} window against its plain-decoding calibration){even}{best}: verifying the "
            "drafts costs more than they return. Lower num_speculative_tokens for large batches (num_speculative_tokens_per_batch_size) "
            "or turn speculation off above the break-even load.",
        ),
        _alert(
            config,
            "SpecDecodeSpeculationPartlyOff",
            f"{drafts} / ({generated} - {accepted}) < {config.speculated_share_floor:g} and {drafts} > 0"
            f" and {generated} > {config.min_drafts_per_second}",
            f"Only part of decoding speculates on {server(config)}",
            f"{{{{ $value | humanizePercentage }}}} of decode steps drafted over {rw} (floor {config.speculated_share_floor:.0%}) while "
            "the server serves: requests past the drafter's max length, a dynamic k of 0 at this batch size, adaptive verification "
            "switching drafts off, or another frontend without spec counters behind the same job. The acceptance alerts see only the "
            "steps that drafted.",
        ),
    ]


def _seconds(duration: str) -> int:
    from exporter.config import parse_duration

    return int(parse_duration(duration))


def alert_groups(config: MixinConfig) -> list[dict[str, Any]]:
    return [{"name": "specdecode.alerts", "interval": config.evaluation_interval, "rules": alerts(config)}]
