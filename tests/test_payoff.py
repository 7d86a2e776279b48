"""The pay-off estimate (exporter/judge/payoff.py) on a server whose costs are known: a synthetic step
model — plain step τ(m) for m tokens in the batch, the drafter's δ per drafted token — from which
the bands a log would give are built. The real ladder judges it against a measurement
(tests/golden/…/load-ladder); here the mechanism is held to its own arithmetic and its edges."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from exporter.config import DeriveSettings, PlainCalibration, PlainPoint
from exporter.judge.calibration import CalibrationError, calibration_from_json, calibration_json
from exporter.judge.payoff import estimate, plain_step_seconds, schedule
from exporter.state.load import LoadProfile, LoadSums, band_of

RATES = (0.74, 0.55, 0.40, 0.29)  # per-position acceptance (prefix), the ladder drafter's at k = 4
LOADS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def tau(tokens: float) -> float:
    """A plain step: launch- and weight-bound to 64 tokens, then compute-bound (an H200 with an 8B target)."""
    return 0.0047 + 0.0000245 * max(0.0, tokens - 64.0)


def delta(running: float) -> float:
    """The drafter's cost per drafted token: launches at small batches, a little compute at large ones."""
    return 0.0012 + 0.000004 * running


def spec_rate(running: float, k: int) -> float:
    length = 1 + sum(RATES[:k])
    return running * length / (tau(running * (1 + k)) + k * delta(running))


def calibration() -> PlainCalibration:
    return PlainCalibration(tuple(PlainPoint(float(n), n / tau(n), 3) for n in LOADS), source="synthetic")


def sums(running: float, k: int = 4, seconds: float = 60.0) -> LoadSums:
    rate = spec_rate(running, k)
    drafts = round(rate * seconds / (1 + sum(RATES[:k])))
    positions = tuple(round(drafts * r) for r in RATES[:k])
    return LoadSums(intervals=10, seconds=seconds, generated=rate * seconds, running=running * seconds, drafts=drafts,
                    accepted=sum(positions), draft_tokens=drafts * k, accepted_per_position=positions)


def profile(loads=LOADS, k: int = 4) -> LoadProfile:
    bands = {}
    for n in loads:
        band = band_of(n)
        assert band is not None
        bands[band] = sums(n, k)
    return LoadProfile(tuple(((band, 0), band_sums) for band, band_sums in sorted(bands.items())))  # one pace a band: no stall


def test_the_plain_step_is_read_between_and_beyond_the_calibrated_loads():
    cal = calibration()
    assert plain_step_seconds(cal, 16.0) == (pytest.approx(tau(16)), False)
    between, _ = plain_step_seconds(cal, 90.0)  # log-log between 64 and 128
    assert tau(64) < between < tau(128)
    beyond, extrapolated = plain_step_seconds(cal, 1280.0)  # verification of 256 × 5 tokens: linear past 256
    assert extrapolated and beyond == pytest.approx(tau(1280), rel=1e-6)


def test_the_speedup_at_each_band_is_the_servers_tokens_over_plain_decodings():
    payoff = estimate(profile(), None, (), calibration(), 4)
    assert payoff.reason is None
    for band, n in zip(payoff.by_load, LOADS, strict=True):
        assert band.running == pytest.approx(n)
        assert band.speedup == pytest.approx(spec_rate(n, 4) / (n / tau(n)), rel=1e-3)


def test_the_best_k_is_the_k_with_the_most_tokens_at_that_load():
    payoff = estimate(profile(), None, (), calibration(), 4)
    for band, n in zip(payoff.by_load, LOADS, strict=True):
        truth = {k: spec_rate(n, k) if k else n / tau(n) for k in range(5)}
        best = max(truth, key=lambda k: (truth[k], -k))
        assert truth[band.best_k] >= 0.95 * truth[best], (n, band.best_k, best)  # a change of k only for more than 5 %
    assert payoff.by_load[0].best_k > 0 and payoff.by_load[-1].best_k == 0  # speculate when quiet, not when full


def test_a_change_of_k_is_advised_only_beyond_the_models_uncertainty():
    from exporter.judge.payoff import best_k

    assert best_k([1.0, 1.40, 1.50, 1.48, 1.47], drafted=4) == 4  # 2 is the top, but 4 (measured) is within 5 %
    assert best_k([1.0, 1.40, 1.60, 1.48, 1.40], drafted=4) == 2  # 2 pays 8 % more than any k near the drafted one
    assert best_k([1.0, 1.03, 0.99, 0.95, 0.90], drafted=4) == 0  # speculation within 5 % of plain is not worth it


def test_the_break_even_lies_between_the_bands_where_the_speedup_crosses_one():
    payoff = estimate(profile(), None, (), calibration(), 4)
    speedups = [spec_rate(n, 4) / (n / tau(n)) for n in LOADS]
    crossing = next(i for i, s in enumerate(speedups) if s < 1)
    assert LOADS[crossing - 1] < payoff.break_even_running < LOADS[crossing]
    assert payoff.break_even_reason.startswith("measured")


def test_past_the_busiest_band_the_break_even_is_extrapolated_and_said_so():
    quiet = estimate(profile(loads=(1, 2, 4, 8, 16)), None, (), calibration(), 4)
    assert quiet.break_even_running is not None and quiet.break_even_reason.startswith("extrapolated")
    full = estimate(profile(), None, (), calibration(), 4)
    assert quiet.break_even_running == pytest.approx(full.break_even_running, rel=0.6)  # a guess past what was seen, within a band or so


def test_the_k_per_batch_size_is_vllms_schedule():
    payoff = estimate(profile(), None, (), calibration(), 4)
    rows = payoff.schedule
    assert rows[0][0] == 1 and all(first <= last for first, last, _ in rows)
    assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(rows))  # inclusive ranges that meet
    assert all(0 <= k <= 4 for _, _, k in rows) and rows[-1][2] == 0
    assert schedule(()) == ()


def test_the_current_window_gives_the_speedup_now():
    payoff = estimate(profile(), sums(128), RATES, calibration(), 4)
    assert payoff.now is not None and payoff.now.speedup == pytest.approx(spec_rate(128, 4) / (128 / tau(128)), rel=1e-3)


def test_without_a_calibration_or_a_load_it_says_why():
    assert "no plain-decoding calibration" in (estimate(profile(), None, (), None, 4).reason or "")
    assert "printed its load" in (estimate(LoadProfile(), None, (), calibration(), 4).reason or "")


def test_a_step_faster_than_its_verification_is_a_calibration_that_is_not_this_servers():
    slow = PlainCalibration(tuple(PlainPoint(p.running, p.tokens_per_second / 3, 3) for p in calibration().points))
    payoff = estimate(profile(), None, (), slow, 4)
    assert all(band.calibration_mismatch for band in payoff.by_load)


def test_the_verdict_says_slower_than_plain_only_over_a_working_drafter():
    from exporter.judge.assess import slower_than_plain
    from exporter.judge.verdict import Verdict

    busy = estimate(profile(), sums(256), RATES, calibration(), 4)
    ok = Verdict("ok", "all_positions_pay", "fine")
    said = slower_than_plain(ok, busy, DeriveSettings())
    assert (said.state, said.reason) == ("wasteful", "slower_than_plain") and "break-even" in said.message
    broken = Verdict("broken", "position0_collapse", "…")
    assert slower_than_plain(broken, busy, DeriveSettings()) is broken  # the drafter's fault comes first
    quiet = estimate(profile(), sums(1), RATES, calibration(), 4)
    assert slower_than_plain(ok, quiet, DeriveSettings()) is ok


def test_a_calibration_file_round_trips_and_a_bad_one_says_what_is_wrong():
    cal = calibration()
    again = calibration_from_json(json.loads(json.dumps(calibration_json(cal))))
    assert [p.running for p in again.points] == [p.running for p in cal.points]
    assert all(math.isclose(a.tokens_per_second, b.tokens_per_second, rel_tol=1e-4) for a, b in zip(again.points, cal.points, strict=True))
    for bad, why in (({"kind": "x"}, "not a"), ({**calibration_json(cal), "version": 9}, "version"),
                     ({**calibration_json(cal), "points": []}, "no points"),
                     ({**calibration_json(cal), "points": [{"running": 4, "tokens_per_second": 1}, {"running": 2, "tokens_per_second": 1}]}, "in order"),
                     ({**calibration_json(cal), "points": [{"running": "many"}]}, "point 0")):
        with pytest.raises(CalibrationError, match=why):
            calibration_from_json(bad)
