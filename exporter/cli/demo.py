"""`demo`: a simulated vLLM and the sidecar reading both its log and its /metrics — no GPU, no setup."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import click

from exporter.cli.settings import ServeFlags, serve_settings
from exporter.simulate.layouts import Layout
from exporter.simulate.runner import Simulation
from exporter.simulate.scenarios import Scenario
from exporter.simulate.server import SimulatedServer


def run_demo(
    scenario: Scenario,
    flags: ServeFlags,
    *,
    layout: Layout | None = None,
    iteration_details: bool = False,
    sim_host: str,
    sim_port: int,
    seed: int,
    log_interval: float,
    speed: float,
) -> None:
    """Start the simulator, then serve the sidecar (`flags`, plus the simulator's log and target) in the
    foreground until Ctrl-C; clean up both."""
    from exporter.cli.serve import run  # FastAPI/uvicorn only when serving

    workdir = Path(tempfile.mkdtemp(prefix="specdecode-demo-"))
    log_path = workdir / "vllm.log"
    try:  # every flag is checked before the simulator starts; its target is known once it listens
        settings = serve_settings(replace(flags, logs=(str(log_path),), from_start=True,
                                          scrape_interval=min(5.0, max(0.5, log_interval)) / max(speed, 1.0)))
    except click.ClickException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    simulation = Simulation(
        SimulatedServer(scenario, seed=seed, log_interval=log_interval, layout=layout, iteration_details=iteration_details),
        log_path=str(log_path), host=sim_host, port=sim_port, speed=speed
    )
    simulation.start()
    target = f"http://{sim_host}:{simulation.port}/metrics"
    host, _, port = flags.listen.rpartition(":")
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else host
    click.echo(f"specdecode-exporter demo — scenario {scenario.name}: {scenario.description}")
    if scenario.drop_after is not None:
        click.echo(f"  acceptance falls to {scenario.drop_factor:.0%} of its rate after {scenario.drop_after / speed:.0f} s")
    click.echo(f"  status page     http://{shown}:{port}/")
    click.echo(f"  metrics         http://{shown}:{port}/metrics")
    click.echo(f"  status API      http://{shown}:{port}/api/v1/status")
    click.echo(f"  simulated vLLM  {target}   log: {log_path}")
    click.echo("  Ctrl-C stops everything.")
    try:
        run(replace(settings, targets=(target,), pairs=((target, str(log_path)),)))
    finally:
        simulation.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        click.echo("demo stopped")
