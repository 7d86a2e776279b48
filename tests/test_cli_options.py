"""The one parser of the CLI's durations and comma lists (exporter/cli/options.py)."""

from __future__ import annotations

import click
import pytest

from exporter.cli.options import comma_list, parse_windows, reference_rule_args, seconds


@pytest.mark.parametrize(("text", "expected"), [("30s", 30.0), ("5m", 300.0), (" 1h ", 3600.0), ("1d", 86400.0), ("2.5", 2.5)])
def test_a_duration_is_seconds(text, expected):
    assert seconds(text, "--x") == expected
    assert seconds(text, "--x", zero_is_off=True) == expected


@pytest.mark.parametrize("text", ["0", "0s", "0m", "0.0h", "00d", "never"])
def test_zero_in_any_unit_is_off_where_off_is_allowed_and_an_error_elsewhere(text):
    assert seconds(text, "--reference-hold", zero_is_off=True) == 0.0
    with pytest.raises(click.BadParameter) as error:
        seconds(text, "--stale-after")
    assert error.value.param_hint == "--stale-after"


@pytest.mark.parametrize("text", ["", "5x", "-1m", "0.5.0s", "h"])
def test_a_bad_duration_names_the_flag_and_the_value(text):
    with pytest.raises(click.BadParameter) as error:
        seconds(text, "--metrics-max-age", zero_is_off=True)
    assert error.value.param_hint == "--metrics-max-age" and repr(text) in str(error.value.message)


def test_comma_lists_and_repeated_flags_are_one_list():
    assert comma_list(("1m, 5m", "", "1h,,")) == ("1m", "5m", "1h")
    assert parse_windows(("1m,5m", "1h")) == {"1m": 60.0, "5m": 300.0, "1h": 3600.0}
    with pytest.raises(click.BadParameter) as error:
        parse_windows(("1m,5q",))
    assert error.value.param_hint == "--window"
    assert reference_rule_args("0", "1d", 5) == (0.0, 86400.0, 5, 900.0)
