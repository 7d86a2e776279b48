"""`simulate` and `demo`: a simulated vLLM on its own, or with the sidecar and the status page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import click

from exporter.cli.options import SIM_LAYOUT_ENV, F, legacy_log_format, option, reference_options
from exporter.cli.settings import SERVE_DEFAULTS, judged_windows
from exporter.config import ConfigError, parse_listen
from exporter.simulate.layouts import NEWEST, SUPPORTED_VERSIONS, Layout
from exporter.simulate.scenarios import SCENARIOS, Scenario


def _scenario(name: str, k: int | None, rates: str | None, drop_after: float | None, restart_after: float | None,
              drafts_per_second: float | None) -> Scenario:
    scenario = SCENARIOS[name]
    curve = scenario.rates
    if rates:
        try:
            curve = tuple(float(part) for part in rates.split(","))
        except ValueError:
            raise click.BadParameter(f"expected comma-separated rates like 0.8,0.6,0.4, got {rates!r}", param_hint="--rates") from None
        if any(not 0 <= r <= 1 for r in curve):
            raise click.BadParameter("rates must lie in 0..1", param_hint="--rates")
    if k is not None:
        curve = tuple(curve[:k]) + (0.0,) * max(0, k - len(curve))
    return replace(
        scenario,
        rates=curve,
        drop_after=scenario.drop_after if drop_after is None else drop_after,
        restart_after=scenario.restart_after if restart_after is None else restart_after,
        drafts_per_second=scenario.drafts_per_second if drafts_per_second is None else drafts_per_second,
    )


def _layout(vllm_version: str, logging_formatter: str, logging_prefix: str) -> Layout:
    try:
        return Layout(vllm_version, json_logs=logging_formatter == "json", logging_prefix=logging_prefix)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--logging-formatter") from None


def _scenario_options(default: str) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        func = option("--iteration-details", is_flag=True,
            help="Also write the --enable-logging-iteration-details lines (`Engine 000: Iteration(N): …`).")(func)
        func = option("--logging-prefix", default="", help="VLLM_LOGGING_PREFIX the simulated server writes (e.g. '[pod-a] ').")(func)
        func = option("--logging-formatter", type=click.Choice(["text", "json"]), default="text", show_default=True,
            help="vLLM's --logging-config.formatter: json writes one JSON record a line (vLLM ≥ 0.32).")(func)
        func = option("--vllm-version", type=click.Choice(SUPPORTED_VERSIONS), default=NEWEST, show_default=True,
            help="The vLLM whose log layout is written (prefix order, [file:line], JSON formatter).")(func)
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


@click.command()
@_scenario_options("drop-off")
@option("--listen", default="127.0.0.1:8000", show_default=True, help="host:port of the simulated vLLM API server.")
@option("--log-file", help="Write the vLLM log here (default: standard output).")
@option("--log-format", "log_layout", type=click.Choice(["V1-e", "V1-d", "V1-c", "V1-b", "V0-b"]), default="V1-e", show_default=True, envvar=SIM_LAYOUT_ENV,
    callback=legacy_log_format, help="vLLM log layout to write.")
@option("--log-interval", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="VLLM_LOG_STATS_INTERVAL: seconds between stats lines.")
@option("--engines", type=click.IntRange(min=1, max=64), default=1, show_default=True, help="Data-parallel engines.")
@option("--duration", type=click.FloatRange(min=0.1), help="Stop after this many simulated seconds.")
def simulate(scenario: str, speed: float, seed: int, k: int | None, rates: str | None, drop_after: float | None,
             restart_after: float | None, drafts_per_second: float | None, vllm_version: str, logging_formatter: str,
             logging_prefix: str, iteration_details: bool, listen: str, log_file: str | None,
             log_layout: str, log_interval: float, engines: int, duration: float | None) -> None:
    """A vLLM server with speculative decoding, simulated: real-format log and /metrics, no GPU."""
    from exporter.simulate.runner import Simulation
    from exporter.simulate.server import SimulatedServer

    try:
        host, port = parse_listen(listen)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    chosen = _scenario(scenario, k, rates, drop_after, restart_after, drafts_per_second)
    layout = _layout(vllm_version, logging_formatter, logging_prefix)
    server = SimulatedServer(chosen, engines=engines, seed=seed, log_interval=log_interval, log_format=log_layout, layout=layout,
                             iteration_details=iteration_details)
    if log_file:
        click.echo(f"simulated vLLM ({chosen.name}) on http://{host}:{port}/metrics, log {log_file}", err=True)
    Simulation(server, log_path=log_file, host=host, port=port, speed=speed, duration=duration).run_until_interrupted()


@click.command()
@_scenario_options("drop-off")
@option("--listen", default="127.0.0.1:9847", show_default=True, help="host:port of the sidecar (status page, /metrics).")
@option("--sim-listen", default="127.0.0.1:0", show_default=True, help="host:port of the simulated vLLM (port 0: any free port).")
@option("--log-interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True, help="Seconds between the simulated server's stats lines.")
@option("--window", "windows", multiple=True, default=("1m", "5m", "1h"), show_default=True, help="Windows of the gauges; repeatable or comma-separated.")
@option("--health-window", default="1m", show_default=True, help="Window the verdict judges against each series' reference.")
@reference_options
def demo(scenario: str, speed: float, seed: int, k: int | None, rates: str | None, drop_after: float | None,
         restart_after: float | None, drafts_per_second: float | None, vllm_version: str, logging_formatter: str,
         logging_prefix: str, iteration_details: bool, listen: str, sim_listen: str, log_interval: float,
         windows: tuple[str, ...], health_window: str, reference_hold: str, reference_window: str, reference_min_drafts: int,
         reference_recovery: str) -> None:
    """Zero-setup demo: a simulated vLLM, the sidecar reading its log and /metrics, the status page."""
    from exporter.cli.demo import run_demo

    try:
        parse_listen(listen)
        sim_host, sim_port = parse_listen(sim_listen) if not sim_listen.endswith(":0") else (sim_listen.rpartition(":")[0], 0)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    judged_windows(windows, health_window)  # before the scenario's flags, as the user reads them
    chosen = _scenario(scenario, k, rates, drop_after, restart_after, drafts_per_second)
    layout = _layout(vllm_version, logging_formatter, logging_prefix)
    # the sidecar runs with serve's defaults but for these; run_demo adds the simulator's log and target
    flags = replace(SERVE_DEFAULTS, listen=listen, windows=windows, health_window=health_window, reference_hold=reference_hold,
                    reference_window=reference_window, reference_min_drafts=reference_min_drafts, reference_recovery=reference_recovery)
    run_demo(
        chosen, flags, layout=layout, iteration_details=iteration_details,
        sim_host=sim_host or "127.0.0.1", sim_port=sim_port, seed=seed, log_interval=log_interval, speed=speed,
    )
