"""The long-memory reference of the drop-off alert on raw vLLM counters (no sidecar needed).

A drop that lasts days must be reported for days, so the reference cannot be "the last hour": it
would learn the drop within the hour. Per server and speculative config it is the best level that
config reached, each level pooled over a day, within the hold:

    L_k          = 1 + rate(accepted) / rate(drafts), keyed by k           (every evaluation)
    pooled       = 1 + Σ accepted_k / Σ drafts_k over `reference_pool`     (numerator and
                   denominator summed first, never averaged ratios; only once the config has
                   existed `reference_settle` and drafted `min_drafts_per_second` on average)
    reference    = max_over_time(pooled[reference_hold])

Why each part:
- A maximum cannot learn a drop: degraded days pool lower and are outvoted by the healthy one
  until it leaves the hold, so a drop alerts for the whole hold (7 days by default) and is then
  the new normal. A day-long pool is what makes the maximum safe: a busy hour of easy prompts
  moves a day's pool by little, and a day holds the whole daily traffic mix.
- The key is a stable identity, never the pod's address: (`identity_labels` — namespace and job
  by default —, model_name, engine, any `vllm_config_labels`, k), pooled across every replica
  (Σ over replicas, then over time). A rollout replaces every pod and `instance`, but not the
  key: the new pods are judged against the normal their predecessors set, so a rollout that
  ships a worse drafter alerts. Each server's current L is compared with its identity's
  reference, so of three replicas the one that degrades alerts, alone. vLLM's /metrics names k
  only through its position series, so k is the number of those series. A new k starts a new
  reference from nothing; the old one stays visible beside it for the hold. A server's first
  `config_change_guard` of rates at a k is skipped (a rate window across the restart holds the
  old config's traffic). Method or drafter changes with the same k keep the reference unless a
  config label tells them apart.
- A restart keeps the reference: rate() handles the counter reset and the key does not change.
- A lull cannot set a reference (average draft floor) and cannot alert (the alert's traffic floor).

The sidecar holds the same definition (exporter/state/reference.py: the best day of healthy
traffic within the hold); tests/test_normal.py holds the two equal on the same generated days.
Only the sidecar can freeze on a drop, so only the rule keeps a config's first hours as candidates.
"""

from __future__ import annotations

from typing import Any

from exporter import metric_names as names
from exporter.mixin.config import MixinConfig
from exporter.mixin.counters import Counters
from exporter.mixin.scope import read

K_LABEL = "num_speculative_tokens"
IDENTITY_LEVEL = "identity_model_engine_k"


def keyed_by(config: MixinConfig) -> tuple[str, ...]:
    """The labels of one reference: the stable identity, model, engine, config labels, then k."""
    return (*dict.fromkeys((*config.identity_labels, *names.VLLM_DRAFTS.labels, *config.vllm_config_labels)), K_LABEL)


def reference_names(config: MixinConfig, counters: Counters) -> dict[str, str]:
    """Record names at level `<level>_k` (each server's labels plus k) and `identity_model_engine_k`
    (the key, pooled across replicas), following rules.py's convention."""
    lvl, ident, m, w = f"{counters.level}_k", IDENTITY_LEVEL, counters.metric, config.rate_window
    return {
        "drafts": f"{lvl}:{m}_drafts:rate{w}",
        "accepted": f"{lvl}:{m}_accepted_tokens:rate{w}",
        "mean_acceptance_length": f"{lvl}:{m}_mean_acceptance_length:ratio_rate{w}",
        "identity_drafts": f"{ident}:{m}_drafts:rate{w}",
        "identity_accepted": f"{ident}:{m}_accepted_tokens:rate{w}",
        "pooled": f"{ident}:{m}_mean_acceptance_length:ratio_pooled{config.reference_pool}",
        # not named after its windows: demo and production rule sets share one dashboard
        "reference": f"{ident}:{m}_mean_acceptance_length:ratio_reference",
    }


def _rule(record: str, expr: str) -> dict[str, Any]:
    return {"record": record, "expr": expr}


def keyed_rules(config: MixinConfig, counters: Counters, n: dict[str, str]) -> list[dict[str, Any]]:
    """Rates keyed by k, appended to the group of `counters` (they read its rate and k records `n`)."""
    r = reference_names(config, counters)
    by = ", ".join(counters.by)
    k = read(config, n["k"])
    # the same k now and `config_change_guard` ago (`and` matches every label, k included)
    guarded_k = f"({k} and {k} offset {config.config_change_guard})"
    return [
        _rule(r["drafts"], f"{read(config, n['drafts'])} * on({by}) group_left({K_LABEL}) {guarded_k}"),
        _rule(r["accepted"], f"{read(config, n['accepted'])} * on({by}) group_left({K_LABEL}) {guarded_k}"),
        _rule(r["mean_acceptance_length"], f"1 + {read(config, r['accepted'])} / ({read(config, r['drafts'])} > 0)"),
        # the key's rates: every replica's summed, numerators and denominators apart
        _rule(r["identity_drafts"], f"sum by ({', '.join(keyed_by(config))}) ({read(config, r['drafts'])})"),
        _rule(r["identity_accepted"], f"sum by ({', '.join(keyed_by(config))}) ({read(config, r['accepted'])})"),
    ]


def reference_rules(config: MixinConfig, counters: Counters) -> list[dict[str, Any]]:
    r, pool = reference_names(config, counters), config.reference_pool
    drafts, accepted = read(config, r["identity_drafts"]), read(config, r["identity_accepted"])
    pooled = (
        f"1 + sum_over_time({accepted}[{pool}]) / (sum_over_time({drafts}[{pool}]) > 0)"
        # a lull's few drafts never set a reference …
        f" and avg_over_time({drafts}[{pool}]) >= {config.min_drafts_per_second:g}"
        # … nor a config younger than the settle time
        f" and {drafts} offset {config.reference_settle}"
    )
    return [
        _rule(r["pooled"], pooled),
        _rule(r["reference"], f"max_over_time({read(config, r['pooled'])}[{config.reference_hold}])"),
    ]


def reference_group(config: MixinConfig, counters: Counters) -> dict[str, Any]:
    return {"name": "specdecode-vllm-reference.rules", "interval": config.reference_interval, "rules": reference_rules(config, counters)}
