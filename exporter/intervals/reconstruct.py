"""Reconstruct the number of drafts D and accepted-per-position A_i from a vLLM V1 spec line.

A V1-c/d/e line prints A and T exactly, the mean acceptance length M = 1 + A/D rounded to 2
decimals, and k per-position rates r_i = A_i/D rounded to 3 decimals. D itself is not printed.

Method: every integer D that is consistent with *all* printed numbers is a candidate:
  * |1 + A/D − M| ≤ 0.005                      (M's rounding)
  * ⌈T/k⌉ ≤ D ≤ T                              (a draft has 1..k tokens)
  * for each i an integer A_i with |A_i/D − r_i| ≤ 0.0005, and Σ A_i = A   (the rates' rounding)
The candidates form [D_lo, D_hi]. If T/k is a candidate it is chosen (fixed-length drafts, the
case for draft_model, EAGLE, MTP and DFlash, explain the numbers exactly); otherwise the
candidate whose implied M and Σr_i lie closest to the printed ones. We never assume T = k·D:
n-gram drafts are often shorter, and then T/k simply is not a candidate.

Error bound (proved by tests/test_reconstruct.py against exact counts):
  * the true D is always in [D_lo, D_hi] and so is the estimate, hence |D̂ − D| ≤ D_hi − D_lo;
    it is exact when the range holds one integer;
  * from M alone D_hi − D_lo ≤ 0.01·A/((M−1)² − 0.005²) + 1 ≈ 0.01·D/(L−1) + 1, i.e. under
    1%/(L−1) of D per line (0.32% at L = 4.12);
  * per position, |Â_i − A_i| ≤ 0.0005·(D + D̂) + r_i·|D̂ − D| + 1;
  * summed over a window the bounds add up: |ΣD̂ − ΣD| ≤ Σ(D_hi − D_lo).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

MEAN_LENGTH_HALF_STEP = 0.005  # printed with %.2f
RATE_HALF_STEP = 0.0005  # printed with %.3f
_EPS = 1e-9
_MAX_CANDIDATES = 20_000  # beyond this the per-candidate check is skipped (huge A, tiny M − 1)


@dataclass(frozen=True, slots=True)
class Reconstruction:
    """D̂ and Â_i for one spec line, with the range of D the printed numbers allow."""

    drafts: int
    drafts_low: int
    drafts_high: int
    accepted_per_position: tuple[int, ...]

    @property
    def exact(self) -> bool:
        return self.drafts_low == self.drafts_high


def _range_from_mean_length(accepted: int, mean_length: float) -> tuple[float, float]:
    excess = mean_length - 1.0
    low = accepted / (excess + MEAN_LENGTH_HALF_STEP + _EPS)
    if excess - MEAN_LENGTH_HALF_STEP - _EPS <= 0:
        return low, math.inf
    return low, accepted / (excess - MEAN_LENGTH_HALF_STEP - _EPS)


def _rate_limits(rates: tuple[float, ...]) -> tuple[list[float], list[float]]:
    """Each rate's rounding interval, clipped to [0, 1] (so A_i stays within 0..D without clamping)."""
    return [max(0.0, rate - RATE_HALF_STEP) for rate in rates], [min(1.0, rate + RATE_HALF_STEP) for rate in rates]


def _position_bounds(limits: tuple[list[float], list[float]], drafts: int) -> tuple[list[int], list[int]]:
    """For each position, the integers A_i that round to its printed rate at this D: [low_i, high_i]."""
    ceil, floor = math.ceil, math.floor
    lows = [ceil(rate * drafts - _EPS) for rate in limits[0]]
    highs = [floor(rate * drafts + _EPS) for rate in limits[1]]
    return lows, highs


def _fitting_bounds(limits: tuple[list[float], list[float]], drafts: int, accepted: int) -> tuple[list[int], list[int]] | None:
    """The position bounds at this D if integers A_i within them can sum to A, else None."""
    lows, highs = _position_bounds(limits, drafts)
    if any(map(int.__gt__, lows, highs)) or not sum(lows) <= accepted <= sum(highs):
        return None
    return lows, highs


def _residual(accepted: int, drafts: int, mean_length: float | None, rates: tuple[float, ...]) -> float:
    """How far the numbers a candidate implies are from the printed ones, in rounding steps."""
    per_draft = accepted / drafts
    misses = []
    if mean_length is not None:
        misses.append(abs(1.0 + per_draft - mean_length) / MEAN_LENGTH_HALF_STEP)
    if rates:
        misses.append(abs(per_draft - sum(rates)) / (RATE_HALF_STEP * len(rates)))
    return max(misses, default=0.0)


def split_positions(rates: tuple[float, ...], drafts: int, accepted: int) -> tuple[int, ...]:
    """Â_i ≈ r_i·D, adjusted within each rate's rounding so that Σ Â_i = A where possible."""
    if not rates or drafts <= 0:
        return tuple(0 for _ in rates)
    return _split(rates, drafts, accepted, *_position_bounds(_rate_limits(rates), drafts))


def _split(rates: tuple[float, ...], drafts: int, accepted: int, lows: list[int], highs: list[int]) -> tuple[int, ...]:
    # A rate's rounding interval is centred on r_i·D, so when it holds any integer it holds round(r_i·D)
    counts = [round(rate * drafts) for rate in rates]
    if any(map(int.__lt__, counts, lows)) or any(map(int.__gt__, counts, highs)):  # an interval without one
        counts = [min(max(count, low), max(low, high)) for count, low, high in zip(counts, lows, highs, strict=True)]
    remainder = accepted - sum(counts)
    if remainder == 0:
        return tuple(counts)
    # Move one token at a time to the position whose exact value r_i·D is furthest on that side
    # (a heap of (−distance, −i): the largest distance first, the highest position on a tie).
    step = 1 if remainder > 0 else -1
    limit = highs if step > 0 else lows
    heap = [(-step * (rate * drafts - count), -i) for i, (rate, count) in enumerate(zip(rates, counts, strict=True)) if counts[i] != limit[i]]
    heapq.heapify(heap)
    while remainder != 0 and heap:
        distance, negative_i = heapq.heappop(heap)
        i = -negative_i
        counts[i] += step
        remainder -= step
        if counts[i] != limit[i]:
            heapq.heappush(heap, (distance + 1, negative_i))
    return tuple(counts)


def reconstruct(
    accepted: int,
    draft_tokens: int,
    mean_length: float | None,
    rates: tuple[float, ...] | None,
) -> Reconstruction | None:
    """Reconstruct D and A_i; None when the line carries too little to know D (V1-a, V1-b, T = 0)."""
    rates = rates or ()
    if draft_tokens <= 0 or (mean_length is None and not rates):
        return None
    k = len(rates) or None
    low: float = math.ceil(draft_tokens / k) if k else 1
    high: float = draft_tokens
    if mean_length is not None and accepted > 0:
        m_low, m_high = _range_from_mean_length(accepted, mean_length)
        low, high = max(low, m_low), min(high, m_high)
    if rates and accepted > 0:
        total = sum(rates)
        slack = RATE_HALF_STEP * len(rates)
        low = max(low, accepted / (total + slack + _EPS))
        if total - slack > 0:
            high = min(high, accepted / (total - slack - _EPS))
    first, last = max(1, math.ceil(low - _EPS)), math.floor(high + _EPS)
    if first > last:
        return None
    fitting: dict[int, tuple[list[int], list[int]]] = {}  # candidate D → its position bounds
    if last - first > _MAX_CANDIDATES:
        centre = accepted / sum(rates) if rates and sum(rates) > 0 else (first + last) / 2
        candidates = sorted({first, min(max(round(centre), first), last), last})
    elif not rates:
        candidates = list(range(first, last + 1))
    else:
        limits = _rate_limits(rates)
        for d in range(first, last + 1):
            bounds = _fitting_bounds(limits, d, accepted)
            if bounds is not None:
                fitting[d] = bounds
        candidates = list(fitting)
    if not candidates:
        return None
    if k and draft_tokens % k == 0 and draft_tokens // k in candidates:
        drafts = draft_tokens // k
    else:
        drafts = min(candidates, key=lambda d: (_residual(accepted, d, mean_length, rates), d))
    return Reconstruction(
        drafts=drafts,
        drafts_low=candidates[0],
        drafts_high=candidates[-1],
        accepted_per_position=_split(rates, drafts, accepted, *fitting[drafts]) if drafts in fitting else split_positions(rates, drafts, accepted),
    )
