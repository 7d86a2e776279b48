"""Command line: `serve`, `analyze`, `version`. Every flag is also a SPECDECODE_<FLAG> env var.

`main()` only parses; the work happens in `serve.run(settings)` and `analyze.analyze(...)`.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import click

from exporter.analyze import AnalyzeOptions, analyze, sample_log_path
from exporter.config import DEFAULT_LISTEN, DEFAULT_WINDOWS, ConfigError, Settings, load_derive_settings, parse_listen
from exporter.export import VERSION
from exporter.report_format import render_csv, render_table
from exporter.sources.container import LOG_FORMATS
from exporter.parse.exposition import ENGINES
from exporter.sources.targets import TargetsError, default_pairs, target_from_url
from exporter.window import parse_duration


def _env(name: str) -> str:
    return "SPECDECODE_" + name.upper().replace("-", "_")


def option(*decls: str, **kwargs: Any):  # type: ignore[no-untyped-def]
    """click.option with the SPECDECODE_* env var named after the long flag, shown in --help."""
    long_name = next(d for d in decls if d.startswith("--")).split("/")[0][2:]
    return click.option(*decls, envvar=_env(long_name), show_envvar=True, **kwargs)


def _derive_options(func):  # type: ignore[no-untyped-def]
    """Options shared by `serve` and `analyze`: how numbers are judged."""
    func = option("--config", "config_path", type=click.Path(dir_okay=False), help="TOML file with [health] thresholds and [draft_token_cost] per method.")(func)
    func = option("--draft-token-cost", type=click.FloatRange(min=0.0), help="Cost of one draft token relative to one target step, for every method (overrides the per-method table).")(func)
    func = option("--model-name", help="model_name label to use instead of the served model name found in the log.")(func)
    func = option("--log-format", type=click.Choice(LOG_FORMATS), default="auto", show_default=True, help="Container framing of the log: docker json-file, Kubernetes CRI, plain, or detect per file.")(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info", show_default=True, help="Verbosity of the sidecar's own log (stderr).")
@click.version_option(VERSION, prog_name="specdecode-exporter")
def main(log_level: str) -> None:
    """Is speculative decoding paying off? Metrics, verdicts and advice from vLLM logs."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=False, dir_okay=False, allow_dash=True))
@option("--format", "output_format", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True, help="Report format.")
@option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: only on a terminal).")
@_derive_options
def analyze_cmd(paths: tuple[str, ...], output_format: str, progress: bool | None, config_path: str | None,
                draft_token_cost: float | None, model_name: str | None, log_format: str) -> None:
    """Report per-position acceptance, L, α, recommended k and verdict from whole log files.

    PATHS are vLLM logs (plain, or .gz; `-` for stdin). Without PATHS a real vLLM 0.24.0 log
    shipped with the package is analysed.
    """
    if not paths:
        click.echo("no PATH given: analysing the built-in sample (a real vLLM 0.24.0 log, draft_model, k=8)", err=True)
        paths = (sample_log_path(),)
    for path in paths:
        if path != "-":
            try:
                open(path, "rb").close()
            except OSError as error:
                raise click.BadParameter(f"cannot read {path!r}: {error.strerror}", param_hint="PATHS") from None
    try:
        settings = load_derive_settings(config_path, draft_token_cost)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    report = analyze(list(paths), settings, AnalyzeOptions(log_format=log_format, model_name=model_name, progress=progress))  # type: ignore[arg-type]
    if output_format == "json":
        click.echo(json.dumps(report, indent=2))
    elif output_format == "csv":
        click.echo(render_csv(report), nl=False)
    else:
        click.echo(render_table(report), nl=False)


analyze_cmd.name = "analyze"


def _pairs(values: tuple[str, ...]) -> dict[str, str]:
    pairs = {}
    for value in values:
        log_path, sep, url = value.partition("=")
        if not sep or not log_path or not url:
            raise ConfigError(f"--pair: expected LOG=URL, got {value!r}")
        pairs[target_from_url(url).url] = log_path
    return pairs


def _windows(values: tuple[str, ...]) -> dict[str, float]:
    names = [part.strip() for value in values for part in value.split(",") if part.strip()]
    try:
        return {name: parse_duration(name) for name in names}
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--window") from None


@main.command()
@option("--log", "logs", multiple=True, help="vLLM log to follow: a path, a glob, or - for stdin. Repeatable.")
@option("--target", "targets", multiple=True, help="Server /metrics URL to scrape (http://host:port/metrics, or host:port). Repeatable.")
@option("--targets-file", type=click.Path(dir_okay=False), help="Prometheus file_sd targets file (JSON or YAML), reloaded when it changes.")
@option("--scrape-interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True, help="Seconds between scrapes of each target.")
@option("--scrape-timeout", type=click.FloatRange(min=0.1), default=3.0, show_default=True, help="Seconds a whole scrape may take.")
@option("--max-scrape-bytes", type=click.IntRange(min=1024), default=16 << 20, show_default=True, help="Larger /metrics answers are refused (too_large).")
@option("--engine", type=click.Choice(ENGINES), help="Force the server kind of the targets instead of detecting it from the payload.")
@option("--pair", "pairs", multiple=True, help="LOG=URL: this log and this target are the same server (config sharing, cross-check). One log + one target pair themselves.")
@option("--stale-after", default="5m", show_default=True, help="A source down this long stops exporting windowed gauges and a verdict.")
@option("--from-start", is_flag=True, help="Read existing files from their start instead of their end.")
@option("--listen", default=DEFAULT_LISTEN, show_default=True, help="host:port for /metrics, /api/v1/status and /.")
@option("--window", "windows", multiple=True, default=DEFAULT_WINDOWS, show_default=True, help="Windows of the gauges (e.g. 1m, 5m, 1h); repeatable or comma-separated.")
@option("--health-window", default="5m", show_default=True, help="Window the health verdict judges; the longest window is its baseline.")
@option("--poll-interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True, help="Seconds between checks of each file when no file event arrives.")
@option("--max-line-bytes", type=click.IntRange(min=1024), default=1 << 20, show_default=True, help="Longer lines are counted and skipped.")
@option("--max-series", type=click.IntRange(min=1), default=1000, show_default=True, help="Series cap; the least recently updated is dropped first.")
@_derive_options
def serve(logs: tuple[str, ...], targets: tuple[str, ...], targets_file: str | None, scrape_interval: float,
          scrape_timeout: float, max_scrape_bytes: int, engine: str | None, pairs: tuple[str, ...], stale_after: str,
          from_start: bool, listen: str, windows: tuple[str, ...], health_window: str,
          poll_interval: float, max_line_bytes: int, max_series: int, config_path: str | None,
          draft_token_cost: float | None, model_name: str | None, log_format: str) -> None:
    """Follow vLLM logs and scrape servers' /metrics; serve Prometheus metrics and a status API."""
    if not logs and not targets and not targets_file:
        raise click.UsageError("nothing to read: give --log, --target or --targets-file")
    try:
        stale_seconds = parse_duration(stale_after)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--stale-after") from None
    try:
        parse_listen(listen)
        derive_settings = load_derive_settings(config_path, draft_token_cost, health_window, stale_seconds)
        target_urls = tuple(target_from_url(url).url for url in targets)
        pair_map = _pairs(pairs) or default_pairs(logs, target_urls)
    except (ConfigError, TargetsError) as error:
        raise click.UsageError(str(error)) from None
    window_map = _windows(windows)
    if health_window not in window_map:
        raise click.BadParameter(f"{health_window!r} is not one of the windows {sorted(window_map)}", param_hint="--health-window")
    from exporter.serve import run  # FastAPI and uvicorn load only for `serve`

    run(
        Settings(
            logs=logs, targets=target_urls, targets_file=targets_file, scrape_interval=scrape_interval,
            scrape_timeout=scrape_timeout, max_scrape_bytes=max_scrape_bytes, engine=engine, pairs=pair_map,
            from_start=from_start, log_format=log_format, listen=listen, windows=window_map,  # type: ignore[arg-type]
            poll_interval=poll_interval, model_name=model_name, max_line_bytes=max_line_bytes,
            max_series=max_series, derive=derive_settings,
        )
    )


if __name__ == "__main__":
    main()
