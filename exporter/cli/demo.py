"""`demo`: a simulated vLLM and the sidecar reading both its log and its /metrics — no GPU, no setup."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click

from exporter.config import DeriveSettings, Settings
from exporter.simulate.layouts import Layout
from exporter.simulate.runner import Simulation
from exporter.simulate.scenarios import Scenario
from exporter.simulate.server import SimulatedServer


def run_demo(
    scenario: Scenario,
    *,
    layout: Layout | None = None,
    iteration_details: bool = False,
    listen: str,
    sim_host: str,
    sim_port: int,
    seed: int,
    log_interval: float,
    speed: float,
    windows: dict[str, float],
    health_window: str,
    reference: tuple[float, float, int, float],
) -> None:
    """Start the simulator, then serve the sidecar in the foreground until Ctrl-C; clean up both."""
    from exporter.cli.serve import run  # FastAPI/uvicorn only when serving

    workdir = Path(tempfile.mkdtemp(prefix="specdecode-demo-"))
    log_path = workdir / "vllm.log"
    simulation = Simulation(
        SimulatedServer(scenario, seed=seed, log_interval=log_interval, layout=layout, iteration_details=iteration_details),
        log_path=str(log_path), host=sim_host, port=sim_port, speed=speed
    )
    simulation.start()
    target = f"http://{sim_host}:{simulation.port}/metrics"
    host, _, port = listen.rpartition(":")
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
        run(
            Settings(
                logs=(str(log_path),),
                targets=(target,),
                pairs=((target, str(log_path)),),
                from_start=True,
                listen=listen,
                windows=windows,
                scrape_interval=min(5.0, max(0.5, log_interval)) / max(speed, 1.0),
                derive=DeriveSettings(health_window=health_window),
                reference_hold=reference[0], reference_window=reference[1], reference_min_drafts=reference[2], reference_recovery=reference[3],
            )
        )
    finally:
        simulation.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        click.echo("demo stopped")
