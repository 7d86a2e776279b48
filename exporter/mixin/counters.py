"""Where each family of spec-decode counters lives (vLLM's own, or the sidecar's), and how its series group.

rules.py, reference.py, alerts.py and dashboards.py all read it; it reads only the catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter import metric_names as names
from exporter.mixin.config import MixinConfig


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
    model_by: tuple[str, ...] = ("model_name",)  # the model-level pooling labels


def selector(*matchers: str) -> str:
    """`{a, b}` of the non-empty matchers, or nothing."""
    kept = [m for m in matchers if m]
    return "{" + ", ".join(kept) + "}" if kept else ""


def _unique(*labels: str) -> tuple[str, ...]:
    """Labels in order, each once (a topology label may repeat one the series has anyway)."""
    return tuple(dict.fromkeys(labels))


def server_labels(config: MixinConfig) -> tuple[str, ...]:
    """What tells one vLLM server from another: its scrape target and where it runs."""
    return _unique("job", "instance", *config.topology_labels)


def vllm_counters(config: MixinConfig) -> Counters:
    sel = selector(config.vllm_selector)
    return Counters(
        metric="vllm_spec_decode",
        drafts=names.VLLM_DRAFTS.sample_name + sel,
        draft_tokens=names.VLLM_DRAFT_TOKENS.sample_name + sel,
        accepted=names.VLLM_ACCEPTED_TOKENS.sample_name + sel,
        per_position=names.VLLM_ACCEPTED_PER_POSITION.sample_name + sel,
        by=_unique(*server_labels(config), *names.VLLM_DRAFTS.labels, *config.vllm_config_labels),
        level="instance_model_engine",
    )


def sidecar_counters(config: MixinConfig) -> Counters:
    sel = selector(config.sidecar_selector)
    return Counters(
        metric="specdecode",
        drafts=names.DRAFTS.sample_name + sel,
        draft_tokens=names.DRAFT_TOKENS.sample_name + sel,
        accepted=names.ACCEPTED_TOKENS.sample_name + sel,
        per_position=names.ACCEPTED_PER_POSITION.sample_name + sel,
        by=_unique(*server_labels(config), "upstream", "source", "model_name", "engine"),
        level="upstream_model_engine",
        model_by=("model_name", "source"),  # log and /metrics of one server must never be summed together
    )
