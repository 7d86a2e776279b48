"""The cost model behind the recommended number of speculative tokens.

One decoding step that drafts k' tokens costs, in units of one plain target step:

    step(k') = 1 + per_block·[k' > 0] + (per_token + verify_per_token)·k'

  * per_token: an autoregressive drafter (a draft model, EAGLE, MTP) runs once per draft token;
  * per_block: a parallel drafter (DFlash) drafts a whole block in one pass, whatever k';
  * verify_per_token: the target verifies k' + 1 positions instead of 1 — cheap while decoding is
    memory-bound, but not free, and it grows with k';
  * n-gram lookup costs almost nothing to draft.

A drafter that drafts fewer than k' tokens a step (n-gram, suffix, dynamic k) is charged what it
drafted, T/D, where that is less than k' — never k' tokens it never drafted. This static model
is in units of a plain step and knows nothing of load; judge/payoff.py measures the pay-off at the
server's load from its own throughput against a plain-decoding calibration.

The step yields E(k') = 1 + Σ_{i<k'} r_i tokens, so the expected speed-up over plain decoding is
E(k') / step(k'), and the recommendation is its argmax over k' = 0..k (0: speculation does not
pay). The costs themselves are settings (`DraftCost` and its rough per-kind defaults in
exporter/config.py); set your own per kind or per model in the
`[draft_cost.<method>]` and `[draft_cost.model."<model_name>"]` sections of `--config`.
"""

from __future__ import annotations

from exporter.config import DraftCost


def speedup_curve(expected: tuple[float, ...], cost: DraftCost, drafted: float | None = None) -> tuple[float, ...]:
    """E(k') / step(k') for k' = 0..len(expected) − 1, each step charged the tokens a draft actually
    held (T/D) where fewer than k' (DraftCost.step)."""
    return tuple(value / cost.step(k, drafted) for k, value in enumerate(expected))
