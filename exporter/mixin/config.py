"""The mixin's one configuration: a TOML file, read over the shipped defaults (defaults.toml).

Every threshold, window, label and image lives in defaults.toml, with why it has its value; a
file of the operator's (or a preset in deploy/mixin/) names only what it changes. Tables merge key
by key (`[alerts.<name>]` too); a value replaces the default whole (a label map is the labels, not
more of them). An unknown table or key, or a value of the wrong type, is an error that names it.
"""

from __future__ import annotations

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
    """One field per key of defaults.toml; `table` (the field's metadata) is where the key lives."""

    # [prometheus]
    vllm_selector: str
    sidecar_selector: str
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
    pod_selector: dict[str, str]
    pod_monitor_labels: dict[str, str]
    prometheus_rule_labels: dict[str, str]
    alertmanager_config_labels: dict[str, str]
    dashboard_labels: dict[str, str]
    dashboard_annotations: dict[str, str]
    sidecar_image: str
    vllm_image: str
    sidecar_resources: dict[str, dict[str, str]]
    vllm_resources: dict[str, dict[str, str]]
    state_storage: str
    state_storage_class: str
    # [output] paths relative to --out; "" writes nothing of that kind
    rules_file: str
    alerts_file: str
    dashboards_dir: str
    kubernetes_dir: str
    vllm_logging_file: str
    alertmanager_file: str

    def alert(self, name: str) -> AlertSettings:
        try:
            return self.alerts[name]
        except KeyError:
            raise ConfigError(f"[alerts.{name}] is missing: every alert needs its `for` and `severity`") from None

    def runbook(self, alert: str) -> str:
        return self.runbook_url.format(alert=alert, anchor=alert.lower())


TABLES: dict[str, tuple[str, ...]] = {
    "prometheus": ("vllm_selector", "sidecar_selector", "topology_labels", "identity_labels", "vllm_config_labels", "evaluation_interval"),
    "windows": ("rate_window", "reference_pool", "reference_hold", "reference_settle", "config_change_guard", "reference_interval",
                "keep_firing_for", "sidecar_judged_window", "disagreement_window", "log_stale"),
    "thresholds": ("min_drafts_per_second", "acceptance_length_floor", "relative_drop", "collapse_position0", "collapse_acceptance_length",
                   "wasted_position_acceptance", "disagreement", "slower_than_plain", "speculated_share_floor", "max_positions"),
    "links": ("runbook_url",),
    "dashboards": ("dashboard_title_prefix", "dashboard_tags"),
    "kubernetes": ("workload", "replicas", "scrape_vllm", "pod_selector", "pod_monitor_labels", "prometheus_rule_labels",
                   "alertmanager_config_labels", "dashboard_labels", "dashboard_annotations", "sidecar_image", "vllm_image",
                   "sidecar_resources", "vllm_resources", "state_storage", "state_storage_class"),
    "output": ("rules_file", "alerts_file", "dashboards_dir", "kubernetes_dir", "vllm_logging_file", "alertmanager_file"),
}
WORKLOADS = ("vllm", "simulator", "none")  # none: the sidecar joins another chart's pods (production-stack, llm-d)


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
