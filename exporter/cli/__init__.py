"""The command line: `specdecode-exporter` and its subcommands, and the wiring of `serve` and `demo`."""

from exporter.cli.main import main

__all__ = ["main"]
