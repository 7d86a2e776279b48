"""Typed settings: CLI flags and environment variables land here, plus the optional config file.

The config file (TOML, `--config`) holds what is too detailed for flags:

    [health]                 # every field of verdict.HealthThresholds
    degraded_relative_drop = 0.3

    [draft_token_cost]       # cost of one draft token relative to one target step, per method
    eagle3 = 0.04
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from exporter.sources.container import LogFormat
from exporter.verdict import HealthThresholds

DEFAULT_PORT = 9847  # chosen outside the ports of the well-known exporters (9100 node, 9090 prometheus, …)
DEFAULT_LISTEN = f"0.0.0.0:{DEFAULT_PORT}"
DEFAULT_WINDOWS = ("1m", "5m", "1h")

# Cost of drafting one token, relative to one verification step of the target. Rough defaults by
# how the drafter works: n-gram lookup is nearly free; EAGLE/MTP heads run one small layer per
# token; a separate draft model runs a whole (small) model per token; DFlash drafts a block in one
# parallel pass, so each extra position costs little. Issue #9 calibrates these.
DEFAULT_DRAFT_TOKEN_COST: Mapping[str, float] = {
    "ngram": 0.01,
    "suffix": 0.01,
    "eagle": 0.05,
    "eagle3": 0.05,
    "mtp": 0.05,
    "medusa": 0.05,
    "dflash": 0.02,
    "draft_model": 0.1,
}
FALLBACK_DRAFT_TOKEN_COST = 0.05  # method unknown


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the key and the value."""


@dataclass(frozen=True)
class DeriveSettings:
    """What the derive layer needs beyond the data: costs and verdict thresholds."""

    thresholds: HealthThresholds = field(default_factory=HealthThresholds)
    draft_token_cost: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_DRAFT_TOKEN_COST))
    draft_token_cost_override: float | None = None
    health_window: str = "5m"  # the window `specdecode_health` judges; the longest is its baseline
    stale_after: float = 300.0  # a source down this long stops exporting windowed gauges and a verdict

    def cost_for(self, method: str | None) -> float:
        """The per-draft-token cost for a drafter method (the override wins)."""
        if self.draft_token_cost_override is not None:
            return self.draft_token_cost_override
        if method is not None and method in self.draft_token_cost:
            return self.draft_token_cost[method]
        return FALLBACK_DRAFT_TOKEN_COST


@dataclass(frozen=True)
class Settings:
    """Everything `serve` runs with."""

    logs: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    targets_file: str | None = None
    scrape_interval: float = 5.0
    scrape_timeout: float = 3.0
    max_scrape_bytes: int = 16 << 20
    engine: str | None = None  # force the /metrics engine instead of detecting it
    pairs: Mapping[str, str] = field(default_factory=dict)  # metrics target URL → log path of the same server
    from_start: bool = False
    log_format: LogFormat = "auto"
    listen: str = DEFAULT_LISTEN
    windows: Mapping[str, float] = field(default_factory=dict)
    poll_interval: float = 1.0
    model_name: str | None = None
    max_line_bytes: int = 1 << 20
    max_series: int = 1000
    derive: DeriveSettings = field(default_factory=DeriveSettings)

    @property
    def host_port(self) -> tuple[str, int]:
        return parse_listen(self.listen)


def parse_listen(listen: str) -> tuple[str, int]:
    """'host:port', ':port' or '[v6]:port' → (host, port)."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--listen: expected host:port, got {listen!r}")
    return (host.strip("[]") or "0.0.0.0"), int(port)


def load_derive_settings(
    path: str | None, cost_override: float | None = None, health_window: str = "5m", stale_after: float = 300.0
) -> DeriveSettings:
    """Read `[health]` and `[draft_token_cost]` from a TOML file (or defaults when no file)."""
    if path is None:
        return DeriveSettings(draft_token_cost_override=cost_override, health_window=health_window, stale_after=stale_after)
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"--config: cannot read {path!r}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"--config: {path!r} is not valid TOML: {error}") from None
    unknown = set(data) - {"health", "draft_token_cost"}
    if unknown:
        raise ConfigError(f"--config: unknown section(s) {sorted(unknown)} in {path!r}")
    return DeriveSettings(
        thresholds=_thresholds(data.get("health", {})),
        draft_token_cost={**DEFAULT_DRAFT_TOKEN_COST, **_costs(data.get("draft_token_cost", {}))},
        draft_token_cost_override=cost_override,
        health_window=health_window,
        stale_after=stale_after,
    )


def _thresholds(section: Mapping[str, object]) -> HealthThresholds:
    defaults = HealthThresholds()
    values: dict[str, object] = {}
    for key, raw in section.items():
        if key not in HealthThresholds.__dataclass_fields__:
            raise ConfigError(f"[health] {key}: unknown threshold (known: {sorted(HealthThresholds.__dataclass_fields__)})")
        expected = type(getattr(defaults, key))
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or (expected is int and not isinstance(raw, int)):
            raise ConfigError(f"[health] {key}: expected a number of type {expected.__name__}, got {raw!r}")
        values[key] = expected(raw)
    return dataclasses.replace(defaults, **values)  # type: ignore[arg-type]


def _costs(section: Mapping[str, object]) -> dict[str, float]:
    costs = {}
    for method, raw in section.items():
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw < 0:
            raise ConfigError(f"[draft_token_cost] {method}: expected a number ≥ 0, got {raw!r}")
        costs[method] = float(raw)
    return costs
