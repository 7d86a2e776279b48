"""Command line: `serve`, `analyze`, `version`. Every flag is also a SPECDECODE_<FLAG> env var.

`main()` only parses; the work happens in `serve.run(settings)` and `analyze.analyze(...)`.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import click
from click.core import ParameterSource

from exporter.report.analyze import AnalyzeOptions, analyze, sample_log_path
from exporter.config import DEFAULT_LISTEN, DEFAULT_WINDOWS, ConfigError, Settings, load_derive_settings, parse_listen
from exporter.expose.metrics import VERSION
from exporter.report.formats import render_csv, render_table
from exporter.config import LOG_FORMATS
from exporter.parse.exposition import ENGINES
from exporter.sources.targets import TargetsError, default_pairs, target_from_url
from exporter.config import parse_duration

log = logging.getLogger(__name__)


def _env(name: str) -> str:
    return "SPECDECODE_" + name.upper().replace("-", "_")


def option(*decls: str, **kwargs: Any):  # type: ignore[no-untyped-def]
    """click.option with the SPECDECODE_* env var named after the long flag (or `envvar=`), shown in --help."""
    long_name = next(d for d in decls if d.startswith("--")).split("/")[0][2:]
    kwargs.setdefault("envvar", _env(long_name))
    return click.option(*decls, show_envvar=True, **kwargs)


# SPECDECODE_LOG_FORMAT once set both the readers' container framing and the simulator's output
# layout. Each now has its own variable; the old one is still read where its value says which it
# meant (the two sets of values do not overlap).
LEGACY_LOG_FORMAT_ENV = "SPECDECODE_LOG_FORMAT"
INPUT_FORMAT_ENV = "SPECDECODE_LOG_INPUT_FORMAT"
SIM_LAYOUT_ENV = "SPECDECODE_SIM_LOG_LAYOUT"


def _legacy_log_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    old = os.environ.get(LEGACY_LOG_FORMAT_ENV)
    if old is None or ctx.get_parameter_source(param.name or "") is not ParameterSource.DEFAULT:
        return value
    choices = param.type.choices if isinstance(param.type, click.Choice) else ()
    if old in choices:
        log.warning("%s is deprecated: set %s instead", LEGACY_LOG_FORMAT_ENV, param.envvar)
        return old
    log.warning("%s=%r ignored by %s: not one of %s", LEGACY_LOG_FORMAT_ENV, old, ctx.info_name, ", ".join(map(str, choices)))
    return value


def _derive_options(func):  # type: ignore[no-untyped-def]
    """Options shared by `serve` and `analyze`: how numbers are judged."""
    func = option("--config", "config_path", type=click.Path(dir_okay=False), help="TOML file with [health] thresholds and [draft_cost] per drafter method or model.")(func)
    func = option("--draft-token-cost", type=click.FloatRange(min=0.0), help="Cost of one draft token relative to one target step, for every series (replaces per_token of the cost model).")(func)
    func = option("--model-name", help="model_name label to use instead of the served model name found in the log.")(func)
    func = option("--log-format", type=click.Choice(LOG_FORMATS), default="auto", show_default=True, envvar=INPUT_FORMAT_ENV, callback=_legacy_log_format, help="Container framing of the log: docker json-file, Kubernetes CRI, plain, or detect per file.")(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info", show_default=True, help="Verbosity of the sidecar's own log (stderr).")
@click.version_option(VERSION, prog_name="specdecode-exporter")
def main(log_level: str) -> None:
    """Is speculative decoding paying off? Metrics, verdicts and advice from vLLM logs."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    # one line per HTTP request is noise at INFO; failures show in our own metrics and logs
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger().level))


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=False, dir_okay=False, allow_dash=True))
@option("--format", "output_format", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True, help="Report format.")
@option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: only on a terminal).")
@option("--plot", type=click.Path(dir_okay=False, writable=True), help="Also draw the acceptance curves to this PNG (needs the [plot] extra).")
@_derive_options
def analyze_cmd(paths: tuple[str, ...], output_format: str, progress: bool | None, plot: str | None, config_path: str | None,
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
    if plot:
        from exporter.report.plot import PlotUnavailable, plot_report

        try:
            panels = plot_report(report, plot)
        except (PlotUnavailable, ValueError, OSError) as error:
            raise click.ClickException(str(error)) from None
        click.echo(f"wrote {plot} ({panels} series)", err=True)
    if output_format == "json":
        click.echo(json.dumps(report, indent=2))
    elif output_format == "csv":
        click.echo(render_csv(report), nl=False)
    else:
        click.echo(render_table(report), nl=False)


analyze_cmd.name = "analyze"


def _pairs(values: tuple[str, ...]) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        log_path, sep, url = value.partition("=")
        if not sep or not log_path or not url:
            raise ConfigError(f"--pair: expected LOG=URL (or PLUGIN_DIR=URL, PLUGIN_DIR=LOG), got {value!r}")
        other = target_from_url(url).url if url.startswith(("http://", "https://")) or ":" in url.split("/")[0] else url
        pairs.append((other, log_path.rstrip("/") or "/"))
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
@option("--vllm-plugin-dir", "plugin_dirs", multiple=True, type=click.Path(file_okay=False), help="Directory our vLLM stat-logger plugin writes its records to (SPECDECODE_PLUGIN_DIR inside vLLM): exact counts. Repeatable.")
@option("--scrape-interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True, help="Seconds between scrapes of each target.")
@option("--scrape-timeout", type=click.FloatRange(min=0.1), default=3.0, show_default=True, help="Seconds a whole scrape may take.")
@option("--max-scrape-bytes", type=click.IntRange(min=1024), default=16 << 20, show_default=True, help="Larger /metrics answers are refused (too_large).")
@option("--engine", type=click.Choice(ENGINES), help="Force the server kind of the targets instead of detecting it from the payload.")
@option("--pair", "pairs", multiple=True, help="LOG=URL: this log and this target are the same server (config sharing, cross-check). One log + one target pair themselves.")
@option("--stale-after", default="5m", show_default=True, help="A source down this long stops exporting windowed gauges and a verdict.")
@option("--state-dir", type=click.Path(file_okay=False), help="Keep what a restart must not forget here (read positions, counters, baselines).")
@option("--web-config-file", type=click.Path(dir_okay=False), help="TLS and basic auth, in the Prometheus exporter-toolkit's format; re-read on change.")
@option("--baseline-half-life", default="1h", show_default=True, help="Half-life of each series' slow average, the baseline of the `degraded` verdict.")
@option("--from-start", is_flag=True, help="Read existing files from their start instead of their end.")
@option("--listen", default=DEFAULT_LISTEN, show_default=True, help="host:port for /metrics, /api/v1/status and /.")
@option("--window", "windows", multiple=True, default=DEFAULT_WINDOWS, show_default=True, help="Windows of the gauges (e.g. 1m, 5m, 1h); repeatable or comma-separated.")
@option("--health-window", default="5m", show_default=True, help="Window the health verdict judges; the longest window is its baseline.")
@option("--poll-interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True, help="Seconds between checks of each file when no file event arrives.")
@option("--file-events/--no-file-events", default=True, show_default=True, help="Wake on inotify file events; without them, check files every --poll-interval only.")
@option("--max-line-bytes", type=click.IntRange(min=1024), default=1 << 20, show_default=True, help="Longer lines are counted and skipped.")
@option("--max-series", type=click.IntRange(min=1), default=1000, show_default=True, help="Series cap; the least recently updated is dropped first.")
@_derive_options
def serve(logs: tuple[str, ...], targets: tuple[str, ...], targets_file: str | None, plugin_dirs: tuple[str, ...], scrape_interval: float,
          scrape_timeout: float, max_scrape_bytes: int, engine: str | None, pairs: tuple[str, ...], stale_after: str,
          state_dir: str | None, web_config_file: str | None, baseline_half_life: str, from_start: bool, listen: str, windows: tuple[str, ...], health_window: str,
          poll_interval: float, file_events: bool, max_line_bytes: int, max_series: int, config_path: str | None,
          draft_token_cost: float | None, model_name: str | None, log_format: str) -> None:
    """Follow vLLM logs and scrape servers' /metrics; serve Prometheus metrics and a status API."""
    if not logs and not targets and not targets_file and not plugin_dirs:
        raise click.UsageError("nothing to read: give --log, --target, --targets-file or --vllm-plugin-dir")
    try:
        stale_seconds = parse_duration(stale_after)
        half_life = parse_duration(baseline_half_life)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--stale-after/--baseline-half-life") from None
    try:
        parse_listen(listen)
        derive_settings = load_derive_settings(config_path, draft_token_cost, health_window, stale_seconds)
        target_urls = tuple(target_from_url(url).url for url in targets)
        pair_map = _pairs(pairs) or default_pairs(logs, target_urls, plugin_dirs)
        if web_config_file:
            from exporter.expose.websecurity import load_web_config

            load_web_config(web_config_file)  # a broken file is an error at start, not at the first request
    except (ConfigError, TargetsError) as error:
        raise click.UsageError(str(error)) from None
    window_map = _windows(windows)
    if health_window not in window_map:
        raise click.BadParameter(f"{health_window!r} is not one of the windows {sorted(window_map)}", param_hint="--health-window")
    from exporter.cli.serve import run  # FastAPI and uvicorn load only for `serve`

    run(
        Settings(
            logs=logs, targets=target_urls, targets_file=targets_file, scrape_interval=scrape_interval,
            scrape_timeout=scrape_timeout, max_scrape_bytes=max_scrape_bytes, engine=engine, pairs=tuple(pair_map), plugin_dirs=plugin_dirs,
            state_dir=state_dir, web_config_file=web_config_file, baseline_half_life=half_life, from_start=from_start, log_format=log_format, listen=listen, windows=window_map,  # type: ignore[arg-type]
            poll_interval=poll_interval, file_events=file_events, model_name=model_name, max_line_bytes=max_line_bytes,
            max_series=max_series, derive=derive_settings,
        )
    )


def _scenario(name: str, k: int | None, rates: str | None, drop_after: float | None, restart_after: float | None,
              drafts_per_second: float | None):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from exporter.simulate.scenarios import SCENARIOS

    scenario = SCENARIOS[name]
    changes: dict[str, object] = {}
    if rates:
        try:
            changes["rates"] = tuple(float(part) for part in rates.split(","))
        except ValueError:
            raise click.BadParameter(f"expected comma-separated rates like 0.8,0.6,0.4, got {rates!r}", param_hint="--rates") from None
        if any(not 0 <= r <= 1 for r in changes["rates"]):  # type: ignore[attr-defined]
            raise click.BadParameter("rates must lie in 0..1", param_hint="--rates")
    if k is not None:
        current = changes.get("rates", scenario.rates)
        changes["rates"] = tuple(current[:k]) + (0.0,) * max(0, k - len(current))  # type: ignore[index, arg-type]
    if drop_after is not None:
        changes["drop_after"] = drop_after
    if restart_after is not None:
        changes["restart_after"] = restart_after
    if drafts_per_second is not None:
        changes["drafts_per_second"] = drafts_per_second
    return replace(scenario, **changes)


def _scenario_options(default: str):  # type: ignore[no-untyped-def]
    from exporter.simulate.scenarios import SCENARIOS

    def decorate(func):  # type: ignore[no-untyped-def]
        func = option("--drafts-per-second", type=click.FloatRange(min=0.1), help="Drafts per second per engine.")(func)
        func = option("--restart-after", type=click.FloatRange(min=0.1), help="Seconds (simulated) until the server restarts.")(func)
        func = option("--drop-after", type=click.FloatRange(min=0.1), help="Seconds (simulated) until acceptance drops (drop-off).")(func)
        func = option("--rates", help="Per-position acceptance curve r_0,r_1,… (sets k).")(func)
        func = option("--k", type=click.IntRange(min=1, max=64), help="num_speculative_tokens (curve truncated or padded with 0).")(func)
        func = option("--seed", type=int, default=0, show_default=True, help="Seed: the same seed gives the same run.")(func)
        func = option("--speed", type=click.FloatRange(min=0.1, max=1000), default=1.0, show_default=True, help="Simulated seconds per real second.")(func)
        func = option("--scenario", type=click.Choice(sorted(SCENARIOS)), default=default, show_default=True, help="What the simulated drafter does.")(func)
        return func

    return decorate


@main.command()
@_scenario_options("drop-off")
@option("--listen", default="127.0.0.1:8000", show_default=True, help="host:port of the simulated vLLM API server.")
@option("--log-file", help="Write the vLLM log here (default: standard output).")
@option("--log-format", "log_layout", type=click.Choice(["V1-e", "V1-d", "V1-c", "V1-b", "V0-b"]), default="V1-e", show_default=True, envvar=SIM_LAYOUT_ENV, callback=_legacy_log_format, help="vLLM log layout to write.")
@option("--log-interval", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="VLLM_LOG_STATS_INTERVAL: seconds between stats lines.")
@option("--engines", type=click.IntRange(min=1, max=64), default=1, show_default=True, help="Data-parallel engines.")
@option("--duration", type=click.FloatRange(min=0.1), help="Stop after this many simulated seconds.")
def simulate(scenario: str, speed: float, seed: int, k: int | None, rates: str | None, drop_after: float | None,
             restart_after: float | None, drafts_per_second: float | None, listen: str, log_file: str | None,
             log_layout: str, log_interval: float, engines: int, duration: float | None) -> None:
    """A vLLM server with speculative decoding, simulated: real-format log and /metrics, no GPU."""
    from exporter.simulate.runner import Simulation
    from exporter.simulate.server import SimulatedServer

    try:
        host, port = parse_listen(listen)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    chosen = _scenario(scenario, k, rates, drop_after, restart_after, drafts_per_second)
    server = SimulatedServer(chosen, engines=engines, seed=seed, log_interval=log_interval, log_format=log_layout)
    if log_file:
        click.echo(f"simulated vLLM ({chosen.name}) on http://{host}:{port}/metrics, log {log_file}", err=True)
    Simulation(server, log_path=log_file, host=host, port=port, speed=speed, duration=duration).run_until_interrupted()


@main.command()
@_scenario_options("drop-off")
@option("--listen", default="127.0.0.1:9847", show_default=True, help="host:port of the sidecar (status page, /metrics).")
@option("--sim-listen", default="127.0.0.1:0", show_default=True, help="host:port of the simulated vLLM (port 0: any free port).")
@option("--log-interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True, help="Seconds between the simulated server's stats lines.")
@option("--window", "windows", multiple=True, default=("1m", "5m", "1h"), show_default=True, help="Windows of the gauges; repeatable or comma-separated.")
@option("--health-window", default="1m", show_default=True, help="Window the verdict judges; the longest window is its baseline.")
def demo(scenario: str, speed: float, seed: int, k: int | None, rates: str | None, drop_after: float | None,
         restart_after: float | None, drafts_per_second: float | None, listen: str, sim_listen: str, log_interval: float,
         windows: tuple[str, ...], health_window: str) -> None:
    """Zero-setup demo: a simulated vLLM, the sidecar reading its log and /metrics, the status page."""
    from exporter.cli.demo import run_demo

    try:
        parse_listen(listen)
        sim_host, sim_port = parse_listen(sim_listen) if not sim_listen.endswith(":0") else (sim_listen.rpartition(":")[0], 0)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    window_map = _windows(windows)
    if health_window not in window_map:
        raise click.BadParameter(f"{health_window!r} is not one of the windows {sorted(window_map)}", param_hint="--health-window")
    chosen = _scenario(scenario, k, rates, drop_after, restart_after, drafts_per_second)
    run_demo(
        chosen, listen=listen, sim_host=sim_host or "127.0.0.1", sim_port=sim_port, seed=seed, log_interval=log_interval,
        speed=speed, windows=window_map, health_window=health_window,
    )


@main.command("check-config")
@click.argument("drafter", type=click.Path(exists=False))
@option("--target", "target_path", type=click.Path(exists=False), help="The target model's directory or config.json.")
@option("--k", "num_speculative_tokens", type=click.IntRange(min=1), help="num_speculative_tokens you serve with.")
@option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True, help="Report format.")
def check_config(drafter: str, target_path: str | None, num_speculative_tokens: int | None, output_format: str) -> None:
    """Lint a drafter's config.json against its target's (DFlash, EAGLE/EAGLE-3, MTP, draft models).

    DRAFTER and --target are model directories or config.json files. Exit status: 0 clean,
    1 warnings, 2 errors, 3 the files could not be read.
    """
    from exporter.judge.checkconfig import check, exit_status, findings_json, load_model

    try:
        draft = load_model(drafter)
        target = load_model(target_path) if target_path else None
    except ValueError as error:
        click.echo(f"check-config: {error}", err=True)
        sys.exit(3)
    findings = check(draft, target, num_speculative_tokens)
    if output_format == "json":
        click.echo(json.dumps(findings_json(findings, draft, target), indent=2))
    else:
        kind = findings_json(findings, draft, target)["kind"]
        click.echo(f"{drafter}: a {kind} drafter" + (f", checked against {target_path}" if target_path else ""))
        for finding in findings:
            click.echo(f"  {finding.severity.upper():7} {finding.field}: found {finding.found}, expected {finding.expected}")
            click.echo(f"          {finding.why}")
        counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
        click.echo(f"{counts['error']} errors, {counts['warning']} warnings, {counts['info']} notes")
    sys.exit(exit_status(findings))


if __name__ == "__main__":
    main()
