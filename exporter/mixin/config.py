"""The mixin's one configuration: a TOML file, read over the shipped defaults (defaults.toml).

Every threshold, window, label and image lives in defaults.toml, with why it has its value; a
file of the operator's (or a preset in deploy/mixin/) names only what it changes. Tables merge key
by key (`[alerts.<name>]` too); a value replaces the default whole (a label map is the labels, not
more of them). An unknown table or key, or a value of the wrong type, is an error that names it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, fields
from importlib.resources import files
from pathlib import Path
from typing import Any

from exporter.config import ConfigError

DEFAULTS = "defaults.toml"


@dataclass(frozen=True)
class AlertSettings:
    for_: str  # `for:` — how long the condition holds before it fires
    severity: str


@dataclass(frozen=True)
class MixinConfig:
    """One field per key of defaults.toml (TABLES says which table each lives in), and `origin`: the
    file that was read over the defaults (its name heads every generated file)."""

    # [tenant]
    namespace: str
    # [prometheus]
    vllm_selector: str
    sidecar_selector: str
    sidecar_job: str
    alert_labels: dict[str, str]
    topology_labels: tuple[str, ...]
    identity_labels: tuple[str, ...]
    vllm_config_labels: tuple[str, ...]
    evaluation_interval: str
    # [windows]
    rate_window: str
    reference_pool: str
    reference_hold: str
    reference_settle: str
    config_change_guard: str
    reference_interval: str
    startup_budget: str
    keep_firing_for: str
    sidecar_judged_window: str
    disagreement_window: str
    log_stale: str
    # [thresholds]
    min_drafts_per_second: float
    acceptance_length_floor: float
    relative_drop: float
    collapse_position0: float
    collapse_acceptance_length: float
    wasted_position_acceptance: float
    disagreement: float
    slower_than_plain: float
    speculated_share_floor: float
    max_positions: int
    # [alerts.<name>]
    alerts: dict[str, AlertSettings]
    # [links]
    runbook_url: str
    # [dashboards]
    dashboard_title_prefix: str
    dashboard_tags: tuple[str, ...]
    # [kubernetes]
    workload: str
    replicas: int
    scrape_vllm: bool
    chart: str
    pod_selector: dict[str, str]
    monitor_labels: dict[str, str]
    alertmanager_config_labels: dict[str, str]
    prometheus_rbac: dict[str, str]
    scrapers: tuple[dict[str, str], ...]
    dashboard_labels: dict[str, str]
    dashboard_annotations: dict[str, str]
    sidecar_image: str
    vllm_image: str
    image_pull_secrets: tuple[str, ...]
    sidecar_resources: dict[str, dict[str, str]]
    vllm_resources: dict[str, dict[str, str]]
    node_selector: dict[str, str]
    tolerations: tuple[dict[str, Any], ...]
    priority_class: str
    pod_disruption_budget: dict[str, Any]
    state_storage: str
    state_storage_class: str
    model_cache_storage: str
    model_cache_claim: str
    claim_retention: dict[str, str]
    # [output] paths relative to --out; "" writes nothing of that kind
    rules_file: str
    alerts_file: str
    dashboards_dir: str
    kubernetes_dir: str
    vllm_logging_file: str
    alertmanager_file: str
    origin: str = DEFAULTS

    def alert(self, name: str) -> AlertSettings:
        try:
            return self.alerts[name]
        except KeyError:
            raise ConfigError(f"[alerts.{name}] is missing: every alert needs its `for` and `severity`") from None

    def runbook(self, alert: str) -> str:
        return self.runbook_url.format(alert=alert, anchor=alert.lower())


TABLES: dict[str, tuple[str, ...]] = {
    "tenant": ("namespace",),
    "prometheus": ("vllm_selector", "sidecar_selector", "sidecar_job", "alert_labels", "topology_labels", "identity_labels", "vllm_config_labels",
                   "evaluation_interval"),
    "windows": ("rate_window", "reference_pool", "reference_hold", "reference_settle", "config_change_guard", "reference_interval",
                "startup_budget", "keep_firing_for", "sidecar_judged_window", "disagreement_window", "log_stale"),
    "thresholds": ("min_drafts_per_second", "acceptance_length_floor", "relative_drop", "collapse_position0", "collapse_acceptance_length",
                   "wasted_position_acceptance", "disagreement", "slower_than_plain", "speculated_share_floor", "max_positions"),
    "links": ("runbook_url",),
    "dashboards": ("dashboard_title_prefix", "dashboard_tags"),
    "kubernetes": ("workload", "replicas", "scrape_vllm", "chart", "pod_selector", "monitor_labels", "alertmanager_config_labels",
                   "prometheus_rbac", "scrapers", "dashboard_labels", "dashboard_annotations", "sidecar_image", "vllm_image",
                   "image_pull_secrets", "sidecar_resources", "vllm_resources", "node_selector", "tolerations", "priority_class",
                   "pod_disruption_budget", "state_storage", "state_storage_class", "model_cache_storage", "model_cache_claim",
                   "claim_retention"),
    "output": ("rules_file", "alerts_file", "dashboards_dir", "kubernetes_dir", "vllm_logging_file", "alertmanager_file"),
}
WORKLOADS = ("vllm", "simulator", "none")  # none: the sidecar joins another chart's pods (production-stack, llm-d)
CHARTS = ("", "production-stack", "llm-d")  # the chart whose own monitor scrapes vLLM (chart_values.py)
# keys that were renamed: an old config names the new key in its error, not just "unknown"
RENAMED = {("kubernetes", "pod_monitor_labels"): "[kubernetes] monitor_labels", ("kubernetes", "prometheus_rule_labels"): "[kubernetes] monitor_labels"}


def _read(text: str, origin: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{origin}: not valid TOML: {error}") from None


def _merge(base: dict[str, Any], override: dict[str, Any], origin: str) -> dict[str, Any]:
    merged = {table: dict(values) for table, values in base.items()}
    merged["alerts"] = {name: dict(settings) for name, settings in base["alerts"].items()}
    for table, values in override.items():
        if table not in merged or not isinstance(values, dict):
            raise ConfigError(f"{origin}: unknown table [{table}] (known: {', '.join(sorted(merged))})")
        for key, value in values.items():
            if table == "alerts":
                if key not in merged["alerts"] or not isinstance(value, dict):
                    raise ConfigError(f"{origin}: unknown alert [alerts.{key}]")
                _check_alert(value, f"{origin}: [alerts.{key}]")
                merged["alerts"][key] |= value
                continue
            if (table, key) in RENAMED:
                raise ConfigError(f"{origin}: [{table}] {key} is now {RENAMED[table, key]} (one set of labels the monitoring stack selects "
                                  "our PodMonitor, our PrometheusRule and the chart's vLLM monitor by)")
            if key not in merged[table]:
                raise ConfigError(f"{origin}: unknown key {key!r} in [{table}] (known: {', '.join(sorted(merged[table]))})")
            _check_type(merged[table][key], value, f"{origin}: [{table}] {key}")
            merged[table][key] = value
    return merged


def _check_alert(value: dict[str, Any], where: str) -> None:
    unknown = set(value) - {"for", "severity"}
    if unknown or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{where}: takes only `for` and `severity`, both strings (got {value!r})")


def _check_type(default: Any, value: Any, where: str) -> None:
    expected = float if isinstance(default, float) else type(default)
    if isinstance(value, bool) != isinstance(default, bool) or not isinstance(value, (int, float) if expected is float else expected):
        raise ConfigError(f"{where} must be a {expected.__name__}, not {value!r}")


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _build(data: dict[str, Any], origin: str) -> MixinConfig:
    values: dict[str, Any] = {key: _frozen(data[table][key]) for table, keys in TABLES.items() for key in keys}
    values["origin"] = Path(origin).name
    values["alerts"] = {name: AlertSettings(for_=s["for"], severity=s["severity"]) for name, s in data["alerts"].items()}
    for name in ("min_drafts_per_second", "acceptance_length_floor", "relative_drop", "collapse_position0",
                 "collapse_acceptance_length", "wasted_position_acceptance", "disagreement", "slower_than_plain", "speculated_share_floor"):
        values[name] = float(values[name])
    config = MixinConfig(**values)
    _validate(config, origin)
    return config


def _validate(config: MixinConfig, origin: str) -> None:
    from exporter.config import parse_duration

    for field in fields(config):
        if field.name in TABLES["windows"] or field.name == "evaluation_interval":
            try:
                parse_duration(getattr(config, field.name))
            except ValueError as error:
                raise ConfigError(f"{origin}: {field.name}: {error}") from None
    if not config.runbook_url.startswith(("https://", "http://")) or ("{anchor}" not in config.runbook_url and "{alert}" not in config.runbook_url):
        raise ConfigError(f"{origin}: runbook_url must be an absolute http(s) URL with {{anchor}} or {{alert}} in it "
                          f"(a notification is read far from this repository), not {config.runbook_url!r}")
    if config.workload not in WORKLOADS:
        raise ConfigError(f"{origin}: workload must be one of {', '.join(WORKLOADS)}, not {config.workload!r}")
    if config.replicas < 1:
        raise ConfigError(f"{origin}: replicas must be at least 1")
    if not 0 < config.relative_drop < 1:
        raise ConfigError(f"{origin}: relative_drop is a fraction between 0 and 1, not {config.relative_drop}")
    if config.namespace and "namespace" not in config.topology_labels:
        raise ConfigError(f"{origin}: namespace = {config.namespace!r} scopes every selector by the `namespace` label: "
                          "list it in topology_labels (or set namespace = \"\" for a Prometheus without it)")
    if config.chart not in CHARTS:
        raise ConfigError(f"{origin}: chart must be one of {', '.join(repr(c) for c in CHARTS)}, not {config.chart!r}")
    if config.chart and config.scrape_vllm:
        raise ConfigError(f"{origin}: chart = {config.chart!r} scrapes vLLM with its own monitor: set scrape_vllm = false (a second scrape "
                          "would double every sum)")
    if not _has_registry(config.sidecar_image):
        raise ConfigError(f"{origin}: sidecar_image {config.sidecar_image!r} names no registry: a node pulls it from Docker Hub's library "
                          "and fails (ImagePullBackOff). Name the registry, e.g. ghcr.io/<org>/specdecode-exporter:<version>")
    _validate_knobs(config, origin)
    budget = sum(parse_duration(d) for d in (config.startup_budget, config.config_change_guard, config.rate_window))
    if parse_duration(config.keep_firing_for) < budget:
        raise ConfigError(f"{origin}: keep_firing_for ({config.keep_firing_for}) must cover a restart: startup_budget + config_change_guard "
                          f"+ rate_window = {budget:g} s, or every restart of a degraded server resolves its alert and pages again")


LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TOLERATION = {"operator": ("Exists", "Equal"), "effect": ("NoSchedule", "PreferNoSchedule", "NoExecute")}


def _validate_knobs(config: MixinConfig, origin: str) -> None:
    """What the Kubernetes and operator schemas leave to admission (enum values, label names): refused here, by name.
    Their structure (unknown fields, types) is the schemas' (tests/test_operator_knobs.py)."""
    for name in config.alert_labels:
        if not LABEL_NAME.fullmatch(name):
            raise ConfigError(f"{origin}: alert_labels: {name!r} is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)")
    for toleration in config.tolerations:
        for key, allowed in TOLERATION.items():
            if key in toleration and toleration[key] not in allowed:
                raise ConfigError(f"{origin}: tolerations: {key} must be one of {', '.join(allowed)}, not {toleration[key]!r}")
    for key, value in config.claim_retention.items():
        if value not in ("Retain", "Delete"):
            raise ConfigError(f"{origin}: claim_retention: {key} must be Retain or Delete, not {value!r}")


def _has_registry(image: str) -> bool:
    """Whether an image reference starts with a registry host (a dot, a port or localhost: Docker's own rule)."""
    first, _, rest = image.partition("/")
    return bool(rest) and ("." in first or ":" in first or first == "localhost")


def defaults_text() -> str:
    return files("exporter.mixin").joinpath(DEFAULTS).read_text(encoding="utf-8")


def load(path: str | Path | None = None) -> MixinConfig:
    """The shipped defaults, with the TOML file at `path` (if any) over them."""
    base = _read(defaults_text(), DEFAULTS)
    if path is None:
        return _build(base, DEFAULTS)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read the mixin config {str(path)!r}: {error.strerror}") from None
    return _build(_merge(base, _read(text, str(path)), str(path)), str(path))


DEFAULT = load()
