"""Where each family of spec-decode counters lives (vLLM's own, or the sidecar's), and how its series group.

rules.py, reference.py, alerts.py and dashboards.py all read it; it reads only the catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter import metric_names as names
from exporter.mixin.config import MixinConfig
from exporter.mixin.scope import read, tenancy_labels


@dataclass(frozen=True)
class Counters:
    """Where a family of spec-decode counters lives, and how its series are grouped."""

    metric: str  # metric part of the rule names: "vllm_spec_decode" | "specdecode"
    drafts: str
    draft_tokens: str
    accepted: str
    per_position: str
    by: tuple[str, ...]
    level: str
    model_by: tuple[str, ...]  # the model-level pooling labels (the namespace stays: two tenants' models never pool)


def _unique(*labels: str) -> tuple[str, ...]:
    """Labels in order, each once (a topology label may repeat one the series has anyway)."""
    return tuple(dict.fromkeys(labels))


def server_labels(config: MixinConfig) -> tuple[str, ...]:
    """What tells one vLLM server from another: its scrape target and where it runs."""
    return _unique("job", "instance", *config.topology_labels)


def vllm_metric(config: MixinConfig, name: str, *matchers: str) -> str:
    """A raw vLLM metric of this copy's servers: the tenant's, under vllm_selector."""
    return read(config, name, config.vllm_selector, *matchers)


def sidecar_metric(config: MixinConfig, name: str, *matchers: str) -> str:
    """A sidecar metric of this copy's sidecars: the tenant's, under sidecar_selector."""
    return read(config, name, config.sidecar_selector, *matchers)


def vllm_counters(config: MixinConfig) -> Counters:
    return Counters(
        metric="vllm_spec_decode",
        drafts=vllm_metric(config, names.VLLM_DRAFTS.sample_name),
        draft_tokens=vllm_metric(config, names.VLLM_DRAFT_TOKENS.sample_name),
        accepted=vllm_metric(config, names.VLLM_ACCEPTED_TOKENS.sample_name),
        per_position=vllm_metric(config, names.VLLM_ACCEPTED_PER_POSITION.sample_name),
        by=_unique(*server_labels(config), *names.VLLM_DRAFTS.labels, *config.vllm_config_labels),
        level="instance_model_engine",
        model_by=(*tenancy_labels(config), "model_name"),
    )


def sidecar_counters(config: MixinConfig) -> Counters:
    return Counters(
        metric="specdecode",
        drafts=sidecar_metric(config, names.DRAFTS.sample_name),
        draft_tokens=sidecar_metric(config, names.DRAFT_TOKENS.sample_name),
        accepted=sidecar_metric(config, names.ACCEPTED_TOKENS.sample_name),
        per_position=sidecar_metric(config, names.ACCEPTED_PER_POSITION.sample_name),
        by=_unique(*server_labels(config), "upstream", "source", "model_name", "engine"),
        level="upstream_model_engine",
        model_by=(*tenancy_labels(config), "model_name", "source"),  # log and /metrics of one server must never be summed together
    )
