"""Sum one engine's per-step spec-decode counts into intervals. Pure: no I/O, no clock, no vLLM.

vLLM hands the stat logger each scheduler step's counts (drafts, draft tokens, accepted tokens,
and both per position); steps without drafts carry none. `add` is O(k) and allocation-free on
the common path, since it runs on vLLM's hot path; `take` closes the interval.
"""

from __future__ import annotations

from typing import Any


class StepAccumulator:
    """Running sums since the last `take()`."""

    def __init__(self, started: float) -> None:
        self._reset(started)

    def _reset(self, started: float) -> None:
        self.start = started
        self.steps = 0
        self.drafts = 0
        self.draft_tokens = 0
        self.accepted_tokens = 0
        self.accepted_per_position: list[int] = []
        self.draft_tokens_per_position: list[int] = []

    def add(
        self, drafts: int, draft_tokens: int, accepted_tokens: int, accepted_per_position: list[int], draft_tokens_per_position: list[int]
    ) -> None:
        self.steps += 1
        self.drafts += drafts
        self.draft_tokens += draft_tokens
        self.accepted_tokens += accepted_tokens
        _add_into(self.accepted_per_position, accepted_per_position)
        _add_into(self.draft_tokens_per_position, draft_tokens_per_position)

    def take(self, now: float) -> dict[str, Any] | None:
        """The interval (start, now] as record fields, or None if nothing was drafted; starts the next."""
        fields = None
        if self.drafts:
            fields = {
                "start": self.start,
                "end": now,
                "steps": self.steps,
                "drafts": self.drafts,
                "draft_tokens": self.draft_tokens,
                "accepted_tokens": self.accepted_tokens,
                "accepted_per_position": list(self.accepted_per_position),
                "draft_tokens_per_position": list(self.draft_tokens_per_position),
            }
        self._reset(now)
        return fields


def _add_into(total: list[int], step: list[int]) -> None:
    if len(total) < len(step):
        total.extend([0] * (len(step) - len(total)))
    for i, count in enumerate(step):
        total[i] += count
