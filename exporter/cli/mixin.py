"""`mixin`: render the rules, alerts, dashboards and manifests from a mixin config (TOML) into a directory."""

from __future__ import annotations

from pathlib import Path

import click

from exporter.cli.options import option
from exporter.config import ConfigError


@click.command()
# its own SPECDECODE_MIXIN_* variables: serve's and analyze's SPECDECODE_CONFIG is another file
@option("--config", "config_path", envvar="SPECDECODE_MIXIN_CONFIG", type=click.Path(dir_okay=False),
        help="A TOML file over the shipped defaults (deploy/mixin/ has presets).")
@option("--out", envvar="SPECDECODE_MIXIN_OUT", type=click.Path(file_okay=False),
        help="Directory to write into; the config's [output] names the paths under it.")
@option("--print-defaults", envvar="SPECDECODE_MIXIN_PRINT_DEFAULTS", is_flag=True,
        help="Print the shipped defaults (every key, with why it has its value) and exit.")
def mixin(config_path: str | None, out: str | None, print_defaults: bool) -> None:
    """Generate Prometheus rules and alerts, Grafana dashboards and Kubernetes manifests from one config."""
    from exporter.mixin.build import write
    from exporter.mixin.config import defaults_text, load

    if print_defaults:
        click.echo(defaults_text(), nl=False)
        return
    if out is None:
        raise click.UsageError("--out DIR is required (where to write the files)")
    try:
        config = load(config_path)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    for path in write(Path(out), config):
        click.echo(path)
