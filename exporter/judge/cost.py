"""The cost model behind the recommended number of speculative tokens.

One decoding step that drafts k' tokens costs, in units of one plain target step:

    step(k') = 1 + per_block·[k' > 0] + (per_token + verify_per_token)·k'

  * per_token: an autoregressive drafter (a draft model, EAGLE, MTP) runs once per draft token;
  * per_block: a parallel drafter (DFlash) drafts a whole block in one pass, whatever k';
  * verify_per_token: the target verifies k' + 1 positions instead of 1 — cheap while decoding is
    memory-bound, but not free, and it grows with k';
  * n-gram lookup costs almost nothing to draft.

The step yields E(k') = 1 + Σ_{i<k'} r_i tokens, so the expected speed-up over plain decoding is
E(k') / step(k'), and the recommendation is its argmax over k' = 0..k (0: speculation does not
pay). The costs themselves are settings (`DraftCost` and its rough per-kind defaults in
exporter/config.py); set your own per kind or per model in the
`[draft_cost.<method>]` and `[draft_cost.model."<model_name>"]` sections of `--config`.
"""

from __future__ import annotations

from exporter.config import DraftCost


def speedup_curve(expected: tuple[float, ...], cost: DraftCost) -> tuple[float, ...]:
    """E(k') / step(k') for k' = 0..len(expected) − 1."""
    return tuple(value / cost.step(k) for k, value in enumerate(expected))
