"""Recording rules: pooled spec-decode ratios for raw vLLM counters (no sidecar needed) and the sidecar's.

Naming follows `level:metric:operations`. Levels: `instance_model_engine` (job, instance,
model_name, engine), `upstream_model_engine` (the sidecar's series: + upstream, source), `model`,
`model_k` (model_name and num_speculative_tokens), `instance_model_engine_k` (a server's labels and
its k: the long-memory reference, mixin/reference.py), with `_position` when split by position.
Convention for vLLM's colon names: the `vllm:` prefix becomes `vllm_` inside the metric part, since
colons separate the parts of a recording rule's name — `vllm:spec_decode_num_drafts_total` rated
over 5m is `instance_model_engine:vllm_spec_decode_drafts:rate5m`.

Ratios are pooled: numerators and denominators are summed first, then divided. Denominators carry
`> 0`, so an idle series yields no sample — never 0% or 100%. Per-position rates are split by model
*and* k (the number of position series, turned into a label by count_values), so servers drafting
different k are never pooled position by position.

Every record is read back through scope.read (the tenant's namespace only) and keeps `namespace`,
model-level ones too: two teams' copies write disjoint series under the same names.
"""

from __future__ import annotations

from typing import Any

from exporter.mixin.config import MixinConfig
from exporter.mixin.counters import Counters, sidecar_counters, vllm_counters
from exporter.mixin.reference import keyed_rules, reference_group
from exporter.mixin.scope import read


def name(level: str, metric: str, operation: str) -> str:
    return f"{level}:{metric}:{operation}"


def _rule(record: str, expr: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"record": record, "expr": expr}
    if labels:
        rule["labels"] = labels
    return rule


def rule_names(counters: Counters, config: MixinConfig) -> dict[str, str]:
    """The record names of one counter family, keyed by what they hold (dashboards and alerts use these)."""
    w, lvl, m = config.rate_window, counters.level, counters.metric
    return {
        "drafts": name(lvl, f"{m}_drafts", f"rate{w}"),
        "draft_tokens": name(lvl, f"{m}_draft_tokens", f"rate{w}"),
        "accepted": name(lvl, f"{m}_accepted_tokens", f"rate{w}"),
        "wasted": name(lvl, f"{m}_wasted_draft_tokens", f"rate{w}"),
        "position_accepted": name(f"{lvl}_position", f"{m}_accepted_tokens", f"rate{w}"),
        "mean_acceptance_length": name(lvl, f"{m}_mean_acceptance_length", f"ratio_rate{w}"),
        "draft_acceptance": name(lvl, f"{m}_draft_acceptance", f"ratio_rate{w}"),
        "position_acceptance": name(f"{lvl}_position", f"{m}_position_acceptance", f"ratio_rate{w}"),
        "position_conditional": name(f"{lvl}_position", f"{m}_position_conditional_acceptance", f"ratio_rate{w}"),
        "k": name(lvl, f"{m}_num_speculative_tokens", "info"),
        "model_mean_acceptance_length": name("model", f"{m}_mean_acceptance_length", f"ratio_rate{w}"),
        "model_draft_acceptance": name("model", f"{m}_draft_acceptance", f"ratio_rate{w}"),
        "model_accepted": name("model", f"{m}_accepted_tokens", f"rate{w}"),
        "model_draft_tokens": name("model", f"{m}_draft_tokens", f"rate{w}"),
        "model_wasted": name("model", f"{m}_wasted_draft_tokens", f"rate{w}"),
        "model_k_position_accepted": name("model_k_position", f"{m}_accepted_tokens", f"rate{w}"),
        "model_k_drafts": name("model_k", f"{m}_drafts", f"rate{w}"),
        "model_k_mean_acceptance_length": name("model_k", f"{m}_mean_acceptance_length", f"ratio_rate{w}"),
        "model_k_position_acceptance": name("model_k_position", f"{m}_position_acceptance", f"ratio_rate{w}"),
        "model_k_position_conditional": name("model_k_position", f"{m}_position_conditional_acceptance", f"ratio_rate{w}"),
    }


def _conditional(config: MixinConfig, record: str, accepted: str, by: str) -> list[dict[str, Any]]:
    """c_0 = A_0/D is the position rate; c_i = A_i / A_{i-1}: position i−1's series relabelled as i."""
    rules = []
    for position in range(1, config.max_positions):
        before = read(config, accepted, f'position="{position - 1}"')
        previous = f'label_replace({before} > 0, "position", "{position}", "position", ".*")'
        # one rule per position; the static label (equal to the result's) keeps the rules distinct
        current = read(config, accepted, f'position="{position}"')
        rules.append(_rule(record, f"{current} / on({by}, position) {previous}", {"position": str(position)}))
    return rules


def counter_rules(counters: Counters, config: MixinConfig) -> list[dict[str, Any]]:
    """Rate, ratio, per-position and per-model-and-k rules for one counter family."""
    n, w = rule_names(counters, config), config.rate_window

    def r(key: str, *matchers: str) -> str:  # a record of this family, as this copy reads it back
        return read(config, n[key], *matchers)

    by = ", ".join(counters.by)
    model = ", ".join(counters.model_by)
    model_k = f"{model}, num_speculative_tokens"
    with_k = f"* on({by}) group_left(num_speculative_tokens) {r('k')}"
    rules = [
        _rule(n["drafts"], f"sum by ({by}) (rate({counters.drafts}[{w}]))"),
        _rule(n["draft_tokens"], f"sum by ({by}) (rate({counters.draft_tokens}[{w}]))"),
        _rule(n["accepted"], f"sum by ({by}) (rate({counters.accepted}[{w}]))"),
        _rule(n["position_accepted"], f"sum by ({by}, position) (rate({counters.per_position}[{w}]))"),
        _rule(n["wasted"], f"({r('draft_tokens')} > 0) - {r('accepted')}"),
        _rule(n["mean_acceptance_length"], f"1 + {r('accepted')} / ({r('drafts')} > 0)"),
        _rule(n["draft_acceptance"], f"{r('accepted')} / ({r('draft_tokens')} > 0)"),
        _rule(n["position_acceptance"], f"{r('position_accepted')} / ignoring(position) group_left() ({r('drafts')} > 0)"),
        _rule(n["position_conditional"], r("position_acceptance", 'position="0"'), {"position": "0"}),
        *_conditional(config, n["position_conditional"], n["position_accepted"], by),
        # k as a label: the number of position series each server exports
        _rule(
            n["k"],
            f'count_values by ({by}) ("num_speculative_tokens", count by ({by}) ({counters.per_position}))',
        ),
        _rule(n["model_accepted"], f"sum by ({model}) ({r('accepted')})"),
        _rule(n["model_draft_tokens"], f"sum by ({model}) ({r('draft_tokens')})"),
        _rule(n["model_wasted"], f"sum by ({model}) ({r('wasted')})"),
        _rule(
            n["model_mean_acceptance_length"],
            f"1 + sum by ({model}) ({r('accepted')}) / (sum by ({model}) ({r('drafts')}) > 0)",
        ),
        _rule(
            n["model_draft_acceptance"],
            f"sum by ({model}) ({r('accepted')}) / (sum by ({model}) ({r('draft_tokens')}) > 0)",
        ),
        _rule(n["model_k_drafts"], f"sum by ({model_k}) ({r('drafts')} {with_k})"),
        _rule(n["model_k_position_accepted"], f"sum by ({model_k}, position) ({r('position_accepted')} {with_k})"),
        _rule(
            n["model_k_mean_acceptance_length"],
            f"1 + sum by ({model_k}) ({r('accepted')} {with_k}) / ({r('model_k_drafts')} > 0)",
        ),
        _rule(
            n["model_k_position_acceptance"],
            f"{r('model_k_position_accepted')} / ignoring(position) group_left() ({r('model_k_drafts')} > 0)",
        ),
        _rule(n["model_k_position_conditional"], r("model_k_position_acceptance", 'position="0"'), {"position": "0"}),
        *_conditional(config, n["model_k_position_conditional"], n["model_k_position_accepted"], model_k),
    ]
    return rules


def recording_rule_groups(config: MixinConfig) -> list[dict[str, Any]]:
    """The vLLM group (with its k-keyed rates), the slow reference group, then the sidecar's group.

    The sidecar's counters get no reference rules: the sidecar exports its own frozen reference.
    """
    vllm = vllm_counters(config)
    vllm_rules = counter_rules(vllm, config) + keyed_rules(config, vllm, rule_names(vllm, config))
    return [
        {"name": "specdecode-vllm.rules", "interval": config.evaluation_interval, "rules": vllm_rules},
        reference_group(config, vllm),
        {"name": "specdecode-sidecar.rules", "interval": config.evaluation_interval, "rules": counter_rules(sidecar_counters(config), config)},
    ]
