"""Scenarios for the simulated vLLM server: a drafter's acceptance curve and how it changes in time.

Each position's acceptance is modelled as a conditional probability c_i (draft token i is
accepted given 0..i-1 were), so the unconditional per-position rate is r_i = c_0·…·c_i, as vLLM
reports it. Curves are given as the r_i they should produce.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def conditional_from_rates(rates: tuple[float, ...]) -> tuple[float, ...]:
    """c_i = r_i / r_{i-1}, the per-step chance the chain continues."""
    result, previous = [], 1.0
    for rate in rates:
        result.append(0.0 if previous <= 0 else min(1.0, rate / previous))
        previous = rate
    return tuple(result)


@dataclass(frozen=True)
class Scenario:
    """A simulated deployment: what is served, how the drafter behaves, and what changes when."""

    name: str
    description: str
    model: str
    served_model_name: str
    method: str
    draft_model: str
    rates: tuple[float, ...]  # target per-position acceptance r_i; k = len(rates)
    drafts_per_second: float = 50.0
    shortened_drafts: bool = False  # n-gram: a draft is often shorter than k
    drop_after: float | None = None  # seconds after start when acceptance falls …
    drop_factor: float = 0.5  # … to this fraction of every conditional rate
    restart_after: float | None = None  # seconds after start when the server restarts (counters reset)
    expected_verdicts: tuple[str, ...] = field(default=())

    @property
    def k(self) -> int:
        return len(self.rates)

    def conditional(self, elapsed: float) -> tuple[float, ...]:
        """The conditional acceptance per position at `elapsed` seconds of simulated time."""
        base = conditional_from_rates(self.rates)
        if self.drop_after is not None and elapsed >= self.drop_after:
            return tuple(c * self.drop_factor for c in base)
        return base


SCENARIOS = {
    s.name: s
    for s in (
        Scenario(
            name="healthy",
            description="A DFlash drafter for a Qwen3 model, k = 15: position 0 ≈ 0.72, nothing past position 4 — wasteful.",
            model="Qwen/Qwen3-8B",
            served_model_name="Qwen/Qwen3-8B",
            method="dflash",
            draft_model="z-lab/Qwen3-8B-DFlash-b16",
            rates=(0.72, 0.50, 0.30, 0.18, 0.06, 0.02) + (0.0,) * 9,
            drafts_per_second=60.0,
            expected_verdicts=("wasteful",),
        ),
        Scenario(
            name="drop-off",
            description="A well-tuned EAGLE-3 drafter, k = 4, position 0 ≈ 0.8, whose acceptance halves after a while.",
            model="meta-llama/Llama-3.1-8B-Instruct",
            served_model_name="llama-3.1-8b",
            method="eagle3",
            draft_model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
            rates=(0.80, 0.64, 0.51, 0.41),
            drafts_per_second=80.0,
            drop_after=120.0,
            expected_verdicts=("ok", "degraded"),
        ),
        Scenario(
            name="broken",
            description="The misconfigured-drafter signature (stale config.json): L ≈ 1.1, position 0 ≈ 0.11.",
            model="Qwen/Qwen3-27B",
            served_model_name="Qwen/Qwen3-27B",
            method="dflash",
            draft_model="z-lab/Qwen3-27B-DFlash",
            rates=(0.11, 0.006) + (0.0,) * 13,
            drafts_per_second=40.0,
            expected_verdicts=("broken",),
        ),
        Scenario(
            name="restart",
            description="An EAGLE drafter, k = 4, whose server restarts mid-run: counters reset, startup lines again.",
            model="meta-llama/Llama-3.1-8B-Instruct",
            served_model_name="llama-3.1-8b",
            method="eagle",
            draft_model="yuhuili/EAGLE-LLaMA3.1-Instruct-8B",
            rates=(0.75, 0.55, 0.40, 0.28),
            drafts_per_second=60.0,
            restart_after=60.0,
            expected_verdicts=("ok",),
        ),
        Scenario(
            name="ngram",
            description="Prompt-lookup (n-gram) drafting, k = 5: many drafts are shorter than k (on vLLM ≤ 0.31; from 0.32 every draft is k long).",
            model="meta-llama/Llama-3.1-8B-Instruct",
            served_model_name="llama-3.1-8b",
            method="ngram",
            draft_model="ngram",
            rates=(0.55, 0.40, 0.30, 0.22, 0.15),
            drafts_per_second=50.0,
            shortened_drafts=True,
            expected_verdicts=("ok",),
        ),
    )
}
