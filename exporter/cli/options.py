"""Options shared by the commands: every flag has a SPECDECODE_* environment variable, shown in --help."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from exporter.config import LOG_FORMATS, PlainCalibration, parse_duration

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
    func = option("--calibration", "calibration_path", type=click.Path(dir_okay=False), callback=_calibration,
        help="Plain decoding's throughput by load on this server (made by `specdecode-exporter calibrate PLAIN_LOG --out FILE`): "
             "with it, the speed-up over plain decoding at the server's load, the break-even load and a k per batch size.")(func)
    func = option("--log-timezone", callback=_log_timezone, show_default="learned per file",
        help="Zone of vLLM's local stamps: UTC, an offset (+09:00) or a zone name (Asia/Tokyo); without it, each file's "
             "modification time against its last line tells the offset (live lines against their arrival), rounded to 15 min.")(func)
    return func


def _calibration(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Read and checked here, so a bad file is a usage error naming the flag; the commands read it again (judge/calibration.py)."""
    if value is not None:
        load_calibration(value)
    return value


def load_calibration(path: str | None) -> PlainCalibration | None:
    """The calibration at `path` (None: none); click.BadParameter naming what is wrong."""
    if path is None:
        return None
    import json

    from exporter.judge.calibration import CalibrationError, calibration_from_json

    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
        return calibration_from_json(data, path)
    except OSError as error:
        raise click.BadParameter(f"cannot read {path!r}: {error.strerror}", param_hint="--calibration") from None
    except (ValueError, CalibrationError) as error:
        raise click.BadParameter(str(error) if isinstance(error, CalibrationError) else f"{path}: not JSON ({error})",
                                 param_hint="--calibration") from None


def _log_timezone(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Checked here, so a bad zone is a usage error naming the flag; the commands parse it again (a string crosses config.py)."""
    if value is None:
        return None
    from exporter.intervals.clock import parse_zone

    try:
        parse_zone(value)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--log-timezone") from None
    return value.strip()


def comma_list(values: tuple[str, ...]) -> tuple[str, ...]:
    """A flag given several times and/or as a comma list (`--window 1m,5m --window 1h`): its parts, blanks dropped."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


_OFF = re.compile(r"(0+(\.0*)?|\.0+)[smhd]?|never")


def seconds(text: str, flag: str, *, zero_is_off: bool = False) -> float:
    """A duration flag ('30s', '5m', '1h', '1d' or plain seconds) as seconds; where `zero_is_off`,
    0 in any unit (or `never`) turns it off: 0.0. A bad value is a click error naming the flag."""
    if zero_is_off and _OFF.fullmatch(text.strip()):
        return 0.0
    try:
        return parse_duration(text)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint=flag) from None


def parse_windows(values: tuple[str, ...]) -> dict[str, float]:
    return {name: seconds(name, "--window") for name in comma_list(values)}


# --reference-* defaults (serve, analyze, demo): hold, window, min drafts, recovery
REFERENCE_HOLD, REFERENCE_WINDOW, REFERENCE_MIN_DRAFTS, REFERENCE_RECOVERY = "7d", "1d", 1000, "15m"


def reference_options(func: F) -> F:
    """Options shared by `serve`, `analyze` and `demo`: how each series' reference is learned and replaced."""
    func = option("--reference-min-drafts", type=click.IntRange(min=1), default=REFERENCE_MIN_DRAFTS, show_default=True,
        help="A series' reference judges (the relative `degraded` verdict) once it pools this many healthy drafts.")(func)
    func = option("--reference-window", default=REFERENCE_WINDOW, show_default=True,
        help="Healthy traffic pooled into each series' reference (in hourly-or-finer buckets; older ones leave it).")(func)
    func = option("--reference-hold", default=REFERENCE_HOLD, show_default=True,
        help="A series degraded or broken for longer than this takes its current acceptance as the new normal; 0: never.")(func)
    func = option("--reference-recovery", default=REFERENCE_RECOVERY, show_default=True,
        help="A degraded or broken series counts as recovered (and its reference learns again) once its verdicts stay healthy this long.")(func)
    return func


def reference_rule_args(hold: str, window: str, min_drafts: int, recovery: str = REFERENCE_RECOVERY) -> tuple[float, float, int, float]:
    """--reference-* values as seconds (hold 0 = never, recovery 0 = at once): (hold, window, min drafts, recovery);
    click errors name the flag."""
    return (seconds(hold, "--reference-hold", zero_is_off=True), seconds(window, "--reference-window"), min_drafts,
            seconds(recovery, "--reference-recovery", zero_is_off=True))
