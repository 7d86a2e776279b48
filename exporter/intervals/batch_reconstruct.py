"""exporter/reconstruct.py over many V1 lines at once, with numpy: the same numbers, bit for bit.

Every step repeats the scalar code's float operations in the same order (sums left to right, the
same ε, ceil/floor of the same products), so D̂, [D_lo, D_hi] and Â_i equal what reconstruct()
returns for each line; tests/test_batch_equivalence.py checks that over random lines. Lines whose
candidate range is wide (≥ MAX_WIDTH integers) or whose split needs many moves are left to the
scalar code (`hard`), which the caller runs for them: rare, and exact either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exporter.intervals.reconstruct import _EPS, MEAN_LENGTH_HALF_STEP, RATE_HALF_STEP

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
    total = np.zeros(columns.shape[:-1])
    for j in range(columns.shape[-1]):
        total = total + columns[..., j]
    return total


def candidate_range(accepted: np.ndarray, draft_tokens: np.ndarray, mean_length: np.ndarray, rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """reconstruct.candidate_range for lines that print M and k ≥ 1 rates."""
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
    """Lines of one k (rates (n, k), all in [0, 1]; T > 0; M finite)."""
    n, k = rates.shape
    first, last = candidate_range(accepted, draft_tokens, mean_length, rates)
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
    positions, unfinished = _split(rates, drafts, accepted, lows[rows, chosen], highs[rows, chosen], ok)
    return Rebuilt(ok=ok, hard=hard | (ok & unfinished), drafts=drafts, low=d[rows, low_index], high=d[rows, high_index], positions=positions)


def _split(rates: np.ndarray, drafts: np.ndarray, accepted: np.ndarray, lows: np.ndarray, highs: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """reconstruct._split for lines whose D̂ fits (so low_i ≤ high_i): the same moves, one per round."""
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
