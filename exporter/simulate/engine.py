"""A simulated engine's counters, and the view of a server that the log writer reads.

Kept apart from server.py so that vllm_format (which writes what the server did) and the server
(which calls it) do not import each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from exporter.simulate.layouts import Layout
from exporter.simulate.scenarios import Scenario


@dataclass
class Counts:
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    per_position: list[int] = field(default_factory=list)

    def add(self, length: int, accepted: int) -> None:
        self.drafts += 1
        self.draft_tokens += length
        self.accepted += accepted
        for position in range(accepted):
            self.per_position[position] += 1


@dataclass
class Engine:
    index: int
    k: int
    created: float
    total: Counts = field(init=False)
    interval: Counts = field(init=False)

    def __post_init__(self) -> None:
        self.reset_total(self.created)
        self.interval = Counts(per_position=[0] * self.k)

    def reset_total(self, created: float) -> None:
        self.created = created
        self.total = Counts(per_position=[0] * self.k)


class ServerView(Protocol):
    """What vllm_format reads of a SimulatedServer."""

    scenario: Scenario
    log_format: str
    layout: Layout
    iteration_details: bool
    iterations: int
    api_pid: int
    engine_pid: int

    @property
    def now(self) -> float: ...

    @property
    def engines(self) -> Sequence[Engine]: ...
