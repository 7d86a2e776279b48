"""Alert rules. Acceptance alerts read the raw-vLLM recording rules (they work with no sidecar);
source health, staleness, disagreement and the sidecar-fed drop read the sidecar's own metrics;
two alerts watch the integration itself (the sidecar scraped but not vLLM, the sidecar down).

Each alert is written once as an `Alert` (its condition and its words) and rendered by `render`,
which gives every alert, a later one too, the same treatment:

- scope: conditions read through scope.read / counters' selectors, so only the tenant's series;
- labels: `alert_labels` of the config and the severity;
- one incident, one page: an alert carries the labels an incident keeps across a restart
  (`instance` is dropped where the pod names the server: a replaced pod's new address would be a
  new alert), per-source alerts of the sidecar are folded into one per server (`fold`), and a
  ranked acceptance alert waits while a higher-ranked one is pending or firing on the same
  namespace, pod, model and engine (`rank`; inhibition.py holds Alertmanager to the same ranks);
- runbook links.

Every acceptance alert carries a traffic floor, so an idle server never alerts. Metric names come
from the catalogue (exporter/metric_names.py).

Adding an alert: write an `Alert` in `listing()` (or a helper it calls) whose expr reads series only
through `vllm_metric`, `sidecar_metric` or `scope.read` (a bare name fails tests/test_tenancy.py);
give it `rank=` (a Rank value, or one between two) when it is a finding about one server's
acceptance that a higher one explains or that explains lower ones, `fold=` the per-source labels
when it reads the sidecar per upstream, `keep_firing=True` when it must outlast a restart; add its
`[alerts.<name>]` (`for`, `severity`) to defaults.toml and its runbook section. `render` and
inhibition.py do the rest: tenant scope, alert_labels, stable labels, the wait behind higher ranks
and the inhibit rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exporter import metric_names as names
from exporter.mixin.config import MixinConfig
from exporter.mixin.counters import server_labels, sidecar_counters, sidecar_metric, vllm_counters, vllm_metric
from exporter.mixin.reference import K_LABEL, keyed_by, reference_names
from exporter.mixin.rules import rule_names
from exporter.mixin.scope import incident_labels, place_label, read


class Rank:
    """How specific an acceptance finding about one server is: a higher one explains the lower ones
    (a collapsed drafter explains its drop, a drop its low length, ...). Gaps leave room for more."""

    COLLAPSE = 50
    DROP = 40
    LOW = 30
    SLOWER_THAN_PLAIN = 25  # pay-off at load: a drop or a low length explains it
    SIDECAR_DROP = 20  # the sidecar's view of the drop: what is left when vLLM is not scraped directly
    WASTED = 10


FOLDED_TARGET = "folded_instance"  # the scrape target's address, kept apart while a server's replaced pods are folded
SIDECAR_SOURCE = ("upstream", "source")  # the sidecar's per-source labels: one alert per server, not per source


@dataclass(frozen=True)
class Alert:
    """One alert as written here, before `render` scopes, labels and folds it."""

    name: str
    expr: str  # reads only through scope.read and counters' selectors
    summary: str
    description: str
    rank: int | None = None  # an acceptance finding on one server (Rank); None: not held back by others
    fold: tuple[str, ...] = ()  # per-source labels folded away: one alert per server
    fold_with: str = "max"  # which of the folded values the description's $value shows
    keep_firing: bool = False  # held across a restart's gap (keep_firing_for)


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


def _first_value(query_format: str, labels: tuple[str, ...], fmt: str) -> str:
    """A template that queries one value by the alert's own labels, and prints nothing if absent."""
    matchers = ", ".join(f"{label}=%q" for label in labels)
    args = " ".join(f"$labels.{label}" for label in labels * query_format.count("MATCHERS"))  # once per selector
    query = query_format.replace("MATCHERS", matchers)
    return f"{{{{ with printf `{query}` {args} | query }}}}{fmt}{{{{ end }}}}"


def _listed(query_format: str, labels: tuple[str, ...], item: str) -> str:
    """A template that lists every series a query by the alert's own labels returns."""
    matchers = ", ".join(f"{label}=%q" for label in labels)
    args = " ".join(f"$labels.{label}" for label in labels * query_format.count("MATCHERS"))
    query = query_format.replace("MATCHERS", matchers)
    return f"{{{{ range printf `{query}` {args} | query }}}}{item}{{{{ end }}}}"


def _drop_alerts(config: MixinConfig, traffic: str) -> list[Alert]:
    """The two long-memory drop alerts: raw vLLM counters against their reference, and the sidecar's window
    against the sidecar's frozen reference."""
    keep = 1 - config.relative_drop
    r = reference_names(config, vllm_counters(config))
    key = keyed_by(config)
    reference = _first_value(r["reference"] + "{MATCHERS}", key, '{{ . | first | value | printf "%.2f" }}')
    judged = sidecar_metric(config, names.MEAN_ACCEPTANCE_LENGTH.name, f'window="{config.sidecar_judged_window}"')
    frozen = sidecar_metric(config, names.REFERENCE_MEAN_ACCEPTANCE_LENGTH.name)
    incident = incident_labels(config)
    side_reference = _first_value(f"min({names.REFERENCE_MEAN_ACCEPTANCE_LENGTH.name}{{MATCHERS}})", incident,
                                  '{{ . | first | value | printf "%.2f" }}')
    since = _first_value(
        f"bottomk(1, {names.HEALTH_SINCE.name}{{MATCHERS}} * ignoring(state) group_left(state) ({names.HEALTH.name}{{MATCHERS}} == 1))",
        incident,
        '; its verdict has been {{ . | first | label "state" }} since {{ . | first | value | humanizeTimestamp }}',
    )
    side_by = ", ".join(sidecar_counters(config).by)
    side_traffic = f"on({side_by}) {read(config, rule_names(sidecar_counters(config), config)['drafts'])} > {config.min_drafts_per_second}"
    mean = read(config, r["mean_acceptance_length"])
    return [
        Alert(
            "SpecDecodeAcceptanceDropped",
            # each server against its identity's reference, pooled across replicas (many servers to one key)
            f"{mean} < on({', '.join(key)}) group_left() (1 + {keep:g} * ({read(config, r['reference'])} - 1)) and {traffic}",
            f"Speculative decoding acceptance dropped on {server(config)}",
            f"Mean acceptance length is {{{{ $value | printf \"%.2f\" }}}} against {reference} for this config "
            f"(k={{{{ $labels.{K_LABEL} }}}}): more than {config.relative_drop:.0%} fewer accepted tokens per step than its best "
            f"{config.reference_pool} within {config.reference_hold}, pooled over the replicas of {{{{ $labels.job }}}}.",
            rank=Rank.DROP,
            keep_firing=True,
        ),
        Alert(
            "SpecDecodeAcceptanceBelowReference",
            f"{judged} < ignoring(window) (1 + {keep:g} * ({frozen} - 1)) and {side_traffic}",
            f"Acceptance on {server(config)} is below the sidecar's reference",
            f"The sidecar's {config.sidecar_judged_window} mean acceptance length is {{{{ $value | printf \"%.2f\" }}}} (the lowest of "
            f"its sources) against its frozen reference {side_reference}: more than {config.relative_drop:.0%} fewer accepted tokens "
            f"per step{since}.",
            rank=Rank.SIDECAR_DROP,
            fold=SIDECAR_SOURCE,
            fold_with="min",
            keep_firing=True,
        ),
    ]


def _sidecar_alerts(config: MixinConfig) -> list[Alert]:
    """The sidecar's own health: its sources, its log, its cross-check, each folded to one alert per server."""
    source_up = sidecar_metric(config, names.SOURCE_UP.name)
    place = ", ".join(config.topology_labels)
    # vLLM answers its scrape: its series are present (a failed scrape marks them stale at once)
    vllm_up = vllm_metric(config, names.VLLM_GENERATION_TOKENS.sample_name)
    budget = config.startup_budget
    same = ", ".join(("job", *config.topology_labels, "upstream"))
    down = _listed(f"{names.SOURCE_UP.name}{{MATCHERS}} == 0", tuple(config.topology_labels) or ("instance",), "{{ .Labels.upstream }} ")
    metrics_source = sidecar_metric(config, names.DRAFTS.sample_name, 'source="metrics"')
    disagreement = sidecar_metric(config, names.DISAGREEMENT.name, f'quantity="mean_acceptance_length", window="{config.disagreement_window}"')
    return [
        Alert(
            "SpecDecodeSidecarSourceDown",
            # down while vLLM serves /metrics, or not up once in the start-up budget (vLLM never came up, or is not
            # scraped) across every address the source had meanwhile (a replaced pod's sidecar is the same source)
            f"({source_up} == 0 and on({place}) {vllm_up})"
            f" or ({source_up} == 0 and on({same}) (max by ({same}) (max_over_time({source_up}[{budget}])) == 0)"
            f" and on({same}) {source_up} offset {budget})",
            f"specdecode-exporter on {where(config)} cannot read {{{{ $value }}}} of its sources",
            f"Down: {down}— a missing log file or a target that refuses, times out or returns garbage (see "
            f"{names.SCRAPE_ERRORS.sample_name}), while vLLM serves its /metrics or for longer than the start-up budget ({budget}). "
            "Its acceptance numbers for those sources are not current.",
            fold=SIDECAR_SOURCE,
            fold_with="count",
        ),
        Alert(
            "SpecDecodeLogStale",
            f"(time() - {sidecar_metric(config, names.LAST_SPEC_LINE.name)}) > {_seconds(config.log_stale)}"
            f" and on(job, instance) sum by (job, instance) (rate({metrics_source}[{config.rate_window}])) > 0",
            f"No spec-decode log line on {where(config)} although the server drafts",
            f"The log has printed no SpecDecoding metrics line for over {config.log_stale} while the same server's /metrics "
            "shows drafts: the log is not where the sidecar looks (rotation to another path, --disable-log-stats, "
            "--api-server-count > 1) or logging is broken.",
            fold=("upstream",),
        ),
        Alert(
            "SpecDecodeSourcesDisagree",
            f"{disagreement} > {config.disagreement}",
            f"Log and /metrics disagree on acceptance for {{{{ $labels.model_name }}}} on {where(config)}",
            f"The log-derived mean acceptance length differs from the counted one by up to {{{{ $value | humanizePercentage }}}} over "
            f"{config.disagreement_window} (tolerated: {config.disagreement:.0%}): the log and the target are not the same server, "
            "or one of them is misread.",
            fold=("upstream", "compared_upstream"),
        ),
    ]


def _integration_alerts(config: MixinConfig) -> list[Alert]:
    """The integration itself: vLLM's half missing while the sidecar's is there, and the sidecar down."""
    place = ", ".join(config.topology_labels)
    sidecar_drafts = sidecar_metric(config, names.DRAFTS.sample_name)
    vllm_records = read(config, rule_names(vllm_counters(config), config)["drafts"])
    selected = config.vllm_selector or "every job"
    return [
        Alert(
            "SpecDecodeVLLMNotScraped",
            f"sum by ({place}) (rate({sidecar_drafts}[{config.rate_window}])) > 0 unless on({place}) {vllm_records}",
            f"The sidecar on {where(config)} sees drafts, but Prometheus has no vLLM spec-decode series there",
            f"The sidecar reads drafting from this server, yet no vLLM series matches the rules' selector ({selected} in "
            f"namespace {config.namespace or 'any'}): vLLM's own monitor is not selected by this Prometheus (its labels lack "
            f"{', '.join(f'{k}={v}' for k, v in config.monitor_labels.items()) or 'the selecting labels'}; chart-values.yaml sets "
            "them), vllm_selector names another job, or the recording rules are not loaded. The acceptance, drop and collapse "
            "alerts on vLLM's counters cannot fire until it is.",
        ),
        Alert(
            "SpecDecodeSidecarDown",
            f"{read(config, 'up', f'job={_quoted(config.sidecar_job)}')} == 0",
            f"specdecode-exporter on {where(config)} does not answer its scrape",
            "Prometheus cannot scrape the sidecar: its process is down or hung (its supervisor restarts it; vLLM keeps "
            "serving), its port is blocked (the NetworkPolicy admits only the `scrapers` of the config) or its web config "
            "refuses the scraper. Its alerts and dashboards are silent until it answers.",
        ),
    ]


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def listing(config: MixinConfig) -> list[Alert]:
    """Every alert, in any order (`alerts` puts the ranked ones first, from the highest rank down)."""
    v = rule_names(vllm_counters(config), config)
    by = ", ".join(vllm_counters(config).by)

    def rec(key: str, *matchers: str) -> str:
        return read(config, v[key], *matchers)

    traffic = f"on({by}) {rec('drafts')} > {config.min_drafts_per_second}"
    model_server = ", ".join((*server_labels(config), "model_name"))
    generated = vllm_metric(config, names.VLLM_GENERATION_TOKENS.sample_name)
    drafted = vllm_counters(config).draft_tokens
    data_absent = (f"sum by ({model_server}) (rate({generated}[{config.rate_window}])) > 0"
                   f" unless on({model_server}) sum by ({model_server}) (rate({drafted}[{config.rate_window}])) > 0")
    position0 = rec("position_acceptance", 'position="0"')
    dropped, below_reference = _drop_alerts(config, traffic)
    if not config.vllm_selector:  # only servers whose job and model drafted within the hold: another team's plain vLLM stays quiet
        identity = ", ".join((*config.identity_labels, "model_name"))
        reference = read(config, reference_names(config, vllm_counters(config))["reference"])
        data_absent += f" and on({identity}) count by ({identity}) ({reference})"
    return [
        Alert(
            "SpecDecodePositionZeroCollapse",
            f"{position0} <= {config.collapse_position0}"
            f" and on({by}) {rec('mean_acceptance_length')} <= {config.collapse_acceptance_length} and {traffic}",
            f"The drafter on {server(config)} is effectively broken",
            f"Only {{{{ $value | humanizePercentage }}}} of drafts get their first token accepted and L is at most "
            f"{config.collapse_acceptance_length}: the misconfigured-drafter signature (stale config.json, wrong target layers).",
            rank=Rank.COLLAPSE,
            keep_firing=True,
        ),
        dropped,
        Alert(
            "SpecDecodeAcceptanceLengthLow",
            f"{rec('mean_acceptance_length')} < {config.acceptance_length_floor} and {traffic}",
            f"Speculative decoding barely pays off on {server(config)}",
            f"Mean acceptance length has been {{{{ $value | printf \"%.2f\" }}}} tokens per step over {config.rate_window} "
            f"(floor {config.acceptance_length_floor}): most drafted tokens are rejected.",
            rank=Rank.LOW,
            keep_firing=True,
        ),
        below_reference,
        Alert(
            "SpecDecodeWastedPositions",
            f"min by ({by}) ({rec('position_acceptance')}) < {config.wasted_position_acceptance} and {traffic}",
            f"Trailing draft positions are wasted on {server(config)}",
            f"The last drafted position is accepted in {{{{ $value | humanizePercentage }}}} of drafts (under "
            f"{config.wasted_position_acceptance:.0%}): those positions cost more than they return. Reduce num_speculative_tokens.",
            rank=Rank.WASTED,
        ),
        Alert(
            "SpecDecodeDataAbsent",
            data_absent,
            f"{where(config)} ({{{{ $labels.model_name }}}}) generates tokens but drafts none",
            "The server serves traffic but its spec-decode counters are absent or flat although "
            + ("the rules' vllm_selector names it" if config.vllm_selector else
               f"its job drafted within the last {config.reference_hold}")
            + ": speculative decoding was turned off, is misconfigured, or its drafter stopped proposing.",
        ),
        *_payoff_alerts(config),
        *_sidecar_alerts(config),
        *_integration_alerts(config),
    ]


def _held_back(config: MixinConfig, alert: Alert, alerts: list[Alert]) -> str:
    """`unless` the same server has a higher-ranked alert pending or firing: the lower one waits (its `for:` restarts)."""
    if alert.rank is None:
        return alert.expr
    rank = alert.rank
    higher = [other.name for other in alerts if other.rank is not None and other.rank > rank]
    if not higher:
        return alert.expr
    pending_or_firing = read(config, "ALERTS", f'alertname=~"{"|".join(higher)}"')
    return f"({alert.expr}) unless on({', '.join(incident_labels(config))}) {pending_or_firing}"


def _stable(config: MixinConfig, alert: Alert, expr: str) -> str:
    """The alert's labels as they stay across a restart: without the folded per-source labels, and
    without `instance` where the pod names the server (a replaced pod comes back with a new address)."""
    dropped = list(alert.fold)
    place = place_label(config)
    if place:
        expr = (f'label_replace(label_replace({expr}, "{FOLDED_TARGET}", "$1", "instance", "(.*)"), '
                f'"instance", "", "{place}", ".+")')
        dropped.append(FOLDED_TARGET)
    if not dropped:
        return expr
    return f"{alert.fold_with} without ({', '.join(dropped)}) ({expr})"


def render(config: MixinConfig, alert: Alert, alerts: list[Alert]) -> dict[str, Any]:
    settings = config.alert(alert.name)
    rule: dict[str, Any] = {"alert": alert.name, "expr": _stable(config, alert, _held_back(config, alert, alerts)), "for": settings.for_}
    if alert.keep_firing:  # Prometheus >= 2.42
        rule["keep_firing_for"] = config.keep_firing_for
    rule["labels"] = {**config.alert_labels, "severity": settings.severity}
    rule["annotations"] = {"summary": alert.summary, "description": alert.description, "runbook_url": config.runbook(alert.name)}
    return rule


def alerts(config: MixinConfig) -> list[dict[str, Any]]:
    """Rendered, the ranked ones first and from the highest rank down: a rule sees the ALERTS the rules
    before it in its group wrote at the same evaluation, so a lower alert waits from the very evaluation
    a higher one goes pending."""
    written = sorted(listing(config), key=lambda alert: -alert.rank if alert.rank is not None else 1)
    return [render(config, alert, written) for alert in written]


def ranks(config: MixinConfig) -> dict[str, int]:
    """Alert name → rank, for the ranked acceptance alerts (inhibition.py)."""
    return {alert.name: alert.rank for alert in listing(config) if alert.rank is not None}


def _payoff_alerts(config: MixinConfig) -> list[Alert]:
    """Pay-off at load (the sidecar's measured speed-up over plain decoding, one alert per server: the lowest
    of its sources) and how much of decoding speculates (from vLLM's own counters: no sidecar needed)."""
    incident = incident_labels(config)
    window = f'window="{config.sidecar_judged_window}"'
    speedup = sidecar_metric(config, names.PAYOFF_SPEEDUP.name, window)
    running = _first_value(f"max({names.PAYOFF_RUNNING.name}{{MATCHERS, {window}}})", incident,
                           ' at {{ . | first | value | printf "%.0f" }} running requests')
    even = _first_value(f"min({names.BREAK_EVEN_RUNNING.name}{{MATCHERS}})", incident,
                        '; it pays below about {{ . | first | value | printf "%.0f" }} running requests')
    best = _first_value(f"min({names.PAYOFF_BEST_K.name}{{MATCHERS, {window}}})", incident,
                        '; the measured step costs favour k = {{ . | first | value | printf "%.0f" }} at this load')
    counters = vllm_counters(config)
    by = ", ".join(counters.by)
    rw = config.rate_window
    generated = f"sum by ({by}) (rate({vllm_metric(config, names.VLLM_GENERATION_TOKENS.sample_name)}[{rw}]))"
    drafts = f"sum by ({by}) (rate({counters.drafts}[{rw}]))"
    accepted = f"sum by ({by}) (rate({counters.accepted}[{rw}]))"
    return [
        Alert(
            "SpecDecodeSlowerThanPlain",
            f"{speedup} < {config.slower_than_plain:g}",
            f"Speculative decoding is slower than plain decoding on {server(config)}",
            f"At this load the server emits {{{{ $value | printf \"%.2f\" }}}}× the tokens per second plain decoding emits{running} "
            f"(the sidecar's {config.sidecar_judged_window} window against its plain-decoding calibration){even}{best}: verifying the "
            "drafts costs more than they return. Lower num_speculative_tokens for large batches (num_speculative_tokens_per_batch_size) "
            "or turn speculation off above the break-even load.",
            # explained by a collapse, a drop or a low length of the same server; it explains the sidecar's own drop view
            rank=Rank.SLOWER_THAN_PLAIN,
            fold=SIDECAR_SOURCE,
            fold_with="min",
        ),
        Alert(
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
