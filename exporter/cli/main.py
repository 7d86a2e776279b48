"""Command line: `serve`, `analyze`, `check-config`, `simulate`, `demo`, `acknowledge`, `mixin`, `supervise`,
`secrets` (and `--version`). Every flag is also a SPECDECODE_<FLAG> env var.

`main()` only parses; serve's flags become Settings in cli/settings.py, and the work happens in
`serve.run(settings)` and `analyze.analyze(...)`.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import click

from exporter import __version__
from exporter.cli.acknowledge import acknowledge
from exporter.cli.mixin import mixin
from exporter.cli.options import derive_options, load_calibration, option, reference_options, reference_rule_args, seconds
from exporter.cli.secrets import secrets
from exporter.cli.settings import SERVE_DEFAULTS, ServeFlags, serve_settings
from exporter.cli.simulation import demo, simulate
from exporter.cli.supervise import supervise
from exporter.config import ENGINES, LOG_FORMATS, ConfigError, LogFormat, load_derive_settings
from exporter.report.analyze import AnalyzeOptions, analyze, sample_log_path
from exporter.report.formats import nothing_to_report, render_csv, render_table
from exporter.state.reference import ReferenceRule


def readable(paths: tuple[str, ...]) -> None:
    """Every PATH can be opened (`-` is stdin); else a usage error naming the first that cannot."""
    for path in paths:
        if path != "-":
            try:
                open(path, "rb").close()
            except OSError as error:
                raise click.BadParameter(f"cannot read {path!r}: {error.strerror}", param_hint="PATHS") from None


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info", show_default=True,
    help="Verbosity of the sidecar's own log (stderr).")
@click.version_option(__version__, prog_name="specdecode-exporter")
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
@option("--health-window", default="5m", show_default=True, help="Window the verdict judges: analyze judges the log's last one.")
@option("--jobs", type=click.IntRange(min=1), default=None, help="Files read at once, each by its own process  [default: one per core].")
@reference_options
@derive_options
def analyze_cmd(paths: tuple[str, ...], output_format: str, progress: bool | None, plot: str | None, health_window: str, jobs: int | None,
                reference_hold: str, reference_window: str, reference_min_drafts: int, reference_recovery: str, config_path: str | None,
                draft_token_cost: float | None, model_name: str | None, log_format: LogFormat, log_timezone: str | None,
                calibration_path: str | None) -> None:
    """Report per-position acceptance, L, α, recommended k and verdict from whole log files; with
    --calibration, the speed-up over plain decoding by load, the break-even load and a k per batch size.

    PATHS are vLLM logs (plain, or .gz; `-` for stdin). Without PATHS a real vLLM 0.24.0 log
    shipped with the package is analysed. Exit status: 0 a report, 4 nothing to report (an empty
    log, or no speculative-decoding line in it: the reason on stderr and in the report).
    """
    if not paths:
        click.echo("no PATH given: analysing the built-in sample (a real vLLM 0.24.0 log, draft_model, k=8)", err=True)
        paths = (sample_log_path(),)
    readable(paths)
    seconds(health_window, "--health-window")
    try:
        settings = load_derive_settings(config_path, draft_token_cost, health_window, calibration=load_calibration(calibration_path))
    except (ConfigError, ValueError) as error:
        raise click.UsageError(str(error)) from None
    reference = ReferenceRule.of(*reference_rule_args(reference_hold, reference_window, reference_min_drafts, reference_recovery))
    from exporter.intervals.clock import parse_zone

    zone = parse_zone(log_timezone) if log_timezone else None
    report = analyze(list(paths), settings, AnalyzeOptions(log_format=log_format, model_name=model_name, progress=progress, reference=reference,
                                                               jobs=jobs, zone=zone))
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
    nothing = nothing_to_report(report)
    if nothing is not None:  # an empty log, or none of its lines a spec line: said, and a status a script can test
        click.echo(f"analyze: {nothing}", err=True)
        sys.exit(NOTHING_TO_REPORT)


analyze_cmd.name = "analyze"
NOTHING_TO_REPORT = 4  # analyze's exit status when no series and no sampled values came out (the reason on stderr)


@main.command()
@option("--log", "logs", multiple=True, help="vLLM log to follow: a path, a glob, or - for stdin. Repeatable.")
@option("--target", "targets", multiple=True, help="Server /metrics URL to scrape (http://host:port/metrics, or host:port). Repeatable.")
@option("--targets-file", type=click.Path(dir_okay=False), help="Prometheus file_sd targets file (JSON or YAML), reloaded when it changes.")
@option("--vllm-plugin-dir", "plugin_dirs", multiple=True, type=click.Path(file_okay=False),
    help="Directory our vLLM stat-logger plugin writes its records to (SPECDECODE_PLUGIN_DIR inside vLLM): exact counts. Repeatable.")
@option("--scrape-interval", type=click.FloatRange(min=0.1), default=SERVE_DEFAULTS.scrape_interval, show_default=True,
    help="Seconds between scrapes of each target.")
@option("--scrape-timeout", type=click.FloatRange(min=0.1), default=SERVE_DEFAULTS.scrape_timeout, show_default=True, help="Seconds a whole scrape may take.")
@option("--max-scrape-bytes", type=click.IntRange(min=1024), default=SERVE_DEFAULTS.max_scrape_bytes, show_default=True,
    help="Larger /metrics answers are refused (too_large).")
@option("--engine", type=click.Choice(ENGINES), help="Force the server kind of the targets instead of detecting it from the payload.")
@option("--pair", "pairs", multiple=True,
    help="LOG=URL: this log and this target are the same server (config sharing, cross-check). One log + one target pair themselves.")
@option("--stale-after", default=SERVE_DEFAULTS.stale_after, show_default=True, help="A source down this long stops exporting windowed gauges and a verdict.")
@option("--state-dir", type=click.Path(file_okay=False), help="Keep what a restart must not forget here (read positions, counters, baselines).")
@option("--web-config-file", type=click.Path(dir_okay=False), help="TLS and basic auth, in the Prometheus exporter-toolkit's format; re-read on change.")
@option("--baseline-half-life", hidden=True, help="Gone: the verdict's baseline is each series' reference (--reference-*); ignored with a warning.")
@reference_options
@option("--from-start", is_flag=True, help="Read existing files from their start instead of their end.")
@option("--listen", default=SERVE_DEFAULTS.listen, show_default=True, help="host:port for /metrics, /api/v1/status and /.")
@option("--window", "windows", multiple=True, default=SERVE_DEFAULTS.windows, show_default=True,
    help="Windows of the gauges (e.g. 1m, 5m, 1h); repeatable or comma-separated.")
@option("--health-window", default=SERVE_DEFAULTS.health_window, show_default=True,
    help="Window the health verdict judges; the longest window is its baseline.")
@option("--derived-windows", multiple=True, default=SERVE_DEFAULTS.derived_windows, show_default="the health window",
    help="Windows whose derived gauges (ratios, positions, speed-up, recommendation) are exported; comma-separated, or `all`. "
         "The counters are exported once, whatever the windows: Prometheus computes rates over any window from them.")
@option("--speedup-candidates", type=click.Choice(["chosen", "all"]), default=SERVE_DEFAULTS.speedup_candidates, show_default=True,
    help="specdecode_expected_speedup for the recommended and the running k (chosen), or for every k from 0 to the running one (all).")
@option("--conditional-gauges/--no-conditional-gauges", default=SERVE_DEFAULTS.conditional_gauges, show_default=True,
    help="Export specdecode_position_conditional_acceptance_ratio per derived window (the recording rules compute it from the counters).")
@option("--metrics-max-age", default=SERVE_DEFAULTS.metrics_max_age, show_default=True,
    help="A scrape of /metrics may get a body this old: it is rebuilt in the background as the sources change, so a scrape only "
         "sends bytes. 0: build it for each scrape.")
@option("--poll-interval", type=click.FloatRange(min=0.05), default=SERVE_DEFAULTS.poll_interval, show_default=True,
    help="Seconds between checks of each file when no file event arrives.")
@option("--file-events/--no-file-events", default=SERVE_DEFAULTS.file_events, show_default=True,
    help="Wake on inotify file events; without them, check files every --poll-interval only.")
@option("--max-line-bytes", type=click.IntRange(min=1024), default=SERVE_DEFAULTS.max_line_bytes, show_default=True,
    help="Longer lines are counted and skipped.")
@option("--max-series", type=click.IntRange(min=1), default=SERVE_DEFAULTS.max_series, show_default=True,
    help="Series cap; the least recently updated is dropped first.")
@derive_options
def serve(**flags: Any) -> None:
    """Follow vLLM logs and scrape servers' /metrics; serve Prometheus metrics and a status API."""
    settings = serve_settings(ServeFlags(**flags))  # every flag checked before anything starts
    from exporter.cli.serve import run  # FastAPI and uvicorn load only for `serve`

    try:
        run(settings)
    except ConfigError as error:  # found only once the files are opened: TLS certificates, a state dir in use
        raise click.ClickException(str(error)) from None


@main.command("check-config")
@click.argument("drafter", type=click.Path(exists=False))
@click.argument("target", required=False, type=click.Path(exists=False))
@option("--target", "target_path", type=click.Path(exists=False), help="The target model's directory or config.json (or TARGET).")
@option("--k", "num_speculative_tokens", type=click.IntRange(min=1), help="num_speculative_tokens you serve with.")
@option("--method", help="The speculative method you serve with (vLLM's name: eagle3, dspark, qwen3_next_mtp, …).")
@option("--vllm-version", help="The vLLM version you serve with: --method is checked against its methods.")
@option("--max-model-len", type=click.IntRange(min=1), help="The --max-model-len you serve with: the drafter's context length is checked against it.")
@option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True, help="Report format.")
def check_config(
    drafter: str, target: str | None, target_path: str | None, num_speculative_tokens: int | None, method: str | None, vllm_version: str | None,
    max_model_len: int | None, output_format: str,
) -> None:
    """Lint a drafter's config.json against its own weights and its target (DFlash, EAGLE/EAGLE-3, MTP, draft models).

    DRAFTER and TARGET (or --target) are model directories or config.json files:
    `check-config DRAFTER TARGET`, as the verdict's advice says. Exit status: 0 clean, 1 warnings,
    2 errors, 3 the files could not be read (or two different targets were given).
    """
    from exporter.judge.checkconfig import check, exit_status, findings_json, load_model

    if target is not None and target_path is not None and target != target_path:
        click.echo(f"check-config: two targets given ({target} and --target {target_path}): give one", err=True)
        sys.exit(3)
    target_path = target_path or target
    try:
        draft = load_model(drafter)
        model = load_model(target_path) if target_path else None
    except ValueError as error:
        click.echo(f"check-config: {error}", err=True)
        sys.exit(3)
    findings = check(draft, model, num_speculative_tokens, method, vllm_version, max_model_len)
    if output_format == "json":
        click.echo(json.dumps(findings_json(findings, draft, model), indent=2))
    else:
        kind = findings_json(findings, draft, model)["kind"]
        click.echo(f"{drafter}: a {kind} drafter" + (f", checked against {target_path}" if target_path else ""))
        for finding in findings:
            click.echo(f"  {finding.severity.upper():7} {finding.field}: found {finding.found}, expected {finding.expected}")
            click.echo(f"          {finding.why}")
        counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
        click.echo(f"{counts['error']} errors, {counts['warning']} warnings, {counts['info']} notes")
    sys.exit(exit_status(findings))


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=False, dir_okay=False, allow_dash=True))
@option("--out", type=click.Path(dir_okay=False, writable=True), help="Write the calibration here (JSON); without it, print it.")
@option("--log-format", type=click.Choice(LOG_FORMATS), default="auto", show_default=True, help="Container framing of the log.")
def calibrate(paths: tuple[str, ...], out: str | None, log_format: LogFormat) -> None:
    """Measure plain decoding's throughput by load from a plain run's log, for --calibration.

    PATHS are the logs of one server (or replica) running the same model on the same GPUs without
    --speculative-config, under a range of loads — a ladder of 1, 2, 4 … 256 concurrent requests,
    each held for three stats intervals or more, or a day of real traffic. What is kept: each
    band's mean running requests and generation tokens/s from vLLM's stats lines.
    """
    from exporter.judge.calibration import CalibrationError, calibration_json
    from exporter.report.calibrate import calibrate as measure

    readable(paths)
    try:
        calibration = measure(list(paths), log_format)
    except CalibrationError as error:
        raise click.ClickException(str(error)) from None
    text = json.dumps(calibration_json(calibration), indent=2) + "\n"
    if out:
        with open(out, "w", encoding="utf-8") as file:
            file.write(text)
        points = calibration.points
        click.echo(f"wrote {out}: plain decoding at {len(points)} loads, {points[0].running:.3g}–{points[-1].running:.3g} running requests "
                   f"({points[0].tokens_per_second:.0f}–{max(p.tokens_per_second for p in points):.0f} tokens/s)", err=True)
    else:
        click.echo(text, nl=False)


main.add_command(simulate)
main.add_command(acknowledge)
main.add_command(demo)
main.add_command(mixin)
main.add_command(supervise)
main.add_command(secrets)

if __name__ == "__main__":
    main()
