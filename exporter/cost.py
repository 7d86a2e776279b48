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
pay). The defaults are rough, per drafter kind; set your own per kind or per model in the
`[draft_cost.<method>]` and `[draft_cost.model."<model_name>"]` sections of `--config`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DraftCost:
    per_token: float = 0.04
    per_block: float = 0.0
    verify_per_token: float = 0.01

    def step(self, k: int) -> float:
        """The cost of one step drafting k tokens, relative to a plain target step."""
        return 1.0 + (self.per_block if k > 0 else 0.0) + (self.per_token + self.verify_per_token) * k

    def describe(self) -> str:
        parts = []
        if self.per_block:
            parts.append(f"{self.per_block:g} per drafted block")
        if self.per_token:
            parts.append(f"{self.per_token:g} per draft token")
        parts.append(f"{self.verify_per_token:g} per verified token")
        return "step cost 1 + " + " + ".join(parts) + " (in target steps)"


DEFAULT_COSTS: dict[str, DraftCost] = {
    "ngram": DraftCost(per_token=0.0, per_block=0.005),
    "suffix": DraftCost(per_token=0.0, per_block=0.005),
    "eagle": DraftCost(per_token=0.04),
    "eagle3": DraftCost(per_token=0.04),
    "mtp": DraftCost(per_token=0.04),
    "medusa": DraftCost(per_token=0.0, per_block=0.04),
    "dflash": DraftCost(per_token=0.0, per_block=0.08),
    "draft_model": DraftCost(per_token=0.08),
}
FALLBACK_COST = DraftCost()  # method unknown: an EAGLE-like head


def speedup_curve(expected: tuple[float, ...], cost: DraftCost) -> tuple[float, ...]:
    """E(k') / step(k') for k' = 0..len(expected) − 1."""
    return tuple(value / cost.step(k) for k, value in enumerate(expected))
