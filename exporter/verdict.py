"""The drafter health verdict: broken, degraded, wasteful, ok or no_data — first match wins.

  broken    acceptance collapsed: L near 1 *and* position 0 far below what a working drafter
            reaches (the misconfigured-drafter signature: L 1.1, r_0 0.11 in the real case);
  degraded  L − 1 fell by more than a fraction against the series' own baseline window, or L is
            below a configured floor;
  wasteful  trailing positions cost more than they return: drafting the recommended k' instead of
            k would be faster by more than a margin (15 drafted, 3–4 paying off);
  ok        none of the above;
  no_data   nothing drafted in the window, or too few drafts to judge.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.derive import Derived

STATES = ("ok", "wasteful", "degraded", "broken", "no_data")


@dataclass(frozen=True, slots=True)
class HealthThresholds:
    """Every knob of the verdict; all are configuration (`[health]` in the config file)."""

    # Fewer drafts than this in a window is not enough evidence for any verdict.
    min_drafts: int = 50
    # broken: mean acceptance length at most this …
    broken_max_mean_acceptance_length: float = 1.3
    # … and position-0 acceptance at most this (a working drafter reaches ≥ 0.5 on most traffic).
    broken_max_position0_acceptance: float = 0.25
    # degraded: L − 1 below (1 − this) × the baseline window's L − 1 …
    degraded_relative_drop: float = 0.3
    # … or L below this absolute floor (0 disables the floor).
    degraded_min_mean_acceptance_length: float = 0.0
    # wasteful: the speed-up at the recommended k' beats the one at k by more than this fraction.
    wasteful_min_gain: float = 0.03


def verdict(current: Derived | None, baseline: Derived | None, thresholds: HealthThresholds) -> str:
    """The verdict for `current`, judged against `baseline` (a longer window) when there is one."""
    if current is None or current.drafts is None or current.drafts < thresholds.min_drafts:
        return "no_data"
    length = current.mean_acceptance_length or 1.0
    position0 = current.position_acceptance[0] if current.position_acceptance else None
    if (
        length <= thresholds.broken_max_mean_acceptance_length
        and position0 is not None
        and position0 <= thresholds.broken_max_position0_acceptance
    ):
        return "broken"
    if length < thresholds.degraded_min_mean_acceptance_length:
        return "degraded"
    if (
        baseline is not None
        and baseline.drafts is not None
        and baseline.drafts >= thresholds.min_drafts
        and baseline.mean_acceptance_length is not None
        and length - 1.0 < (1.0 - thresholds.degraded_relative_drop) * (baseline.mean_acceptance_length - 1.0)
    ):
        return "degraded"
    if current.speedup and current.recommended_speculative_tokens is not None:
        drafted = len(current.speedup) - 1
        best = current.speedup[current.recommended_speculative_tokens]
        if current.recommended_speculative_tokens < drafted and best > current.speedup[drafted] * (
            1.0 + thresholds.wasteful_min_gain
        ):
            return "wasteful"
    return "ok"


def explain(state: str, current: Derived | None, baseline: Derived | None, thresholds: HealthThresholds) -> str:
    """One line that says why the verdict is what it is, with the numbers behind it."""
    if state == "no_data":
        drafts = 0 if current is None or current.drafts is None else current.drafts
        if current is not None and current.drafts is None:
            return "this log layout does not tell the number of drafts (vLLM ≤ 0.8.4): no L or per-position rates"
        return f"{drafts} drafts in the window; a verdict needs at least {thresholds.min_drafts}"
    assert current is not None
    length = current.mean_acceptance_length or 1.0
    position0 = current.position_acceptance[0] if current.position_acceptance else 0.0
    if state == "broken":
        return (
            f"L {length:.2f} with position-0 acceptance {position0:.0%}: the drafter barely ever agrees with the target "
            "— check the drafter's config.json against the target (target_layer_ids, layer_types, sliding_window, mask_token_id)"
        )
    if state == "degraded":
        if baseline is not None and baseline.mean_acceptance_length is not None and length >= thresholds.degraded_min_mean_acceptance_length:
            drop = 1 - (length - 1) / max(baseline.mean_acceptance_length - 1, 1e-9)
            return f"L fell from {baseline.mean_acceptance_length:.2f} to {length:.2f}: {drop:.0%} fewer accepted tokens per step than the baseline"
        return f"L {length:.2f} is below the floor {thresholds.degraded_min_mean_acceptance_length:.2f}"
    drafted = len(current.speedup) - 1
    best = current.recommended_speculative_tokens
    if state == "wasteful" and best is not None:
        gain = current.speedup[best] / current.speedup[drafted] - 1
        return (
            f"positions {best}–{drafted - 1} cost more than they return: drafting {best} instead of {drafted} "
            f"would be about {gain:.0%} faster"
        )
    return f"L {length:.2f}, position 0 at {position0:.0%}; every drafted position pays for itself"
