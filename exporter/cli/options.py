"""Options shared by the commands: every flag has a SPECDECODE_* environment variable, shown in --help."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from exporter.config import LOG_FORMATS, parse_duration

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


def _env(name: str) -> str:
    return "SPECDECODE_" + name.upper().replace("-", "_")


def option(*decls: str, **kwargs: Any) -> Callable[[F], F]:
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


def legacy_log_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    old = os.environ.get(LEGACY_LOG_FORMAT_ENV)
    if old is None or ctx.get_parameter_source(param.name or "") is not ParameterSource.DEFAULT:
        return value
    choices = param.type.choices if isinstance(param.type, click.Choice) else ()
    if old in choices:
        log.warning("%s is deprecated: set %s instead", LEGACY_LOG_FORMAT_ENV, param.envvar)
        return old
    log.warning("%s=%r ignored by %s: not one of %s", LEGACY_LOG_FORMAT_ENV, old, ctx.info_name, ", ".join(map(str, choices)))
    return value


def derive_options(func: F) -> F:
    """Options shared by `serve` and `analyze`: how numbers are judged."""
    func = option("--config", "config_path", type=click.Path(dir_okay=False),
        help="TOML file with [health] thresholds and [draft_cost] per drafter method or model.")(func)
    func = option("--draft-token-cost", type=click.FloatRange(min=0.0),
        help="Cost of one draft token relative to one target step, for every series (replaces per_token of the cost model).")(func)
    func = option("--model-name", help="model_name label to use instead of the served model name found in the log.")(func)
    func = option("--log-format", type=click.Choice(LOG_FORMATS), default="auto", show_default=True, envvar=INPUT_FORMAT_ENV, callback=legacy_log_format,
        help="Container framing of the log: docker json-file, Kubernetes CRI, plain, or detect per file.")(func)
    return func


def parse_windows(values: tuple[str, ...]) -> dict[str, float]:
    names = [part.strip() for value in values for part in value.split(",") if part.strip()]
    try:
        return {name: parse_duration(name) for name in names}
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--window") from None


def reference_options(func: F) -> F:
    """Options shared by `serve`, `analyze` and `demo`: how each series' reference is learned and replaced."""
    func = option("--reference-min-drafts", type=click.IntRange(min=1), default=1000, show_default=True,
        help="A series' reference judges (the relative `degraded` verdict) once it pools this many healthy drafts.")(func)
    func = option("--reference-window", default="1d", show_default=True,
        help="Healthy traffic pooled into each series' reference (in hourly-or-finer buckets; older ones leave it).")(func)
    func = option("--reference-hold", default="7d", show_default=True,
        help="A series degraded or broken for longer than this takes its current acceptance as the new normal; 0: never.")(func)
    func = option("--reference-recovery", default="15m", show_default=True,
        help="A degraded or broken series counts as recovered (and its reference learns again) once its verdicts stay healthy this long.")(func)
    return func


def reference_rule_args(hold: str, window: str, min_drafts: int, recovery: str = "15m") -> tuple[float, float, int, float]:
    """--reference-* values as seconds (hold 0 = never): (hold, window, min drafts, recovery); click errors name the flag."""
    try:
        hold_seconds = 0.0 if hold.strip() in ("0", "0s", "never") else parse_duration(hold)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--reference-hold") from None
    try:
        window_seconds = parse_duration(window)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--reference-window") from None
    try:
        recovery_seconds = 0.0 if recovery.strip() in ("0", "0s") else parse_duration(recovery)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--reference-recovery") from None
    return hold_seconds, window_seconds, min_drafts, recovery_seconds
