"""Is speculation paying off at this load? The speed-up over plain decoding, the break-even load and
the best k per load, from what a running server says of itself (pure math; issue 31).

Acceptance is not pay-off: verifying k drafted tokens costs the target real compute once a batch
is large, so past a break-even load a speculating server emits fewer tokens per second than the
same server decoding plainly. Two measurements answer it:

  * the speculating server's own throughput at each load — its stats lines (`Avg generation
    throughput`, `Running: N reqs`) or its /metrics (`vllm:generation_tokens_total`,
    `vllm:num_requests_running`) beside its spec counters, summed by load band over the intervals
    whose load held (state/load.py);
  * plain decoding's throughput at each load, from a calibration (`specdecode-exporter calibrate`,
    made from a plain run's or replica's log): a speculating server cannot tell it, since every
    step it takes drafts.

    speed-up(n)  = G_spec(n) / G_plain(n)         at the band's mean running requests n

is measured, not modelled. What the server did not run needs the step's cost, taken apart with
the calibration's plain step time τ(m) (m: tokens in the step; τ = running / G_plain, one token a
request a step):

    observed step  S(n)     = n·L / G_spec(n)            (L tokens a request a step)
    verification   τ(n·(1+K))                              (K = T/D, the tokens a draft held)
    drafting       δ(n)     = (S(n) − τ(n·(1+K))) / K      (the drafter's cost per drafted token)
    another k'     S(n, k') = τ(n·(1+k')) + k'·δ(n),  E(k') = 1 + Σ_{i<k'} r_i
                   tokens/s(n, k') = n·E(k') / S(n, k')   (k' = 0: plain, n / τ(n))

The best k at a load is the k' = 0…k with the most tokens/s, where it beats the k drafted by more
than the model's uncertainty (`best_k`; 0: do not speculate at this load), which vLLM
takes per batch size as `num_speculative_tokens_per_batch_size` (from 0.26: see `schedule`). The
break-even load is where the measured speed-up crosses 1, between two bands (log-linear); past
the busiest band seen it is extrapolated with that band's drafting cost, and said so.

What it cannot know, each said as a null with a reason or as a flag: a load not seen (nothing is
invented below the quietest band); plain throughput beyond the calibration's busiest load
(τ extrapolated linearly from its last two loads: `extrapolated`); acceptance past the drafted k
(E(k') for k' > k is not guessed: the best k is at most the k drafted); a calibration made on
other hardware or another model (`calibration_mismatch` where the observed step is faster than the
calibration's verification alone).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from exporter.config import PlainCalibration
from exporter.state.load import LoadProfile, LoadSums

BREAK_EVEN_SEARCH = 16.0  # past the busiest band, the break-even is looked for up to this many times its load
BAND_HALF_WIDTH = math.sqrt(2.0)
# the modelled tokens/s of a k' not drafted carry the model's error (the verification and drafting costs
# taken apart from one observed step): a change of k is advised only for more than this
CHANGE_MARGIN = 0.05  # a band holds round(log2(running)): running within ×/÷ √2 of its centre


@dataclass(frozen=True, slots=True)
class LoadPayoff:
    """Speculation at one load: measured against plain decoding, and the k that would pay best."""

    running: float  # the mean running requests of the band (or window)
    speedup: float | None  # the server's tokens/s ÷ plain decoding's at the same load
    best_k: int | None  # the k' with the most tokens/s at this load (0: plain decoding is faster)
    tokens_per_second: float
    plain_tokens_per_second: float | None
    mean_acceptance_length: float | None
    drafted_length: float | None  # T/D
    draft_seconds_per_token: float | None  # δ: what one drafted token costs at this load
    speedup_by_k: tuple[float, ...]  # modelled tokens/s for k' = 0..k ÷ plain's
    intervals: int
    extrapolated: bool  # the plain throughput or a verification cost lies past the calibration's busiest load
    calibration_mismatch: bool  # the observed step was faster than the calibration's verification alone


@dataclass(frozen=True, slots=True)
class Payoff:
    by_load: tuple[LoadPayoff, ...]  # one per steady load band, by running
    break_even_running: float | None  # running requests above which speculation is slower than plain
    break_even_reason: str  # how it was found, or why it is null
    now: LoadPayoff | None  # the current window's
    reason: str | None  # why there is no estimate at all (None: there is one)
    schedule: tuple[tuple[int, int, int], ...]  # (first, last batch size, k): vLLM's num_speculative_tokens_per_batch_size


def plain_step_seconds(calibration: PlainCalibration, tokens: float) -> tuple[float, bool]:
    """(τ(tokens), extrapolated): plain decoding's step time with `tokens` in the batch, interpolated
    log-log between the calibration's loads; flat below the quietest (a step is never cheaper than
    one request's), linear past the busiest from its last two loads (the compute-bound regime)."""
    points = calibration.points
    steps = [(p.running, p.running / p.tokens_per_second) for p in points]
    if tokens <= steps[0][0]:
        return steps[0][1], False
    for (m0, t0), (m1, t1) in itertools.pairwise(steps):
        if tokens <= m1:
            share = (math.log(tokens) - math.log(m0)) / (math.log(m1) - math.log(m0))
            return math.exp(math.log(t0) + share * (math.log(t1) - math.log(t0))), False
    (m0, t0), (m1, t1) = steps[-2] if len(steps) > 1 else steps[-1], steps[-1]
    slope = max(0.0, (t1 - t0) / (m1 - m0)) if m1 > m0 else 0.0
    return t1 + slope * (tokens - m1), True


def expected_tokens(rates: Sequence[float], k: int) -> float:
    """E(k') = 1 + Σ_{i<k'} r_i."""
    return 1.0 + sum(rates[:k])


def at_load(running: float, sums: LoadSums, rates: Sequence[float], calibration: PlainCalibration, k: int | None) -> LoadPayoff | None:
    """The pay-off at `running` requests from one band's (or window's) sums; None without throughput."""
    generated = sums.generation_rate
    if generated is None or generated <= 0 or running <= 0:
        return None
    length, drafted = sums.mean_acceptance_length, sums.drafted_length
    step_plain, beyond = plain_step_seconds(calibration, running)
    plain = running / step_plain
    speedup = generated / plain
    if length is None or drafted is None or not drafted:
        return LoadPayoff(running, speedup, None, generated, plain, length, drafted, None, (), sums.intervals, beyond, False)
    observed = running * length / generated
    verify, verify_beyond = plain_step_seconds(calibration, running * (1.0 + drafted))
    mismatch = observed < verify
    per_token = max(0.0, (observed - verify) / drafted)
    top = min(len(rates), k) if k else len(rates)
    curve = [1.0]  # k' = 0: plain
    for candidate in range(1, top + 1):
        held = min(float(candidate), drafted)  # a drafter that drafts fewer than k' pays for what it drafts
        step, _ = plain_step_seconds(calibration, running * (1.0 + held))
        curve.append((expected_tokens(rates, candidate) * step_plain) / (step + held * per_token))
    best = best_k(curve, round(drafted))
    return LoadPayoff(running, speedup, best, generated, plain, length, drafted, per_token, tuple(curve), sums.intervals,
                      beyond or verify_beyond, mismatch)


def best_k(curve: Sequence[float], drafted: int) -> int:
    """The k to run at this load from the modelled tokens/s of k' = 0..k (÷ plain's): a change from the
    k drafted is advised only where the model says it pays more than its own uncertainty (CHANGE_MARGIN);
    among the k' within that margin of the best, plain decoding if it is one (speculation that gains less
    is not worth its risk), else the one nearest the k drafted — the one point of the curve that was
    measured, not modelled."""
    top = max(curve)
    close = [k for k, value in enumerate(curve) if value * (1.0 + CHANGE_MARGIN) >= top]
    if 0 in close:
        return 0
    return min(close, key=lambda k: (abs(k - drafted), k))


def _rates(sums: LoadSums) -> tuple[float, ...]:
    return tuple(count / sums.drafts for count in sums.accepted_per_position) if sums.drafts else ()


def estimate(profile: LoadProfile, now: LoadSums | None, now_rates: Sequence[float], calibration: PlainCalibration | None,
             k: int | None) -> Payoff:
    """The pay-off by load band, at the current window, the break-even load and a k per batch size."""
    if calibration is None or not calibration.points:
        return Payoff((), None, "no calibration", None,
                      "no plain-decoding calibration: make one from a plain run's log (specdecode-exporter calibrate PLAIN_LOG "
                      "--out calibration.json) and pass --calibration", ())
    by_load = tuple(
        payoff for payoff in (at_load(sums.mean_running or 0.0, sums, _rates(sums), calibration, k) for _, sums in profile.bands)
        if payoff is not None
    )
    current = None
    if now is not None and now.mean_running is not None:
        current = at_load(now.mean_running, now, now_rates, calibration, k)
    if not by_load and current is None:
        return Payoff((), None, "no load seen", None,
                      "no interval printed its load (vLLM's `Engine NNN: … Running: N reqs` stats line, or the scraped "
                      "vllm:num_requests_running and vllm:generation_tokens_total)", ())
    at, why = break_even(by_load, calibration)
    return Payoff(by_load, at, why, current, None, schedule(by_load))


def break_even(by_load: Sequence[LoadPayoff], calibration: PlainCalibration) -> tuple[float | None, str]:
    """The running requests where the measured speed-up falls through 1 (first crossing from below,
    log-linear between bands); past the busiest band, the model with that band's drafting cost."""
    known = [p for p in by_load if p.speedup is not None]
    if not known:
        return None, "no band has a speed-up"
    if known[0].speedup is not None and known[0].speedup < 1.0:
        return None, f"slower than plain decoding at every load seen, from the quietest ({known[0].running:.3g} running)"
    for low, high in itertools.pairwise(known):
        assert low.speedup is not None and high.speedup is not None
        if low.speedup >= 1.0 > high.speedup:
            share = (low.speedup - 1.0) / (low.speedup - high.speedup)
            at = math.exp(math.log(low.running) + share * (math.log(high.running) - math.log(low.running)))
            return at, f"measured: the speed-up falls through 1 between {low.running:.3g} and {high.running:.3g} running"
    top = known[-1]
    if top.draft_seconds_per_token is None or top.drafted_length is None or top.mean_acceptance_length is None:
        return None, f"faster than plain decoding at every load seen, up to {top.running:.3g} running"
    running = top.running
    while running < top.running * BREAK_EVEN_SEARCH:
        running *= 1.1
        plain, _ = plain_step_seconds(calibration, running)
        verify, _ = plain_step_seconds(calibration, running * (1.0 + top.drafted_length))
        if top.mean_acceptance_length * plain / (verify + top.drafted_length * top.draft_seconds_per_token) < 1.0:
            return running, (f"extrapolated past the busiest load seen ({top.running:.3g} running) with its drafting cost "
                             "and the calibration's plain steps")
    return None, f"faster than plain decoding at every load seen (up to {top.running:.3g} running) and, modelled, up to {running:.3g}"


def schedule(by_load: Sequence[LoadPayoff]) -> tuple[tuple[int, int, int], ...]:
    """The best k per load as vLLM's `num_speculative_tokens_per_batch_size` takes it (0.26.0
    v1/spec_decode/dynamic/utils.py:7-78): inclusive batch-size ranges from 1, each with its k;
    vLLM carries the last k on to its max_num_seqs. Bands meet half-way (log) between their loads."""
    known = [p for p in by_load if p.best_k is not None]
    if not known:
        return ()
    rows: list[list[int]] = []
    for i, point in enumerate(known):
        first = 1 if i == 0 else rows[-1][1] + 1
        edge = math.sqrt(point.running * known[i + 1].running) if i + 1 < len(known) else point.running * BAND_HALF_WIDTH
        last = max(first, math.floor(edge))
        assert point.best_k is not None
        if rows and rows[-1][2] == point.best_k:
            rows[-1][1] = last
        else:
            rows.append([first, last, point.best_k])
    return tuple((first, last, k) for first, last, k in rows)


def _load_json(point: LoadPayoff) -> dict[str, object]:
    def rounded(value: float | None, digits: int = 4) -> float | None:
        return None if value is None else round(value, digits)

    return {
        "running": round(point.running, 2),
        "speedup": rounded(point.speedup),
        "best_k": point.best_k,
        "tokens_per_second": round(point.tokens_per_second, 1),
        "plain_tokens_per_second": rounded(point.plain_tokens_per_second, 1),
        "mean_acceptance_length": rounded(point.mean_acceptance_length),
        "drafted_length": rounded(point.drafted_length),
        "draft_seconds_per_token": rounded(point.draft_seconds_per_token, 7),
        "speedup_by_k": [round(value, 4) for value in point.speedup_by_k] or None,
        "intervals": point.intervals,
        "extrapolated": point.extrapolated,
        "calibration_mismatch": point.calibration_mismatch,
    }


def payoff_json(payoff: Payoff, calibration: PlainCalibration | None) -> dict[str, object]:
    """The pay-off as the reports print it (analyze's JSON, /api/v1/status): nulls with their reasons."""
    return {
        "reason": payoff.reason,
        "now": None if payoff.now is None else _load_json(payoff.now),
        "by_load": [_load_json(point) for point in payoff.by_load],
        "break_even_running": None if payoff.break_even_running is None else round(payoff.break_even_running, 1),
        "break_even_reason": payoff.break_even_reason,
        # vLLM ≥ 0.26: --speculative-config '{…, "num_speculative_tokens_per_batch_size": [[1, 12, 4], [13, 45, 2], [46, 256, 0]]}'
        "num_speculative_tokens_per_batch_size": [list(row) for row in payoff.schedule] or None,
        "calibration": None if calibration is None else calibration.source,
    }
