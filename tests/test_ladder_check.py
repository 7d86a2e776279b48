"""scripts/gpu-ladder/check.py — issue #31's acceptance check — on a synthetic ladder whose truth is known
(tests/ladder_synth.py): it passes where the estimate follows the server, and fails where the plain
calibration is not this server's."""

from __future__ import annotations

from helpers import script_module
from ladder_synth import rate, write_ladder


def _check():
    return script_module("scripts/gpu-ladder/check.py")


def test_the_estimate_meets_the_acceptance_check_on_a_ladder_whose_costs_are_known(tmp_path):
    """Speed-up and break-even as the check asks. best_k against the synthetic server's truth over every
    k (the check can only score the k a ladder ran: here the best is sometimes 1 or 3, which it did not)."""
    result = _check().check(str(write_ladder(tmp_path)))
    assert [row for row in result["failures"] if "speedup_error" not in row or abs(row["speedup_error"]) > 0.15] == []
    points = [row for row in result["rows"] if "concurrency" in row]
    assert len(points) == 27  # 9 loads × k = 2, 4, 8
    for row in points:
        k_max = int(row["run"][1:])
        truth = {k: rate(row["concurrency"], k) for k in range(k_max + 1)}
        assert truth[row["best_k"]] >= 0.95 * max(truth.values()), row
    assert sum(row["best_k_ok"] for row in points) >= 22  # and most are a k the ladder ran
    evens = [row for row in result["rows"] if "measured_break_even" in row]
    assert all(row["measured_break_even"] is not None for row in evens)
    assert all(rows[0][0] == 1 for rows in result["schedules"].values())


def test_the_check_fails_when_the_calibration_is_another_servers(tmp_path):
    result = _check().check(str(write_ladder(tmp_path, plain_scale=1.5)))  # the plain log 50 % faster than the clients saw
    assert any("speedup_error" in row and row["speedup_error"] < -0.15 for row in result["failures"])
