"""Grafana dashboards as code: a fleet overview on raw vLLM metrics (recording rules only, no sidecar
needed) and a per-server detail dashboard on the sidecar's metrics.

Plain builders over Grafana's JSON model rather than grafana-foundation-sdk: the few panel kinds
used here are small dicts, and a dependency would not make them safer than the lint test does.
Queries live in their own functions, apart from layout. Every query reads the tenant's series only
(scope.py), and model-level panels keep `namespace`. UIDs and titles are derived from the
configuration (the tenant and the selectors), so two teams' copies load side by side in one
Grafana; never vLLM's own uid (`vllm-spec-decode`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from exporter import metric_names as names
from exporter.mixin.config import MixinConfig
from exporter.mixin.counters import server_labels, sidecar_counters, sidecar_metric, vllm_counters, vllm_metric
from exporter.mixin.reference import reference_names
from exporter.mixin.rules import rule_names
from exporter.mixin.scope import tenancy_labels, tenant

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
NO_TRAFFIC = "No traffic"
NOT_SCRAPED = "Not scraped"  # no series at all is a broken integration, not an idle fleet
TOKENS_PER_SECOND = "suffix: tok/s"


@dataclass
class Panel:
    title: str
    description: str
    kind: str  # timeseries | bargauge | heatmap | state-timeline | stat | table
    queries: list[tuple[str, str]]  # (expr, legend)
    unit: str
    width: int = 12
    height: int = 8
    instant: bool = False
    min: float | None = None
    max: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    mappings: list[dict[str, Any]] = field(default_factory=list)
    overrides: list[dict[str, Any]] = field(default_factory=list)
    thresholds: list[dict[str, Any]] = field(default_factory=list)  # drawn as lines (thresholdsStyle)

    def render(self, panel_id: int, x: int, y: int) -> dict[str, Any]:
        defaults: dict[str, Any] = {"unit": self.unit, "noValue": NO_TRAFFIC}
        if self.mappings:
            defaults["mappings"] = self.mappings
        if self.min is not None:
            defaults["min"] = self.min
        if self.max is not None:
            defaults["max"] = self.max
        if self.thresholds:
            defaults["thresholds"] = {"mode": "absolute", "steps": self.thresholds}
            defaults["custom"] = {"thresholdsStyle": {"mode": "line"}}
        return {
            "id": panel_id,
            "type": self.kind,
            "title": self.title,
            "description": self.description,
            "datasource": DATASOURCE,
            "gridPos": {"x": x, "y": y, "w": self.width, "h": self.height},
            "fieldConfig": {"defaults": defaults, "overrides": self.overrides},
            "options": self.options,
            "targets": [
                {
                    "refId": chr(ord("A") + i),
                    "datasource": DATASOURCE,
                    "expr": expr,
                    "legendFormat": legend,
                    "instant": self.instant,
                    "range": not self.instant,
                }
                for i, (expr, legend) in enumerate(self.queries)
            ],
        }


def _query_variable(name: str, label: str, query: str) -> dict[str, Any]:
    return {
        "type": "query",
        "name": name,
        "label": label,
        "datasource": DATASOURCE,
        "query": {"query": query, "refId": name},
        "definition": query,
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "sort": 1,
    }


def _datasource_variable() -> dict[str, Any]:
    return {"type": "datasource", "name": "datasource", "label": "Data source", "query": "prometheus", "current": {}}


def dashboard_uid(config: MixinConfig, kind: str) -> str:
    """`specdecode-<kind>` for a cluster-wide copy; a tenant's copy adds its namespace, or a digest of
    its scope where that would pass Grafana's 40 characters. Same scope, same uid: a re-render
    replaces its own dashboard and never another team's."""
    base = f"specdecode-{kind}"
    if not (config.namespace or config.vllm_selector or config.sidecar_selector):
        return base
    readable = f"{base}-{config.namespace}"
    if config.namespace and not (config.vllm_selector or config.sidecar_selector) and len(readable) <= 40:
        return readable
    digest = hashlib.sha256("\0".join((config.namespace, config.vllm_selector, config.sidecar_selector)).encode()).hexdigest()[:10]
    return f"{base}-{digest}"


def _dashboard(config: MixinConfig, uid: str, title: str, description: str, variables: list[dict[str, Any]], panels: list[Panel]) -> dict[str, Any]:
    rendered, x, y, row_height = [], 0, 0, 0
    for panel_id, panel in enumerate(panels, start=1):
        if x + panel.width > 24:
            x, y, row_height = 0, y + row_height, 0
        rendered.append(panel.render(panel_id, x, y))
        x += panel.width
        row_height = max(row_height, panel.height)
    return {
        "uid": uid,
        # a folder holds one dashboard of a title: each tenant's copy names its namespace
        "title": config.dashboard_title_prefix + title + (f" ({config.namespace})" if config.namespace else ""),
        "description": description,
        "tags": list(config.dashboard_tags),
        "editable": True,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "browser",
        "graphTooltip": 1,
        "annotations": {"list": []},
        "links": [],
        "templating": {"list": [_datasource_variable(), *variables]},
        "panels": rendered,
    }


# --- queries -------------------------------------------------------------------------------------

JOB, MODEL, ENGINE, UPSTREAM = '"$job"', '"$model"', '"$engine"', '"$upstream"'
VLLM_DRAFTS = names.VLLM_DRAFTS.sample_name  # what the fleet's variables list
SIDECAR_DRAFTS = names.DRAFTS.sample_name  # what the server dashboard's variables list


def _topology(config: MixinConfig) -> str:
    """Matchers of the topology variables ($namespace, $pod): an absent label matches `.*` too."""
    return "".join(f', {label}=~"${label}"' for label in config.topology_labels if label not in ("job", "instance"))


def _scoped(config: MixinConfig, matchers: str) -> str:
    """The tenant's matcher before the variables' ones: a variable set to All never reaches another team's series."""
    return ", ".join(m for m in (tenant(config), matchers) if m)


def server_matchers(config: MixinConfig) -> str:
    return _scoped(config, f'job=~"$job"{_topology(config)}, instance=~"$instance", model_name=~"$model", engine=~"$engine"')


def sidecar_matchers(config: MixinConfig) -> str:
    return _scoped(config, f'job=~"$job"{_topology(config)}, upstream=~"$upstream", model_name=~"$model", engine=~"$engine"')


def model_matchers(config: MixinConfig) -> str:
    """Model-level records: the model variable, and the namespace they keep."""
    return _scoped(config, "".join(f'{label}=~"${label}", ' for label in tenancy_labels(config)) + 'model_name=~"$model"')


def model_legend(config: MixinConfig) -> str:
    return "".join(f"{{{{{label}}}}}/" for label in tenancy_labels(config)) + "{{model_name}}"


def replica(config: MixinConfig) -> str:
    """A legend that tells replicas apart: the pod (Kubernetes) and the scrape target (anywhere)."""
    return " ".join(f"{{{{{label}}}}}" for label in (*config.topology_labels[-1:], "instance"))


def scraped_query(family: str) -> str:
    """How many series of the family Prometheus holds, 0 when none: not scraped, apart from no traffic.
    `family` as the config selects it (tenant and selector), never the variables: they list what was scraped."""
    return f"count({family}) or vector(0)"


def targets(config: MixinConfig) -> dict[str, str]:
    up = "up{" + _scoped(config, 'job=~"$job"') + "}"
    return {"up": f"sum by (job) ({up})", "down": f"count by (job) ({up}) - sum by (job) ({up})"}


def fleet_queries(config: MixinConfig) -> dict[str, str]:
    n = rule_names(vllm_counters(config), config)
    r = reference_names(config, vllm_counters(config))
    server_labels_text = ", ".join(server_labels(config))
    sel = server_matchers(config)
    model = model_matchers(config)
    identity = _scoped(config, "".join(f'{label}=~"${label}", ' for label in tenancy_labels(config))
                       + 'job=~"$job", model_name=~"$model", engine=~"$engine"')
    return {
        "model_length": f"{n['model_mean_acceptance_length']}{{{model}}}",
        "server_length": f"{n['mean_acceptance_length']}{{{sel}}}",
        # every config's reference within the hold: the previous k's stays beside the current one
        "server_reference": f"{r['reference']}{{{identity}}}",
        "model_k_positions": f"{n['model_k_position_acceptance']}{{{model}}}",
        "model_k_conditional": f"{n['model_k_position_conditional']}{{{model}}}",
        "server_positions": f"{n['position_acceptance']}{{{sel}}}",
        "accepted": f"{n['model_accepted']}{{{model}}}",
        "drafted": f"{n['model_draft_tokens']}{{{model}}}",
        "wasted": f"{n['model_wasted']}{{{model}}}",
        "drafts": f"sum by ({server_labels_text}, model_name, engine) (rate({names.VLLM_DRAFTS.sample_name}{{{sel}}}[$__rate_interval]))",
        # per replica first (k = its number of position series), then the largest and smallest of a job:
        # replicas agree when the two are equal; a sum would add the replicas' k
        "configured_k_max": f"max by (job, model_name, engine) ({_k_per_replica(config, names.VLLM_ACCEPTED_PER_POSITION.sample_name, sel)})",
        "configured_k_min": f"min by (job, model_name, engine) ({_k_per_replica(config, names.VLLM_ACCEPTED_PER_POSITION.sample_name, sel)})",
        "alerts": "ALERTS{" + _scoped(config, 'alertname=~"SpecDecode.*", alertstate="firing"') + "}",
    }


def _k_per_replica(config: MixinConfig, per_position: str, matchers: str, extra: tuple[str, ...] = ()) -> str:
    return f"count by ({', '.join((*server_labels(config), *extra, 'model_name', 'engine'))}) ({per_position}{{{matchers}}})"


HISTOGRAM_MAX_K = 16  # the acceptance-length panel's buckets 0..16: DFlash's k = 15 fits; longer n-gram drafts are cut


def acceptance_histogram(position_acceptance: str, selector: str, k_max: int = HISTOGRAM_MAX_K) -> str:
    """Share of drafts that accepted exactly j tokens, j = 0..k, from a recorded r_i = A_i/D
    (exporter/judge/derive.py's h_j): h_0 = 1 − r_0, h_j = r_{j−1} − r_j, h_k = r_{k−1} (no r_k).
    PromQL has no arithmetic on labels, so each bucket is its own term, labelled `accepted`."""

    def rate(i: int) -> str:
        return f'max without (position) ({position_acceptance}{{{selector}, position="{i}"}})'

    terms = [f'label_replace(1 - {rate(0)}, "accepted", "0", "", "")']
    terms += [f'label_replace({rate(j - 1)} - ({rate(j)} or {rate(j - 1)} * 0), "accepted", "{j}", "", "")' for j in range(1, k_max + 1)]
    return " or ".join(terms)


def server_queries(config: MixinConfig) -> dict[str, str]:
    window = 'window="$window"'
    n = rule_names(sidecar_counters(config), config)
    sel = sidecar_matchers(config)
    by = ", ".join(sidecar_counters(config).by)
    return {
        "verdict": f"{names.HEALTH.name}{{{sel}}} == 1",
        "length": f"{names.MEAN_ACCEPTANCE_LENGTH.name}{{{sel}, {window}}}",
        "length_counters": f"{n['mean_acceptance_length']}{{{sel}}}",
        "positions": f"{names.POSITION_ACCEPTANCE.name}{{{sel}, {window}}}",
        # from the counters: the sidecar exports the conditional gauge only with --conditional-gauges
        "conditional": f"{n['position_conditional']}{{{sel}}}",
        "acceptance_histogram": acceptance_histogram(n["position_acceptance"], sel),
        "recommended_k": f"{names.RECOMMENDED_K.name}{{{sel}, {window}}}",
        "payoff_speedup": f"{names.PAYOFF_SPEEDUP.name}{{{sel}, {window}}}",
        "payoff_running": f"{names.PAYOFF_RUNNING.name}{{{sel}, {window}}}",
        "break_even": f"{names.BREAK_EVEN_RUNNING.name}{{{sel}}}",
        "speculated_share": f"{names.SPECULATED_SHARE.name}{{{sel}, {window}}}",
        # each replica's own k: `upstream` is the same path in every pod, so it cannot tell them apart
        "configured_k": _k_per_replica(config, names.ACCEPTED_PER_POSITION.sample_name, sel, ("upstream", "source")),
        "wasted": f"{names.WASTED_TOKENS_RATE.name}{{{sel}, {window}}}",
        "accepted_rate": f"sum by ({by}) (rate({names.ACCEPTED_TOKENS.sample_name}{{{sel}}}[$__rate_interval]))",
        "disagreement": f"{names.DISAGREEMENT.name}{{{_scoped(config, f'job=~{JOB}{_topology(config)}, model_name=~{MODEL}, engine=~{ENGINE}')}}}",
        "source_up": f"{names.SOURCE_UP.name}{{{_scoped(config, f'job=~{JOB}{_topology(config)}, upstream=~{UPSTREAM}')}}}",
        "parse_errors": f'sum by ({", ".join(server_labels(config))}, upstream) '
        f"(rate({names.LOG_LINES.sample_name}{{{_scoped(config, f'job=~{JOB}{_topology(config)}, upstream=~{UPSTREAM}')}}}[$__rate_interval]))",
    }


# --- layout --------------------------------------------------------------------------------------

RATIO: dict[str, Any] = {"min": 0.0, "max": 1.0}  # a 0–1 panel's axis


def _variables(config: MixinConfig, family: str, last: str) -> list[dict[str, Any]]:
    """job, then each topology label (namespace, pod), then `last` (instance or upstream), model, engine:
    each listing the values under the ones before it."""
    chosen: list[str] = []
    variables = []
    for name in ("job", *(label for label in config.topology_labels if label not in ("job", "instance")), last):
        matchers = _scoped(config, ", ".join(f'{c}=~"${c}"' for c in chosen))
        variables.append(_query_variable(name, name.capitalize(), f"label_values({family}{{{matchers}}}, {name})" if matchers
                                         else f"label_values({family}, {name})"))
        chosen.append(name)
    matchers = _scoped(config, ", ".join(f'{c}=~"${c}"' for c in chosen))
    variables.append(_query_variable("model", "Model", f"label_values({family}{{{matchers}}}, model_name)"))
    variables.append(_query_variable("engine", "Engine", f"label_values({family}{{{matchers}}}, engine)"))
    return variables


def _scrape_panels(config: MixinConfig, family: str, what: str) -> list[Panel]:
    return [
        Panel("Scraped", f"Series of {what} Prometheus holds. '{NOT_SCRAPED}' (none at all) is a broken integration — a PodMonitor or "
              "PrometheusRule the Prometheus does not select, a wrong selector — not an idle fleet; the other panels' "
              f"'{NO_TRAFFIC}' then means scraped but not drafting.",
              "stat", [(scraped_query(family), "series")], "none", width=8, height=4, instant=True,
              mappings=[{"type": "value", "options": {"0": {"text": NOT_SCRAPED, "color": "red", "index": 0}}}]),
        Panel("Scrape targets", "Targets of each job that answer (up) and that do not (down).",
              "stat", [(targets(config)["up"], "{{job}} up"), (targets(config)["down"], "{{job}} down")], "none", width=16, height=4,
              instant=True),
    ]


def fleet(config: MixinConfig) -> dict[str, Any]:
    q = fleet_queries(config)
    who = replica(config)
    model = model_legend(config)
    panels = [
        *_scrape_panels(config, vllm_metric(config, VLLM_DRAFTS), "vLLM's spec-decode counters"),
        Panel("Mean acceptance length by model", "Tokens per verification step, bonus included (1 + accepted/drafts), pooled over every server of a model.",
              "timeseries", [(q["model_length"], model)], "none", min=1.0),
        Panel("Mean acceptance length by server, against its reference",
              f"Each server's L over {config.rate_window} (solid) and the drop-off alert's reference per config (k): the best "
              f"{config.reference_pool}-pooled L of that config within {config.reference_hold}. A previous config's reference stays beside the current one.",
              "timeseries", [(q["server_length"], f"{who} {{{{model_name}}}} e{{{{engine}}}}"),
                             (q["server_reference"], "reference {{job}} e{{engine}} k={{num_speculative_tokens}}")], "none", min=1.0),
        Panel("Per-position acceptance by model and k",
            "Share of drafts whose positions 0..i were all accepted, per model and number of speculative tokens (never pooled across different k).",
              "bargauge", [(q["model_k_positions"], f"{model} k={{{{num_speculative_tokens}}}} #{{{{position}}}}")], "percentunit", instant=True, **RATIO,
              options={"orientation": "vertical", "displayMode": "gradient"}),
        Panel("Conditional acceptance by model and k", "Chance position i is accepted when position i−1 was: where the chain breaks.",
              "bargauge", [(q["model_k_conditional"], f"{model} k={{{{num_speculative_tokens}}}} #{{{{position}}}}")], "percentunit", instant=True, **RATIO,
              options={"orientation": "vertical", "displayMode": "gradient"}),
        Panel("Per-position acceptance over time by model and k", "Each row a draft position of one model and k: how its acceptance moves in time.",
              "heatmap", [(q["model_k_positions"], f"{model} k={{{{num_speculative_tokens}}}} #{{{{position}}}}")], "percentunit", width=24, **RATIO,
              options={"calculate": False, "yAxis": {"axisPlacement": "left"}, "color": {"scheme": "Blues", "mode": "scheme"}}),
        Panel("Drafted, accepted and wasted tokens", "Draft tokens per second proposed, accepted by the target, and rejected (drafted − accepted), per model.",
              "timeseries", [(q["drafted"], f"drafted {model}"), (q["accepted"], f"accepted {model}"), (q["wasted"],
                  f"wasted {model}")], TOKENS_PER_SECOND, min=0.0,
              options={"legend": {"displayMode": "list", "placement": "bottom"}}),
        Panel("Per-position acceptance by server", "Each server's own curve, to find the one that drags its model's curve down.",
              "bargauge", [(q["server_positions"], f"{who} e{{{{engine}}}} #{{{{position}}}}")], "percentunit", instant=True, **RATIO,
              options={"orientation": "vertical", "displayMode": "gradient"}),
        Panel("Drafts per second by server", "Speculative drafts verified per second (the traffic floor of the alerts applies to this).",
              "timeseries", [(q["drafts"], f"{who} {{{{model_name}}}} e{{{{engine}}}}")], "reqps", min=0.0),
        Panel("Configured number of speculative tokens",
              "k of each job's replicas (the number of position series each exports): the largest and the smallest; they differ while "
              "a rollout changes k or when replicas disagree.",
              "stat", [(q["configured_k_max"], "{{job}} {{model_name}} e{{engine}} max"),
                       (q["configured_k_min"], "{{job}} {{model_name}} e{{engine}} min")], "none", instant=True),
        Panel("Firing spec-decode alerts", "SpecDecode… alerts firing now, with their severity.",
              "table", [(q["alerts"], "{{alertname}}")], "none", instant=True),
    ]
    return _dashboard(
        config,
        dashboard_uid(config, "fleet"),
        "Fleet",
        "vLLM speculative decoding across servers, from raw vLLM metrics and the specdecode recording rules (no sidecar needed).",
        _variables(config, VLLM_DRAFTS, "instance"),
        panels,
    )


def server(config: MixinConfig) -> dict[str, Any]:
    q = server_queries(config)
    # the windows the sidecar exports derived gauges for: its health window unless --derived-windows adds more
    window = {
        **_query_variable("window", "Window",
                          f"label_values({names.MEAN_ACCEPTANCE_LENGTH.name}{{{_scoped(config, f'job=~{JOB}, upstream=~{UPSTREAM}')}}}, window)"),
        "includeAll": False, "multi": False, "current": {},
    }
    del window["allValue"]
    who = replica(config)
    panels = [
        *_scrape_panels(config, sidecar_metric(config, SIDECAR_DRAFTS), "the sidecars' counters"),
        Panel("Verdict", "The sidecar's drafter health verdict per series: ok, wasteful, degraded, broken or no_data.",
              "state-timeline", [(q["verdict"], f"{who} {{{{source}}}} e{{{{engine}}}}: {{{{state}}}}")], "none", width=24, height=6),
        Panel("Mean acceptance length", "The sidecar's L over the chosen window, and the recording rule over its counters.",
              "timeseries", [(q["length"], f"{who} {{{{source}}}} e{{{{engine}}}}"),
                             (q["length_counters"], f"counters {who} {{{{source}}}} e{{{{engine}}}}")], "none", min=1.0),
        Panel("Recommended vs configured k",
              "Per replica: the number of speculative tokens that maximises the estimated speed-up, against the k drafted now.",
              "timeseries", [(q["recommended_k"], f"recommended {who} {{{{source}}}} e{{{{engine}}}}"), (q["configured_k"],
                  f"configured {who} {{{{source}}}} e{{{{engine}}}}")], "none", min=0.0),
        Panel("Pay-off at load",
              "Left: tokens/s against plain decoding's at the same running requests (the sidecar's --calibration); under the line at 1 "
              "speculation is slower than not speculating. Right: the running requests, and the break-even load above which it is slower.",
              "timeseries", [(q["payoff_speedup"], f"speed-up {who} {{{{source}}}} e{{{{engine}}}}"),
                             (q["payoff_running"], f"running {who} {{{{source}}}} e{{{{engine}}}}"),
                             (q["break_even"], f"break-even {who} {{{{source}}}} e{{{{engine}}}}")], "none", min=0.0,
              thresholds=[{"color": "red", "value": None}, {"color": "green", "value": 1.0}],
              overrides=[{"matcher": {"id": "byRegexp", "options": "^(running|break-even) .*"},
                          "properties": [{"id": "custom.axisPlacement", "value": "right"}, {"id": "unit", "value": "short"},
                                         {"id": "custom.thresholdsStyle", "value": {"mode": "off"}}]}]),
        Panel("Decode steps that speculated",
              "Share of decode steps that drafted (drafts ÷ (emitted − accepted tokens)) over the chosen window: under 1, speculation "
              "is partly off (requests past the drafter's length, dynamic k at 0, adaptive verification).",
              "timeseries", [(q["speculated_share"], f"{who} {{{{source}}}} e{{{{engine}}}}")], "percentunit", **RATIO),
        Panel("Per-position acceptance", "Share of drafts whose positions 0..i were all accepted, over the chosen window.",
              "bargauge", [(q["positions"], f"{who} {{{{source}}}} e{{{{engine}}}} #{{{{position}}}}")], "percentunit", instant=True, **RATIO,
              options={"orientation": "vertical", "displayMode": "gradient"}),
        Panel("Conditional acceptance per position",
              f"Chance position i is accepted when i−1 was, over {config.rate_window}, from the per-position counters.",
              "bargauge", [(q["conditional"], f"{who} {{{{source}}}} e{{{{engine}}}} #{{{{position}}}}")], "percentunit", instant=True, **RATIO,
              options={"orientation": "vertical", "displayMode": "gradient"}),
        Panel("Acceptance length histogram",
              f"Share of drafts that accepted exactly j drafted tokens (j = 0..k, up to {HISTOGRAM_MAX_K}), over {config.rate_window}, "
              "from the per-position counters: 1 − r₀ for j = 0, r_{j−1} − r_j after; its mean is L − 1.",
              "bargauge", [(q["acceptance_histogram"], f"{who} {{{{source}}}} e{{{{engine}}}} ={{{{accepted}}}}")], "percentunit", instant=True, **RATIO,
              options={"orientation": "vertical", "displayMode": "gradient"}),
        Panel("Accepted and wasted draft tokens", "Accepted draft tokens per second (from counters) and rejected ones (the sidecar's window).",
              "timeseries", [(q["accepted_rate"], f"accepted {who} {{{{source}}}} e{{{{engine}}}}"), (q["wasted"],
                  f"wasted {who} {{{{source}}}} e{{{{engine}}}}")], TOKENS_PER_SECOND, min=0.0),
        Panel("Log vs /metrics disagreement", "Relative difference of L and α between the log-derived and the counted numbers of one server.",
              "timeseries", [(q["disagreement"], f"{who} {{{{quantity}}}} {{{{window}}}}")], "percentunit", min=0.0),
        Panel("Sources up", "1 when the sidecar can read a source (log file present, target answering with spec-decode families).",
              "stat", [(q["source_up"], f"{who} {{{{source}}}} {{{{upstream}}}}")], "none", instant=True, min=0.0, max=1.0),
        Panel("Log lines read", "Lines per second the sidecar reads from each log.",
              "timeseries", [(q["parse_errors"], f"{who} {{{{upstream}}}}")], "short", min=0.0),
    ]
    return _dashboard(
        config,
        dashboard_uid(config, "server"),
        "Server detail",
        "vLLM servers through their specdecode-exporter sidecars, one line per replica: verdict, windows, recommendation, sources.",
        [*_variables(config, SIDECAR_DRAFTS, "upstream"), window],
        panels,
    )


def dashboards(config: MixinConfig) -> dict[str, dict[str, Any]]:
    return {"specdecode-fleet.json": fleet(config), "specdecode-server.json": server(config)}
