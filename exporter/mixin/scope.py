"""What one copy of the mixin reads, and what tells one incident from another.

A copy belongs to a tenant: the namespace of [tenant]. Every selector it writes — raw vLLM and
sidecar metrics, and every recording rule it reads back — carries `namespace="<tenant>"`, so two
teams' copies in one Prometheus never read (or record over, or alert on) each other's series. The
records keep `namespace` (model-level ones too), so the series two copies write never collide.

Nothing here knows a metric: rules.py, reference.py, alerts.py and dashboards.py read through
`read()`, so a rule or alert added later is scoped without asking.
"""

from __future__ import annotations

from exporter.mixin.config import MixinConfig


def selector(*matchers: str) -> str:
    """`{a, b}` of the non-empty matchers, or nothing."""
    kept = [m for m in matchers if m]
    return "{" + ", ".join(kept) + "}" if kept else ""


def tenant(config: MixinConfig) -> str:
    """The tenant's matcher, or "" for a copy that reads every namespace."""
    return f'namespace="{config.namespace}"' if config.namespace else ""


def read(config: MixinConfig, name: str, *matchers: str) -> str:
    """A metric or record as this copy reads it: the tenant's series only, with any further matchers."""
    return name + selector(tenant(config), *matchers)


def tenancy_labels(config: MixinConfig) -> tuple[str, ...]:
    """Labels every record keeps, however far it pools: the namespace, where the scrape sets one."""
    return ("namespace",) if "namespace" in config.topology_labels else ()


def place_label(config: MixinConfig) -> str | None:
    """The label that names where a server runs and survives its restarts (the pod), if the scrape sets one."""
    return config.topology_labels[-1] if config.topology_labels else None


def incident_labels(config: MixinConfig) -> tuple[str, ...]:
    """One server's model and engine, as both vLLM's and the sidecar's alerts carry it: the labels that
    fold, suppress and inhibit one incident's alerts into one page (the pod, where there is one: vLLM
    and its sidecar share it; else the scrape target, which they do not)."""
    return (*(config.topology_labels or ("instance",)), "model_name", "engine")
