"""serve's flags → Settings (cli/settings.py): the flags click parses, translated without starting anything."""

from __future__ import annotations

import dataclasses

import click
import pytest

from exporter.cli.main import serve
from exporter.cli.settings import ServeFlags, judged_windows, serve_settings
from exporter.config import DeriveSettings, ExpositionSettings, Settings


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in [n for n in os.environ if n.startswith("SPECDECODE_")]:
        monkeypatch.delenv(name)


def _settings(*args: str) -> Settings:
    context = serve.make_context("serve", list(args))
    return serve_settings(ServeFlags(**context.params))


def test_every_serve_flag_is_a_field_of_the_flags_record() -> None:
    assert {param.name for param in serve.params} == {field.name for field in dataclasses.fields(ServeFlags)}


def test_the_flags_defaults_are_the_settings_defaults() -> None:
    settings = _settings("--log", "vllm.log")
    windows = {"1m": 60.0, "5m": 300.0, "1h": 3600.0}
    assert settings == Settings(logs=("vllm.log",), windows=windows, derive=DeriveSettings(), exposition=ExpositionSettings())


def test_flags_are_translated_into_their_settings() -> None:
    settings = _settings(
        "--log", "a.log", "--target", "127.0.0.1:8000", "--window", "1m,1h", "--health-window", "1h", "--derived-windows", "all",
        "--speedup-candidates", "all", "--conditional-gauges", "--metrics-max-age", "0", "--reference-hold", "0",
        "--reference-window", "2h", "--reference-recovery", "5m", "--stale-after", "30s", "--draft-token-cost", "0.1",
    )
    target = "http://127.0.0.1:8000/metrics"
    assert settings.targets == (target,) and settings.pairs == ((target, "a.log"),)  # one log and one target pair themselves
    assert settings.windows == {"1m": 60.0, "1h": 3600.0}
    assert settings.exposition == ExpositionSettings(derived_windows=("all",), speedup_all=True, conditional=True, max_age=0.0)
    assert (settings.reference_hold, settings.reference_window, settings.reference_recovery) == (0.0, 7200.0, 300.0)
    assert settings.derive.health_window == "1h" and settings.derive.stale_after == 30.0
    assert settings.derive.draft_token_cost_override == 0.1


def test_an_explicit_pair_replaces_the_default_one() -> None:
    settings = _settings("--log", "a.log", "--log", "b.log", "--target", "http://127.0.0.1:8000/metrics", "--pair", "b.log=127.0.0.1:8000")
    assert settings.pairs == (("http://127.0.0.1:8000/metrics", "b.log"),)


@pytest.mark.parametrize(
    ("args", "error", "names"),
    [
        ((), click.UsageError, "nothing to read"),
        (("--log", "a.log", "--health-window", "2h"), click.BadParameter, "--health-window"),
        (("--log", "a.log", "--derived-windows", "2h"), click.BadParameter, "--derived-windows"),
        (("--log", "a.log", "--pair", "a.log"), click.UsageError, "--pair"),
        (("--log", "a.log", "--stale-after", "soon"), click.BadParameter, "--stale-after"),
        (("--log", "a.log", "--listen", "nowhere"), click.UsageError, "nowhere"),
    ],
)
def test_a_bad_flag_is_a_click_error_naming_it(args: tuple[str, ...], error: type[click.ClickException], names: str) -> None:
    with pytest.raises(error) as raised:
        _settings(*args)
    assert names in (raised.value.format_message() + str(getattr(raised.value, "param_hint", "")))


def test_the_judged_window_must_be_one_of_the_windows() -> None:
    assert judged_windows(("1m", "5m"), "5m") == {"1m": 60.0, "5m": 300.0}
    with pytest.raises(click.BadParameter):
        judged_windows(("1m", "5m"), "1h")


@pytest.mark.slow  # starts the simulated vLLM (a loopback server); the sidecar's run is captured, not started
def test_demo_runs_the_sidecar_on_serves_defaults_with_its_own_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import exporter.cli.serve
    from exporter.cli.simulation import demo

    ran: list[Settings] = []
    monkeypatch.setattr(exporter.cli.serve, "run", ran.append)
    result = CliRunner().invoke(demo, ["--listen", "127.0.0.1:19847", "--log-interval", "2", "--speed", "4", "--reference-hold", "1d"])
    assert result.exit_code == 0, result.output
    (settings,) = ran
    (log,), (target,) = settings.logs, settings.targets
    assert log.endswith("/vllm.log") and target.startswith("http://127.0.0.1:") and target.endswith("/metrics")
    # what demo ran with before its flags went through serve_settings, field by field
    assert settings == Settings(
        logs=(log,), targets=(target,), pairs=((target, log),), from_start=True, listen="127.0.0.1:19847",
        windows={"1m": 60.0, "5m": 300.0, "1h": 3600.0}, scrape_interval=2.0 / 4.0, derive=DeriveSettings(health_window="1m"),
        reference_hold=86400.0, reference_window=86400.0, reference_min_drafts=1000, reference_recovery=900.0,
    )


def test_a_bad_demo_flag_stops_it_before_the_simulator_starts() -> None:
    from click.testing import CliRunner

    from exporter.cli.simulation import demo

    result = CliRunner().invoke(demo, ["--reference-hold", "soon"])
    assert result.exit_code == 2 and "--reference-hold" in result.output and "simulated vLLM" not in result.output
