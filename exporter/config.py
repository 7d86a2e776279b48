"""Typed settings: CLI flags and environment variables land here, plus the optional config file.

The config file (TOML, `--config`) holds what is too detailed for flags:

    [health]                 # every field of verdict.HealthThresholds
    degraded_relative_drop = 0.3

    [draft_cost.eagle3]      # the step-cost model per drafter method (exporter/judge/cost.py)
    per_token = 0.03
    verify_per_token = 0.01

    [draft_cost.model."Qwen/Qwen3-8B"]   # or per served model (series), which wins over the method
    per_block = 0.1
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

DEFAULT_PORT = 9847  # chosen outside the ports of the well-known exporters (9100 node, 9090 prometheus, …)
DEFAULT_LISTEN = f"0.0.0.0:{DEFAULT_PORT}"
DEFAULT_WINDOWS = ("1m", "5m", "1h")

LogFormat = Literal["auto", "plain", "docker", "cri"]  # container framing of a log: detect per file, or one of three
ENGINES = ("vllm", "llamacpp", "trtllm", "sglang")  # the servers whose /metrics parse/exposition.py reads (serve --engine)
LOG_FORMATS: tuple[LogFormat, ...] = ("auto", "plain", "docker", "cri")


@dataclass(frozen=True, slots=True)
class HealthThresholds:
    """Every knob of the verdict; all are configuration (`[health]` in the config file)."""

    # Fewer drafts than this in a window is not enough evidence for any verdict.
    min_drafts: int = 50
    # broken: mean acceptance length at most this …
    broken_max_mean_acceptance_length: float = 1.3
    # … and position-0 acceptance at most this (a working drafter reaches ≥ 0.5 on most traffic).
    broken_max_position0_acceptance: float = 0.25
    # degraded: L − 1 below (1 − this) × the baseline window's L − 1 …
    degraded_relative_drop: float = 0.3
    # … or L below this absolute floor (0 disables the floor).
    degraded_min_mean_acceptance_length: float = 0.0
    # wasteful: the speed-up at the recommended k' beats the one at k by more than this fraction.
    wasteful_min_gain: float = 0.03


@dataclass(frozen=True)
class DraftCost:
    per_token: float = 0.04
    per_block: float = 0.0
    verify_per_token: float = 0.01

    def step(self, k: int, drafted: float | None = None) -> float:
        """The cost of one step drafting up to k tokens, relative to a plain target step. `drafted`
        (T/D, the tokens a draft actually held) caps what is charged: an n-gram or suffix drafter
        allowed k = 24 that drafts 2.55 tokens a step pays for 2.55, never for 24."""
        tokens = k if drafted is None else min(float(k), drafted)
        return 1.0 + (self.per_block if k > 0 else 0.0) + (self.per_token + self.verify_per_token) * tokens

    def describe(self) -> str:
        parts = []
        if self.per_block:
            parts.append(f"{self.per_block:g} per drafted block")
        if self.per_token:
            parts.append(f"{self.per_token:g} per draft token")
        parts.append(f"{self.verify_per_token:g} per verified token")
        return "step cost 1 + " + " + ".join(parts) + " (in target steps)"


# Keys are vLLM's `SpeculativeMethod` names (speculative.py:60 in 0.24, :74 in 0.33). Every
# model-specific MTP type (`deepseek_mtp`, `qwen3_next_mtp`, … 28 in 0.33, normalised to `mtp` by
# vLLM) costs as `mtp`; see DeriveSettings.cost_for. medusa and mlp_speculator exist up to vLLM
# 0.32 (removed in 0.33) and stay for servers that still run them.
DEFAULT_COSTS: dict[str, DraftCost] = {
    "ngram": DraftCost(per_token=0.0, per_block=0.005),
    "ngram_gpu": DraftCost(per_token=0.0, per_block=0.005),
    "suffix": DraftCost(per_token=0.0, per_block=0.005),
    "eagle": DraftCost(per_token=0.04),
    "eagle3": DraftCost(per_token=0.04),
    "mtp": DraftCost(per_token=0.04),
    "medusa": DraftCost(per_token=0.0, per_block=0.04),
    "mlp_speculator": DraftCost(per_token=0.02),  # small MLP heads run once per draft token
    "dflash": DraftCost(per_token=0.0, per_block=0.08),
    "dspark": DraftCost(per_token=0.0, per_block=0.08),  # a block drafter like dflash (k from its block size)
    "draft_model": DraftCost(per_token=0.08),
}
MTP_SUFFIX = "_mtp"
FALLBACK_COST = DraftCost()  # method unknown: an EAGLE-like head


@dataclass(frozen=True, slots=True)
class PlainPoint:
    """Plain decoding at one load: `running` requests emitted `tokens_per_second` (a calibration band)."""

    running: float
    tokens_per_second: float
    intervals: int = 0  # stats intervals behind it


@dataclass(frozen=True, slots=True)
class PlainCalibration:
    """How fast this server decodes without speculation, by load (`specdecode-exporter calibrate`,
    made from a plain run's or replica's own log): what a speculative server's throughput is
    compared with (judge/payoff.py)."""

    points: tuple[PlainPoint, ...]  # by running, ascending
    source: str = ""  # what it was made from, for the report
    model: str | None = None
    server_version: str | None = None


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the key and the value."""


@dataclass(frozen=True)
class DeriveSettings:
    """What the derive layer needs beyond the data: costs and verdict thresholds."""

    thresholds: HealthThresholds = field(default_factory=HealthThresholds)
    method_costs: Mapping[str, DraftCost] = field(default_factory=lambda: dict(DEFAULT_COSTS))
    model_costs: Mapping[str, DraftCost] = field(default_factory=dict)
    draft_token_cost_override: float | None = None  # --draft-token-cost: per_token for every series
    health_window: str = "5m"  # the window `specdecode_health` judges; the longest is its baseline
    stale_after: float = 300.0  # a source down this long stops exporting windowed gauges and a verdict
    calibration: PlainCalibration | None = None  # plain decoding by load (--calibration): the pay-off estimate's other half

    def cost_for(self, method: str | None, model_name: str | None = None) -> DraftCost:
        """The step-cost model of a series: by model, else by drafter method, else the fallback."""
        if model_name is not None and model_name in self.model_costs:
            cost = self.model_costs[model_name]
        elif method is not None and method in self.method_costs:
            cost = self.method_costs[method]
        elif method is not None and method.endswith(MTP_SUFFIX) and "mtp" in self.method_costs:
            cost = self.method_costs["mtp"]
        else:
            cost = FALLBACK_COST
        if self.draft_token_cost_override is not None:
            cost = dataclasses.replace(cost, per_token=self.draft_token_cost_override)
        return cost


@dataclass(frozen=True, slots=True)
class ExpositionSettings:
    """How much of what the sidecar derives goes onto /metrics (issue 19: a lean exposition).

    Counters are the truth and Prometheus computes rates from them, so by default the derived
    gauges are exported for one window only (the health window), the speed-up only for the
    recommended and the running k, and the conditional acceptance not at all (the recording rules
    compute it from the per-position counters). Everything else stays reachable by a flag:
    `--derived-windows all --speedup-candidates all --conditional-gauges` is the old exposition.
    """

    derived_windows: tuple[str, ...] = ()  # () = the health window only; ("all",) = every window
    speedup_all: bool = False  # expected speed-up for every candidate k 0..k, not just recommended and running
    conditional: bool = False  # specdecode_position_conditional_acceptance_ratio per derived window
    max_age: float = 1.0  # /metrics may answer with a body this many seconds old (kept young in the background); 0: per request

    def windows(self, every: list[str], health: str | None) -> list[str]:
        """The windows (of `every`, in its order) that get derived gauges."""
        if "all" in self.derived_windows:
            return list(every)
        wanted = set(self.derived_windows) if self.derived_windows else {health}
        return [name for name in every if name in wanted]


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
    pairs: tuple[tuple[str, str], ...] = ()  # upstreams that are the same server: (target URL or plugin dir, log path or target URL)
    plugin_dirs: tuple[str, ...] = ()  # directories of our vLLM plugin's records
    from_start: bool = False
    log_timezone: str | None = None  # --log-timezone: the zone of vLLM's local stamps (intervals/clock.py parse_zone); None: learned
    log_format: LogFormat = "auto"
    listen: str = DEFAULT_LISTEN
    windows: Mapping[str, float] = field(default_factory=dict)
    poll_interval: float = 1.0
    file_events: bool = True  # inotify wake-ups; off: polling only
    model_name: str | None = None
    max_line_bytes: int = 1 << 20
    max_series: int = 1000
    state_dir: str | None = None
    web_config_file: str | None = None
    reference_hold: float = 7 * 86400.0  # degraded longer than this becomes the new normal; 0: never
    reference_window: float = 86400.0  # healthy traffic pooled into each series' reference
    reference_min_drafts: int = 1000  # a reference judges once it holds this many drafts
    reference_recovery: float = 900.0  # an unhealthy series' healthy verdicts must last this long to count as recovered
    derive: DeriveSettings = field(default_factory=DeriveSettings)
    exposition: ExpositionSettings = field(default_factory=ExpositionSettings)

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
    path: str | None, cost_override: float | None = None, health_window: str = "5m", stale_after: float = 300.0,
    calibration: PlainCalibration | None = None,
) -> DeriveSettings:
    """Read `[health]` and `[draft_cost]` from a TOML file (or defaults when no file)."""
    if path is None:
        return DeriveSettings(draft_token_cost_override=cost_override, health_window=health_window, stale_after=stale_after,
                              calibration=calibration)
    import tomllib  # only with --config: every command's start-up counts (analyze is timed against grep)

    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"--config: cannot read {path!r}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"--config: {path!r} is not valid TOML: {error}") from None
    unknown = set(data) - {"health", "draft_cost"}
    if unknown:
        raise ConfigError(f"--config: unknown section(s) {sorted(unknown)} in {path!r}")
    costs = _costs(data.get("draft_cost", {}))
    return DeriveSettings(
        thresholds=_thresholds(data.get("health", {})),
        method_costs=costs["method_costs"],
        model_costs=costs["model_costs"],
        draft_token_cost_override=cost_override,
        health_window=health_window,
        stale_after=stale_after,
        calibration=calibration,
    )


def _thresholds(section: Mapping[str, object]) -> HealthThresholds:
    defaults = HealthThresholds()
    values: dict[str, Any] = {}
    for key, raw in section.items():
        if key not in HealthThresholds.__dataclass_fields__:
            raise ConfigError(f"[health] {key}: unknown threshold (known: {sorted(HealthThresholds.__dataclass_fields__)})")
        expected = type(getattr(defaults, key))
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or (expected is int and not isinstance(raw, int)):
            raise ConfigError(f"[health] {key}: expected a number of type {expected.__name__}, got {raw!r}")
        values[key] = expected(raw)
    return dataclasses.replace(defaults, **values)


def _costs(section: Mapping[str, Any]) -> dict[str, dict[str, DraftCost]]:
    """`[draft_cost.<method>]` and `[draft_cost.model."<name>"]` tables → DraftCost objects."""
    if not isinstance(section, dict):
        raise ConfigError("[draft_cost] must be a table")
    methods = dict(DEFAULT_COSTS)
    models: dict[str, DraftCost] = {}
    for key, table in section.items():
        if key == "model":
            if not isinstance(table, dict):
                raise ConfigError('[draft_cost.model] must hold tables like [draft_cost.model."my-model"]')
            for model, model_table in table.items():
                models[model] = _cost(f'draft_cost.model."{model}"', model_table, methods.get("", FALLBACK_COST))
        else:
            methods[key] = _cost(f"draft_cost.{key}", table, methods.get(key, FALLBACK_COST))
    return {"method_costs": methods, "model_costs": models}


def _cost(where: str, table: Any, base: DraftCost) -> DraftCost:
    if not isinstance(table, dict):
        raise ConfigError(f"[{where}] must be a table of per_token, per_block, verify_per_token")
    values: dict[str, float] = {}
    for name, raw in table.items():
        if name not in DraftCost.__dataclass_fields__:
            raise ConfigError(f"[{where}] {name}: unknown (known: per_token, per_block, verify_per_token)")
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw < 0:
            raise ConfigError(f"[{where}] {name}: expected a number ≥ 0, got {raw!r}")
        values[name] = float(raw)
    return dataclasses.replace(base, **values)


def parse_duration(text: str) -> float:
    """'30s', '5m', '1h', '1d' or plain seconds → seconds; ValueError names the bad value."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    raw = text.strip()
    try:
        value = float(raw[:-1]) * units[raw[-1]] if raw and raw[-1] in units else float(raw)
    except ValueError:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 5m, 1h)") from None
    if value <= 0:
        raise ValueError(f"duration must be positive: {text!r}")
    return value
