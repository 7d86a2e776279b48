"""A series' own slow average: exponentially decayed sums of accepted tokens and drafts.

The baseline the `degraded` verdict compares against. It pools counts (A and D decay together,
then L = 1 + ΣA/ΣD), so it is weighted by drafts like every other rate here — never an average of
per-interval ratios. With a half-life of an hour, a drop in the last few minutes barely moves it.
It is saved in the state dir, so a sidecar restart does not forget what normal looks like.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_HALF_LIFE_SECONDS = 3600.0


@dataclass
class SlowAverage:
    half_life: float = DEFAULT_HALF_LIFE_SECONDS
    accepted: float = 0.0
    drafts: float = 0.0
    at: float | None = None

    def add(self, accepted: int, drafts: int, at: float) -> None:
        if self.at is not None and at > self.at:
            decay = 0.5 ** ((at - self.at) / self.half_life)
            self.accepted *= decay
            self.drafts *= decay
        self.accepted += accepted
        self.drafts += drafts
        self.at = max(at, self.at or at)

    def add_many(self, accepted: list[int], drafts: list[int], ats: list[float]) -> None:
        """add() for each (A, D, at) in turn: the same float operations, without a call per interval."""
        total_accepted, total_drafts, last, half_life = self.accepted, self.drafts, self.at, self.half_life
        for a, d, at in zip(accepted, drafts, ats):
            if last is not None and at > last:
                decay = 0.5 ** ((at - last) / half_life)
                total_accepted *= decay
                total_drafts *= decay
            total_accepted += a
            total_drafts += d
            last = max(at, last or at)
        self.accepted, self.drafts, self.at = total_accepted, total_drafts, last

    @property
    def mean_acceptance_length(self) -> float | None:
        return 1.0 + self.accepted / self.drafts if self.drafts > 0 else None

    def to_json(self) -> dict[str, float | None]:
        return {"accepted": self.accepted, "drafts": self.drafts, "at": self.at}

    @classmethod
    def from_json(cls, data: dict[str, float | None], half_life: float) -> SlowAverage:
        return cls(half_life, float(data.get("accepted") or 0.0), float(data.get("drafts") or 0.0), data.get("at"))
