"""Pure math over pooled Totals: the derived quantities (README, "What it computes").

With D, T, A, A_i summed over a window:
  L = 1 + A/D (mean acceptance length, bonus token included, as vLLM reports it); on V0 lines,
      whose A counts every accepted position and not only the accepted prefix, L = E/D with the
      printed emitted tokens E
  r_i = A_i/D (unconditional: positions 0..i all accepted); L = 1 + Σ r_i
  c_i = r_i / r_{i-1}, c_0 = r_0 (conditional: where the chain breaks)
  α = A/T (draft acceptance ratio); T/D (mean draft length, below k when drafts are shortened)
  E(k') = 1 + Σ_{i<k'} r_i (expected tokens per step drafting only k' positions)
  speed-up(k') = E(k') / step(k'), with step(k') from the drafter's cost model (exporter/judge/cost.py)
  recommended k = argmax speed-up(k') over k' = 0..k (0 = speculation does not pay)
  h_j = share of drafts that accepted exactly j tokens (the acceptance-length histogram, j = 0..k):
      h_0 = (D − A_0)/D, h_j = (A_{j−1} − A_j)/D, h_k = A_{k−1}/D; Σ h_j = 1 and Σ j·h_j = A/D
A window with D = 0 yields nothing: absent, never zero or NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.config import FALLBACK_COST, DraftCost
from exporter.judge.cost import speedup_curve
from exporter.state.window import Totals


@dataclass(frozen=True, slots=True)
class Derived:
    """Everything derived from one window's Totals; fields are None when they cannot be known."""

    drafts: int | None
    draft_tokens: int
    accepted_tokens: int
    wasted_draft_tokens: int
    draft_acceptance_ratio: float | None
    mean_acceptance_length: float | None
    mean_draft_length: float | None
    position_acceptance: tuple[float, ...]
    conditional_acceptance: tuple[float | None, ...]
    expected_tokens_per_step: tuple[float, ...]  # E(k') for k' = 0..k
    speedup: tuple[float, ...]  # E(k') / (1 + k'·c) for k' = 0..k
    recommended_speculative_tokens: int | None
    num_speculative_tokens: int | None
    seconds: float | None  # summed lengths of the window's intervals
    cost: DraftCost = FALLBACK_COST
    acceptance_histogram: tuple[float, ...] | None = None  # h_j, j = 0..k: drafts that accepted exactly j tokens


def position_acceptance(accepted_per_position: tuple[int, ...], drafts: int) -> tuple[float, ...]:
    """r_i = A_i / D."""
    return tuple(count / drafts for count in accepted_per_position)


def conditional_acceptance(rates: tuple[float, ...]) -> tuple[float | None, ...]:
    """c_0 = r_0, c_i = r_i / r_{i-1}; None where the previous position was never accepted."""
    result: list[float | None] = []
    previous = 1.0
    for rate in rates:
        result.append(rate / previous if previous > 0 else None)
        previous = rate
    return tuple(result)


def acceptance_histogram(accepted_per_position: tuple[int, ...], drafts: int) -> tuple[float, ...] | None:
    """h_j for j = 0..k from the prefix counts A_i (see the module's doc); None where the counts are
    not a prefix curve (an A_i above A_{i−1} or D: no histogram has them) or there are none."""
    if not accepted_per_position or drafts <= 0:
        return None
    above = (drafts, *accepted_per_position)
    counts = [a - b for a, b in zip(above, accepted_per_position, strict=False)] + [accepted_per_position[-1]]
    if any(count < 0 for count in counts):
        return None
    return tuple(count / drafts for count in counts)


def expected_tokens_per_step(rates: tuple[float, ...]) -> tuple[float, ...]:
    """E(k') = 1 + Σ_{i<k'} r_i for k' = 0..len(rates)."""
    values = [1.0]
    for rate in rates:
        values.append(values[-1] + rate)
    return tuple(values)


def recommended_speculative_tokens(speedup: tuple[float, ...]) -> int:
    """The k' with the best speed-up; ties go to the smaller k' (same gain, less work)."""
    return max(range(len(speedup)), key=lambda k: (speedup[k], -k))


def derive(totals: Totals, cost: DraftCost = FALLBACK_COST) -> Derived | None:
    """All derived values for one window; None when nothing was drafted in it."""
    if totals.draft_tokens <= 0:
        return None
    drafts = totals.known_drafts
    if drafts is not None and drafts <= 0:
        drafts = None
    rates = position_acceptance(totals.accepted_per_position, drafts) if drafts else ()
    expected = expected_tokens_per_step(rates) if rates else ()
    speedup = speedup_curve(expected, cost, totals.draft_tokens / drafts if drafts else None) if expected else ()
    seconds = totals.seconds if totals.seconds > 0 else None
    emitted = totals.known_emitted
    if drafts and emitted is not None:
        length: float | None = emitted / drafts
    else:
        length = 1.0 + totals.accepted_tokens / drafts if drafts else None
    return Derived(
        drafts=drafts,
        draft_tokens=totals.draft_tokens,
        accepted_tokens=totals.accepted_tokens,
        wasted_draft_tokens=totals.draft_tokens - totals.accepted_tokens,
        draft_acceptance_ratio=totals.accepted_tokens / totals.draft_tokens,
        mean_acceptance_length=length,
        mean_draft_length=totals.draft_tokens / drafts if drafts else None,
        position_acceptance=rates,
        conditional_acceptance=conditional_acceptance(rates),
        expected_tokens_per_step=expected,
        speedup=speedup,
        recommended_speculative_tokens=recommended_speculative_tokens(speedup) if speedup else None,
        num_speculative_tokens=totals.k if totals.k is not None else (len(rates) or None),
        seconds=seconds,
        cost=cost,
        acceptance_histogram=acceptance_histogram(totals.accepted_per_position, drafts) if drafts else None,
    )
