"""The verdict's state for many judged windows at once: what `judge(derive(window), baseline)`
says of each, as arrays (the batch path's verdict memory, exporter/state/remember.py).

Only the state is computed, never the sentence, and only for windows the batch path makes: D
known in every interval, no emitted tokens E, one k. Every float is computed as derive.py and
verdict.py compute it — the same operations in the same order — so each state is exactly the
scalar verdict's (tests/test_remember.py compares them on random windows at the thresholds), and
the thresholds' rules are verdict.py's own functions, called on arrays.
"""

from __future__ import annotations

import numpy as np

from exporter.config import DraftCost, HealthThresholds
from exporter.judge.verdict import below_floor, collapsed, dropped, wastes
from exporter.state.remember import WindowSums


def judge_states(
    sums: WindowSums, reference_length: np.ndarray, reference_drafts: np.ndarray, thresholds: HealthThresholds, cost: DraftCost
) -> np.ndarray:
    """The state of each window (an array of STATES names); reference_length is nan where no
    reference is ready (the series is still learning: nothing is relative)."""
    drafts, n = sums.drafts, len(sums.drafts)
    states = np.full(n, "ok", dtype="<U8")
    safe = np.where(drafts > 0, drafts, 1)  # rows with D = 0 are no_data whatever the quotient says
    length = 1.0 + sums.accepted / safe
    k = sums.positions.shape[1]
    if k:
        rates = sums.positions / safe[:, None]
        expected = np.cumsum(np.concatenate((np.ones((n, 1)), rates), axis=1), axis=1)  # left to right, as derive adds
        drafted = np.minimum(np.arange(k + 1)[None, :], (sums.draft_tokens / safe)[:, None])  # DraftCost.step: T/D caps what is charged
        steps = 1.0 + np.where(np.arange(k + 1) > 0, cost.per_block, 0.0)[None, :] + (cost.per_token + cost.verify_per_token) * drafted
        speedup = expected / steps
        best = np.argmax(speedup, axis=1)  # the first maximum: ties go to the smaller k'
        at_k = speedup[:, k]
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = np.where(at_k > 0, speedup[np.arange(n), best] / at_k - 1, 0.0)
        states[wastes(best, k, gain, thresholds)] = "wasteful"
    with np.errstate(invalid="ignore"):
        states[dropped(length, reference_length, reference_drafts, thresholds)] = "degraded"
    states[below_floor(length, thresholds)] = "degraded"
    position0 = sums.positions[:, 0] / safe if k else length - 1.0  # no positions: r_0 ≤ L − 1, as verdict.py bounds it
    states[collapsed(length, position0, thresholds)] = "broken"
    states[(sums.draft_tokens <= 0) | (drafts < thresholds.min_drafts) | (drafts <= 0)] = "no_data"
    return states
