"""The drafter health verdict: broken, degraded, wasteful, ok or no_data — first match wins.

  broken    acceptance collapsed: L near 1 *and* position 0 far below what a working drafter
            reaches (the misconfigured-drafter signature: L 1.1, r_0 0.11 in the real case);
  degraded  L − 1 fell by more than a fraction against the series' reference (learned while healthy), or L is
            below a configured floor;
  wasteful  trailing positions cost more than they return: drafting the recommended k' instead of
            k would be faster by more than a margin (15 drafted, 3–4 paying off);
  ok        none of the above;
  no_data   nothing drafted in the window, or too few drafts to judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from exporter.config import HealthThresholds
from exporter.judge.derive import Derived
from exporter.vocabulary import VERDICT_STATES, VerdictState

if TYPE_CHECKING:
    import numpy as np

STATES = VERDICT_STATES  # the catalogue's (exporter/vocabulary.py), in specdecode_health's order

# The rules, written once: each takes one window's numbers (judge) or arrays of many windows'
# (verdict_columns.judge_states), with operators numpy applies elementwise.
V = TypeVar("V", float, "np.ndarray")


def collapsed(length: V, position0: V, thresholds: HealthThresholds) -> V:
    """broken: L near 1 and position 0 (or its bound) far below a working drafter's."""
    return (length <= thresholds.broken_max_mean_acceptance_length) & (position0 <= thresholds.broken_max_position0_acceptance)


def below_floor(length: V, thresholds: HealthThresholds) -> V:
    return length < thresholds.degraded_min_mean_acceptance_length


def dropped(length: V, reference_length: V, reference_drafts: V, thresholds: HealthThresholds) -> V:
    """degraded: L − 1 fell by more than the fraction against a reference of enough drafts."""
    return (reference_drafts >= thresholds.min_drafts) & (length - 1.0 < (1.0 - thresholds.degraded_relative_drop) * (reference_length - 1.0))


def wastes(best: V, drafted: V, gain: V, thresholds: HealthThresholds) -> V:
    """wasteful: a smaller k' is faster than the k drafted by more than the margin."""
    return (best < drafted) & (gain > thresholds.wasteful_min_gain)


@dataclass(frozen=True, slots=True)
class Baseline:
    """What a series normally does: its reference (learned while healthy), or a long window of a store that keeps none."""

    mean_acceptance_length: float
    drafts: float
    source: str  # e.g. "1h window" or "reference of 576208 healthy drafts, …"


@dataclass(frozen=True, slots=True)
class Verdict:
    state: VerdictState
    reason: str  # a stable code, safe as a label value
    message: str  # one sentence with the numbers behind it


def judge(
    current: Derived | None,
    baseline: Baseline | None,
    thresholds: HealthThresholds,
    window: str | None = None,
    drafts_unknown_because: str = "",
) -> Verdict:
    """The verdict for `current` (judged against `baseline` when there is one), with its reason."""
    over = f" over {window}" if window else ""
    if current is not None and current.drafts is None and current.draft_tokens > 0:
        without_drafts = _collapse_without_drafts(current, thresholds, over)
        if without_drafts is not None:
            return without_drafts
        because = f": {drafts_unknown_because}" if drafts_unknown_because else ""
        return Verdict("no_data", "drafts_unknown", f"this log format does not print the number of drafts (vLLM ≤ 0.8.4){because}; no L")
    if current is None or current.drafts is None or current.drafts < thresholds.min_drafts:
        drafts = 0 if current is None or current.drafts is None else current.drafts
        return Verdict("no_data", "too_few_drafts", f"{drafts} drafts{over}; a verdict needs at least {thresholds.min_drafts}")
    length = current.mean_acceptance_length or 1.0
    position0 = current.position_acceptance[0] if current.position_acceptance else None
    k = len(current.position_acceptance)
    # without per-position counts (V0, V1-a, V1-b) r_0 is at most L − 1 = Σ r_i, so the floor still
    # judges: a drafter whose L − 1 is under the position-0 floor is broken whatever its positions
    bound = position0 if position0 is not None else length - 1.0
    if collapsed(length, bound, thresholds):
        said = (
            f"position-0 acceptance {position0:.2f}{over} with {k} drafted positions (L {length:.2f})" if position0 is not None
            else f"L {length:.2f}{over}, so position-0 acceptance is at most {bound:.2f} (this log format prints no per-position counts)"
        )
        return Verdict("broken", "position0_collapse", f"{said}: {_BROKEN_ADVICE}")
    if below_floor(length, thresholds):
        return Verdict("degraded", "below_floor", f"L {length:.2f}{over} is below the floor {thresholds.degraded_min_mean_acceptance_length:.2f}")
    if baseline is not None and dropped(length, baseline.mean_acceptance_length, baseline.drafts, thresholds):
        drop = 1 - (length - 1) / max(baseline.mean_acceptance_length - 1, 1e-9)
        return Verdict(
            "degraded",
            "dropped_vs_baseline",
            f"L fell from {baseline.mean_acceptance_length:.2f} ({baseline.source}) to {length:.2f}{over}: "
            f"{drop:.0%} fewer accepted tokens per step",
        )
    if current.speedup and current.recommended_speculative_tokens is not None:
        drafted = len(current.speedup) - 1
        best = current.recommended_speculative_tokens
        gain = current.speedup[best] / current.speedup[drafted] - 1 if current.speedup[drafted] > 0 else 0.0
        if wastes(best, drafted, gain, thresholds):
            return Verdict(
                "wasteful",
                "trailing_positions_wasted",
                f"positions {best}–{drafted - 1} cost more than they return: drafting {best} instead of {drafted} "
                f"would be about {gain:.0%} faster",
            )
    if position0 is None:  # V0, V1-a, V1-b: no per-position counts, so nothing is said about positions
        return Verdict("ok", "acceptance_ok", f"L {length:.2f}{over}; this log format prints no per-position acceptance, so positions are not judged")
    return Verdict("ok", "all_positions_pay", f"L {length:.2f}{over}, position 0 at {position0:.0%}; every drafted position pays for itself")


_BROKEN_ADVICE = (
    "the drafter is almost never right — check the drafter's config against the target (specdecode-exporter check-config) "
    "and the serving framework's integration"
)


def _collapse_without_drafts(current: Derived, thresholds: HealthThresholds, over: str) -> Verdict | None:
    """`broken` where D is unknown (V1-a/V1-b of a drafter that may draft fewer than k): every draft
    holds at most k tokens, so D ≥ T/k and r_0 ≤ A/D ≤ k·A/T — enough to call a collapse, never L."""
    k = current.num_speculative_tokens
    if not k or current.draft_tokens <= 0:
        return None
    least_drafts = -(-current.draft_tokens // k)
    bound = k * current.accepted_tokens / current.draft_tokens
    if least_drafts < thresholds.min_drafts or bound > thresholds.broken_max_position0_acceptance:
        return None
    return Verdict(
        "broken", "position0_collapse",
        f"{current.accepted_tokens} of {current.draft_tokens} drafted tokens accepted{over} (at least {least_drafts} drafts of at most "
        f"k = {k}), so position-0 acceptance is at most {bound:.2f}: {_BROKEN_ADVICE}",
    )


def as_baseline(value: Baseline | Derived | None, source: str = "baseline window") -> Baseline | None:
    if value is None or isinstance(value, Baseline):
        return value
    if value.drafts is None or value.mean_acceptance_length is None:
        return None
    return Baseline(value.mean_acceptance_length, value.drafts, source)
