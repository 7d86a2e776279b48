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

Plausibility (issue 18): a position is reached only through the one before it, so the true counts
satisfy D ≥ A_0 ≥ A_1 ≥ … ≥ A_{k−1}. The split keeps that: each Â_i stays inside its rate's rounding
interval narrowed to what non-increasing counts allow (low_i = max of the lows of positions ≥ i,
high_i = min of the highs of positions ≤ i), which the true counts always satisfy at the true D,
so the per-position bound above is kept. Every conditional rate Â_i/Â_{i−1} is then in [0, 1], and
so is any window's, since sums of non-increasing counts are non-increasing.

`reconstruct_many` (at the end) is the same over many lines at once, with numpy, bit for bit.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

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
    """For each position, the integers A_i that round to its printed rate at this D and keep the
    counts non-increasing: [low_i, high_i], low_i the largest low of positions ≥ i, high_i the
    smallest high of positions ≤ i (A_i ≥ A_j for i < j: position j is reached only through i)."""
    ceil, floor = math.ceil, math.floor
    lows = [ceil(rate * drafts - _EPS) for rate in limits[0]]
    highs = [floor(rate * drafts + _EPS) for rate in limits[1]]
    for i in range(len(lows) - 2, -1, -1):
        lows[i] = max(lows[i], lows[i + 1])
    for i in range(1, len(highs)):
        highs[i] = min(highs[i], highs[i - 1])
    return lows, highs


def _fitting_bounds(limits: tuple[list[float], list[float]], drafts: int, accepted: int) -> tuple[list[int], list[int]] | None:
    """The position bounds at this D if non-increasing integers A_i within them can sum to A, else None.

    Any sum between Σ low_i and Σ high_i is reachable by non-increasing counts (raise the first
    position below its high, one token at a time), so the sums decide."""
    lows, highs = _position_bounds(limits, drafts)
    if any(map(int.__gt__, lows, highs)) or not sequential_sum(lows) <= accepted <= sequential_sum(highs):
        return None
    return lows, highs


def sequential_sum(values: Iterable[float]) -> float:
    """Left-to-right sum (Python ≥ 3.12's sum() compensates float rounding; the batch path adds in order)."""
    total: float = 0  # stays an int for ints
    for value in values:
        total += value
    return total


def _residual(accepted: int, drafts: int, mean_length: float | None, rates: tuple[float, ...]) -> float:
    """How far the numbers a candidate implies are from the printed ones, in rounding steps."""
    per_draft = accepted / drafts
    misses = []
    if mean_length is not None:
        misses.append(abs(1.0 + per_draft - mean_length) / MEAN_LENGTH_HALF_STEP)
    if rates:
        misses.append(abs(per_draft - sequential_sum(rates)) / (RATE_HALF_STEP * len(rates)))
    return max(misses, default=0.0)


def split_positions(rates: tuple[float, ...], drafts: int, accepted: int) -> tuple[int, ...]:
    """Non-increasing Â_i ≈ r_i·D, within each rate's rounding, with Σ Â_i = A where possible."""
    if not rates or drafts <= 0:
        return tuple(0 for _ in rates)
    return _split(rates, drafts, accepted, *_position_bounds(_rate_limits(rates), drafts))


def split_targets(rates: tuple[float, ...], drafts: int) -> list[float]:
    """r_i·D made non-increasing (a running minimum), so that rounding it cannot climb at the tail."""
    targets, ceiling = [], math.inf
    for rate in rates:
        ceiling = min(ceiling, rate * drafts)
        targets.append(ceiling)
    return targets


def _split(rates: tuple[float, ...], drafts: int, accepted: int, lows: list[int], highs: list[int]) -> tuple[int, ...]:
    """Start from ⌊x_i⌋ (x_i = r_i·D) inside the bounds, then move one token at a time where x_i is
    furthest on that side. Adding goes to the smallest (Â_i + 1 − x_i), the lowest position on a tie;
    removing takes from the largest (Â_i − x_i), the highest position on a tie. With x and the bounds
    non-increasing, that order never lets a position pass the one before it (its key is never
    smaller when adding, never larger when removing), so the counts stay non-increasing. The
    batch path (exporter/intervals/batch.py) computes the same moves with the same float operations.
    """
    if any(map(int.__gt__, lows, highs)):  # D is not a fitting candidate: keep only 0 ≤ Â_i ≤ D
        lows, highs = [0] * len(rates), [drafts] * len(rates)
    targets = split_targets(rates, drafts)
    counts = [min(max(math.floor(x), low), high) for x, low, high in zip(targets, lows, highs, strict=True)]
    remainder = accepted - sum(counts)
    if remainder > 0:
        heap = [(count + 1 - x, i) for i, (count, x, high) in enumerate(zip(counts, targets, highs, strict=True)) if count < high]
        heapq.heapify(heap)
        while remainder and heap:
            _, i = heapq.heappop(heap)
            counts[i] += 1
            remainder -= 1
            if counts[i] < highs[i]:
                heapq.heappush(heap, (counts[i] + 1 - targets[i], i))
    elif remainder < 0:
        heap = [(-(count - x), -i) for i, (count, x, low) in enumerate(zip(counts, targets, lows, strict=True)) if count > low]
        heapq.heapify(heap)
        while remainder and heap:
            _, negative_i = heapq.heappop(heap)
            i = -negative_i
            counts[i] -= 1
            remainder += 1
            if counts[i] > lows[i]:
                heapq.heappush(heap, (-(counts[i] - targets[i]), negative_i))
    return tuple(counts)


def candidate_range(accepted: int, draft_tokens: int, mean_length: float | None, rates: tuple[float, ...]) -> tuple[int, int]:
    """[first, last]: the integers D that M's and the rates' roundings and ⌈T/k⌉ ≤ D ≤ T allow."""
    k = len(rates) or None
    low: float = math.ceil(draft_tokens / k) if k else 1
    high: float = draft_tokens
    if mean_length is not None and accepted > 0:
        m_low, m_high = _range_from_mean_length(accepted, mean_length)
        low, high = max(low, m_low), min(high, m_high)
    if rates and accepted > 0:
        total = sequential_sum(rates)
        low = max(low, accepted / (total + RATE_HALF_STEP * len(rates) + _EPS))
        # Σ A_i ≥ D·Σ(r_i − ½ step) over the rates above half a step: a near-zero tail adds no lower
        # bound, so it must not loosen the upper bound on D either
        floor_total = sequential_sum(rate - RATE_HALF_STEP for rate in rates if rate > RATE_HALF_STEP)
        if floor_total > 0:
            high = min(high, accepted / (floor_total - _EPS))
    return max(1, math.ceil(low - _EPS)), math.floor(high + _EPS)


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
    first, last = candidate_range(accepted, draft_tokens, mean_length, rates)
    if first > last:
        return None
    fitting: dict[int, tuple[list[int], list[int]]] = {}  # candidate D → its position bounds
    if last - first > _MAX_CANDIDATES:
        total = sequential_sum(rates)
        centre = accepted / total if rates and total > 0 else (first + last) / 2
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


# --- the same over many lines at once, with numpy (batch.py): the same numbers, bit for bit ---------
#
# Every step repeats the scalar code's float operations in the same order (sums left to right, the
# same ε, ceil/floor of the same products), so D̂, [D_lo, D_hi] and Â_i equal what reconstruct()
# returns for each line (tests/test_twins.py names the pair). Lines whose candidate range is wide
# (≥ MAX_WIDTH integers) or whose split needs many moves are left to the scalar code (`hard`),
# which the caller runs for them: rare, and exact either way.

MAX_WIDTH = 64  # candidate D per line handled here; wider ranges go to the scalar code
MAX_MOVES = 64  # one-token moves of the split handled here; more go to the scalar code


@dataclass(frozen=True)
class Rebuilt:
    """Per line: ok (a reconstruction exists), hard (left to the scalar code), D̂, D_lo, D_hi, Â_i."""

    ok: np.ndarray
    hard: np.ndarray
    drafts: np.ndarray
    low: np.ndarray
    high: np.ndarray
    positions: np.ndarray  # (n, k)


def _in_order_sum(columns: np.ndarray) -> np.ndarray:
    """Σ over the last axis, left to right from 0 (numpy's own sum pairs terms: other roundings)."""
    import numpy as np
    total = np.zeros(columns.shape[:-1])
    for j in range(columns.shape[-1]):
        total = total + columns[..., j]
    return total


def candidate_range_many(accepted: np.ndarray, draft_tokens: np.ndarray, mean_length: np.ndarray, rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """candidate_range for lines that print M and k ≥ 1 rates."""
    import numpy as np
    k = rates.shape[1]
    low = np.ceil(draft_tokens / k)
    high = draft_tokens.astype(np.float64)
    some = accepted > 0
    excess = mean_length - 1.0
    m_low = accepted / (excess + MEAN_LENGTH_HALF_STEP + _EPS)
    below = excess - MEAN_LENGTH_HALF_STEP - _EPS
    with np.errstate(divide="ignore", invalid="ignore"):
        m_high = np.where(below <= 0, np.inf, accepted / below)
    low = np.where(some, np.maximum(low, m_low), low)
    high = np.where(some, np.minimum(high, m_high), high)
    total = _in_order_sum(rates)
    low = np.where(some, np.maximum(low, accepted / (total + RATE_HALF_STEP * k + _EPS)), low)
    floor_total = _in_order_sum(np.where(rates > RATE_HALF_STEP, rates - RATE_HALF_STEP, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        rate_high = accepted / (floor_total - _EPS)
    high = np.where(some & (floor_total > 0), np.minimum(high, rate_high), high)
    first = np.maximum(1.0, np.ceil(low - _EPS))
    last = np.floor(high + _EPS)
    return first, last


def reconstruct_many(accepted: np.ndarray, draft_tokens: np.ndarray, mean_length: np.ndarray, rates: np.ndarray) -> Rebuilt:
    """reconstruct for lines of one k (rates (n, k), all in [0, 1]; T > 0; M finite).
    Wide ranges and long splits are left `hard`: the caller runs reconstruct for them."""
    import numpy as np  # only where blocks are batched

    n, k = rates.shape
    first, last = candidate_range_many(accepted, draft_tokens, mean_length, rates)
    width = np.where(last >= first, last - first + 1, 0)
    hard = width > MAX_WIDTH
    none = width == 0
    span = int(min(width.max(initial=1), MAX_WIDTH)) or 1
    first_int = np.where(hard | none, 1, first).astype(np.int64)
    d = first_int[:, None] + np.arange(span)[None, :]  # (n, W) candidates
    valid = (np.arange(span)[None, :] < width[:, None]) & ~hard[:, None]
    lows = np.ceil(np.maximum(0.0, rates - RATE_HALF_STEP)[:, None, :] * d[:, :, None] - _EPS).astype(np.int64)
    highs = np.floor(np.minimum(1.0, rates + RATE_HALF_STEP)[:, None, :] * d[:, :, None] + _EPS).astype(np.int64)
    lows = np.maximum.accumulate(lows[:, :, ::-1], axis=2)[:, :, ::-1]  # non-increasing counts
    highs = np.minimum.accumulate(highs, axis=2)
    fits = valid & (lows <= highs).all(axis=2) & (lows.sum(axis=2) <= accepted[:, None]) & (accepted[:, None] <= highs.sum(axis=2))
    ok = fits.any(axis=1) & ~hard
    rows = np.arange(n)
    low_index = np.argmax(fits, axis=1)
    high_index = span - 1 - np.argmax(fits[:, ::-1], axis=1)
    # T/k when it fits (fixed-length drafts); else the smallest residual, the smallest D on a tie
    fixed = (draft_tokens % k == 0)[:, None] & (d == (draft_tokens // k)[:, None]) & fits
    per_draft = accepted[:, None] / d
    residual = np.maximum(
        np.abs(1.0 + per_draft - mean_length[:, None]) / MEAN_LENGTH_HALF_STEP,
        np.abs(per_draft - _in_order_sum(rates)[:, None]) / (RATE_HALF_STEP * k),
    )
    chosen = np.where(fixed.any(axis=1), np.argmax(fixed, axis=1), np.argmin(np.where(fits, residual, np.inf), axis=1))
    drafts = d[rows, chosen]
    positions, unfinished = _split_many(rates, drafts, accepted, lows[rows, chosen], highs[rows, chosen], ok)
    return Rebuilt(ok=ok, hard=hard | (ok & unfinished), drafts=drafts, low=d[rows, low_index], high=d[rows, high_index], positions=positions)


def _split_many(
    rates: np.ndarray, drafts: np.ndarray, accepted: np.ndarray, lows: np.ndarray, highs: np.ndarray, ok: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """_split for lines whose D̂ fits (so low_i ≤ high_i): the same moves, one per round."""
    import numpy as np
    targets = np.minimum.accumulate(rates * drafts[:, None], axis=1)
    counts = np.minimum(np.maximum(np.floor(targets).astype(np.int64), lows), highs)
    remainder = np.where(ok, accepted - counts.sum(axis=1), 0)
    rows = np.arange(len(drafts))
    k = rates.shape[1]
    for _ in range(MAX_MOVES):
        up, down = remainder > 0, remainder < 0
        if not (up.any() or down.any()):
            break
        if up.any():  # the smallest (Â_i + 1 − x_i) below its high, the lowest position on a tie
            key = np.where(counts < highs, (counts + 1) - targets, np.inf)
            i = np.argmin(key, axis=1)
            move = up & np.isfinite(key[rows, i])
            counts[rows[move], i[move]] += 1
            remainder[move] -= 1
            remainder[up & ~move] = 0  # no room left: the scalar code stops there too
        if down.any():  # the largest (Â_i − x_i) above its low, the highest position on a tie
            key = np.where(counts > lows, counts - targets, -np.inf)
            i = k - 1 - np.argmax(key[:, ::-1], axis=1)
            move = down & np.isfinite(key[rows, i])
            counts[rows[move], i[move]] -= 1
            remainder[move] += 1
            remainder[down & ~move] = 0
    return counts, remainder != 0
