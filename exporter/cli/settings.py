"""Flags → `Settings`: `serve`'s flags, as click hands them over, translated in one typed function.

Every flag is checked here, so a bad value is a click error naming it before anything starts;
`serve` itself only calls `serve_settings` and runs what comes back; `demo` calls it too, with
the flags it sets over serve's defaults (the simulator's log and target, its windows).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import click

from exporter.cli.options import (
    REFERENCE_HOLD,
    REFERENCE_MIN_DRAFTS,
    REFERENCE_RECOVERY,
    REFERENCE_WINDOW,
    comma_list,
    load_calibration,
    parse_windows,
    reference_rule_args,
    seconds,
)
from exporter.config import (
    DEFAULT_LISTEN,
    DEFAULT_WINDOWS,
    ConfigError,
    ExpositionSettings,
    LogFormat,
    Settings,
    load_derive_settings,
    parse_listen,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServeFlags:
    """`serve`'s flags as given: strings where the flag is a duration or a list. The defaults are the
    flags' own (cli/main.py reads them from SERVE_DEFAULTS); `demo` replaces the few it sets."""

    logs: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    targets_file: str | None = None
    plugin_dirs: tuple[str, ...] = ()
    scrape_interval: float = 5.0
    scrape_timeout: float = 3.0
    max_scrape_bytes: int = 16 << 20
    engine: str | None = None
    pairs: tuple[str, ...] = ()  # LOG=URL, as given
    stale_after: str = "5m"
    state_dir: str | None = None
    web_config_file: str | None = None
    baseline_half_life: str | None = None  # gone: warned about and ignored
    reference_hold: str = REFERENCE_HOLD
    reference_window: str = REFERENCE_WINDOW
    reference_min_drafts: int = REFERENCE_MIN_DRAFTS
    reference_recovery: str = REFERENCE_RECOVERY
    from_start: bool = False
    listen: str = DEFAULT_LISTEN
    windows: tuple[str, ...] = DEFAULT_WINDOWS
    health_window: str = "5m"
    derived_windows: tuple[str, ...] = ()
    speedup_candidates: str = "chosen"
    conditional_gauges: bool = False
    metrics_max_age: str = "1s"
    poll_interval: float = 1.0
    file_events: bool = True
    max_line_bytes: int = 1 << 20
    max_series: int = 1000
    config_path: str | None = None
    draft_token_cost: float | None = None
    model_name: str | None = None
    log_format: LogFormat = "auto"
    log_timezone: str | None = None
    calibration_path: str | None = None


SERVE_DEFAULTS = ServeFlags()


def judged_windows(windows: tuple[str, ...], health_window: str) -> dict[str, float]:
    """--window values as seconds by name; the health window must be one of them."""
    window_map = parse_windows(windows)
    if health_window not in window_map:
        raise click.BadParameter(f"{health_window!r} is not one of the windows {sorted(window_map)}", param_hint="--health-window")
    return window_map


def parse_pairs(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """--pair LOG=URL (or PLUGIN_DIR=URL, PLUGIN_DIR=LOG) as (target URL or plugin dir, log path or target URL)."""
    from exporter.sources.targets import target_from_url

    pairs = []
    for value in values:
        log_path, sep, url = value.partition("=")
        if not sep or not log_path or not url:
            raise ConfigError(f"--pair: expected LOG=URL (or PLUGIN_DIR=URL, PLUGIN_DIR=LOG), got {value!r}")
        other = target_from_url(url).url if url.startswith(("http://", "https://")) or ":" in url.split("/")[0] else url
        pairs.append((other, log_path.rstrip("/") or "/"))
    return pairs


def serve_settings(flags: ServeFlags) -> Settings:
    """The Settings `serve` runs with; a bad flag is a click usage error (or BadParameter naming it)."""
    if not flags.logs and not flags.targets and not flags.targets_file and not flags.plugin_dirs:
        raise click.UsageError("nothing to read: give --log, --target, --targets-file or --vllm-plugin-dir")
    if flags.baseline_half_life is not None:
        log.warning("--baseline-half-life is gone and ignored: the verdict judges against each series' reference (--reference-hold)")
    stale_seconds = seconds(flags.stale_after, "--stale-after")
    hold, reference_seconds, min_drafts, recovery = reference_rule_args(
        flags.reference_hold, flags.reference_window, flags.reference_min_drafts, flags.reference_recovery
    )
    # the sources load here, not at the top: yaml and watchdog would slow every command's start-up (analyze's most)
    from exporter.sources.targets import TargetsError, default_pairs, target_from_url

    try:
        parse_listen(flags.listen)
        derive_settings = load_derive_settings(flags.config_path, flags.draft_token_cost, flags.health_window, stale_seconds,
                                               load_calibration(flags.calibration_path))
        target_urls = tuple(target_from_url(url).url for url in flags.targets)
        pair_map = parse_pairs(flags.pairs) or default_pairs(flags.logs, target_urls, flags.plugin_dirs)
        if flags.web_config_file:
            from exporter.expose.websecurity import load_web_config

            load_web_config(flags.web_config_file)  # a broken file is an error at start, not at the first request
    except (ConfigError, TargetsError) as error:
        raise click.UsageError(str(error)) from None
    window_map = judged_windows(flags.windows, flags.health_window)
    derived = comma_list(flags.derived_windows)
    unknown = sorted(set(derived) - set(window_map) - {"all"})
    if unknown:
        raise click.BadParameter(f"{', '.join(unknown)} not among the windows {sorted(window_map)} (or `all`)", param_hint="--derived-windows")
    exposition = ExpositionSettings(
        derived_windows=derived,
        speedup_all=flags.speedup_candidates == "all",
        conditional=flags.conditional_gauges,
        max_age=seconds(flags.metrics_max_age, "--metrics-max-age", zero_is_off=True),
    )
    return Settings(
        logs=flags.logs, targets=target_urls, targets_file=flags.targets_file, scrape_interval=flags.scrape_interval,
        scrape_timeout=flags.scrape_timeout, max_scrape_bytes=flags.max_scrape_bytes, engine=flags.engine, pairs=tuple(pair_map),
        plugin_dirs=flags.plugin_dirs, state_dir=flags.state_dir, web_config_file=flags.web_config_file, from_start=flags.from_start,
        log_timezone=flags.log_timezone, reference_hold=hold, reference_window=reference_seconds, reference_min_drafts=min_drafts,
        reference_recovery=recovery, log_format=flags.log_format, listen=flags.listen, windows=window_map,
        poll_interval=flags.poll_interval, file_events=flags.file_events, model_name=flags.model_name,
        max_line_bytes=flags.max_line_bytes, max_series=flags.max_series, derive=derive_settings, exposition=exposition,
    )
