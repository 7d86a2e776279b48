"""Days of a vLLM log in seconds: the simulator's log lines, drawn per stats interval instead of per draft.

`SimulatedServer` draws every draft (right for a live demo, ≈ a minute per simulated hour at 100
drafts/s); a test of a verdict that must hold for days needs 74 h of log at once. Here each
interval's counts are drawn in one go — the number of drafts that reached position i is a binomial
of those that reached i − 1 (normal approximation) — and written by vllm_format, so the lines are
the same V1 layouts the parser reads. Realistic noise: traffic follows a day curve, and each
interval's workload scales every conditional rate by a small random factor.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from exporter.simulate import vllm_format
from exporter.simulate.engine import Counts, Engine
from exporter.simulate.layouts import Layout
from exporter.simulate.scenarios import Scenario, conditional_from_rates


@dataclass
class _View:
    """What vllm_format reads of a server (engine.ServerView)."""

    scenario: Scenario
    log_format: str
    now: float
    engines: Sequence[Engine]
    api_pid: int = 4242
    engine_pid: int = 4342
    layout: Layout = field(default_factory=lambda: Layout(version="0.24.0"))  # the layout of the real 0.24.0 capture
    iteration_details: bool = False
    iterations: int = 0


@dataclass(frozen=True)
class Phase:
    """From `at` seconds after the start: this scenario (k, rates, method…), every position's rate
    r_i × `factor`, and the day curve's traffic × `traffic` (a lull: a small fraction)."""

    at: float
    scenario: Scenario
    factor: float = 1.0
    traffic: float = 1.0
    restart: bool = False  # the server restarts here (shutdown and startup lines)


@dataclass
class LongLog:
    phases: Sequence[Phase]
    hours: float
    start_time: float
    log_interval: float = 10.0
    drafts_per_second: float = 100.0
    workload_noise: float = 0.05  # sd of the per-interval factor on every conditional rate
    day_swing: float = 0.6  # traffic at night is (1 − this) of the day's
    seed: int = 0
    log_format: str = "V1-e"
    _rng: random.Random = field(init=False)

    def _count(self, n: int, p: float) -> int:
        if n <= 0 or p <= 0:
            return 0
        mean, sd = n * p, math.sqrt(n * p * (1 - p))
        return max(0, min(n, round(self._rng.gauss(mean, sd))))

    def write(self, path: str) -> float:
        """Write the log to `path` (mtime = its last line, so its year resolves); return the end time."""
        self._rng = random.Random(self.seed)
        phases = sorted(self.phases, key=lambda p: p.at)
        current = phases[0]
        view = _View(current.scenario, self.log_format, self.start_time, [Engine(0, current.scenario.k, self.start_time)])
        elapsed = 0.0
        with open(path, "w", encoding="utf-8") as out:
            out.write("\n".join(vllm_format.startup_lines(view)) + "\n")
            while elapsed < self.hours * 3600:
                elapsed += self.log_interval
                view.now = self.start_time + elapsed
                upcoming = [p for p in phases if p.at <= elapsed]
                if upcoming[-1] is not current:
                    current = upcoming[-1]
                    if current.restart or current.scenario.k != view.scenario.k:
                        out.write("\n".join(vllm_format.shutdown_lines(view)) + "\n")
                        view.api_pid += 7
                        view.engine_pid += 7
                        view.scenario = current.scenario
                        view.engines = [Engine(0, current.scenario.k, view.now)]
                        out.write("\n".join(vllm_format.startup_lines(view)) + "\n")
                engine = view.engines[0]
                engine.interval = self._interval(current, elapsed)
                out.write("\n".join(vllm_format.interval_lines(view, self.log_interval)) + "\n")
        os.utime(path, (view.now, view.now))
        return view.now

    def _interval(self, phase: Phase, elapsed: float) -> Counts:
        k = phase.scenario.k
        day = 0.5 * (1 + math.sin(2 * math.pi * elapsed / 86400))
        rate = self.drafts_per_second * (1 - self.day_swing * (1 - day)) * phase.traffic
        drafts = max(0, round(self._rng.gauss(rate * self.log_interval, math.sqrt(rate * self.log_interval))))
        workload = max(0.0, self._rng.gauss(1.0, self.workload_noise))
        reached, per_position = drafts, []
        for conditional in conditional_from_rates(tuple(r * phase.factor for r in phase.scenario.rates)):
            reached = self._count(reached, min(1.0, conditional * workload))
            per_position.append(reached)
        return Counts(drafts=drafts, draft_tokens=drafts * k, accepted=sum(per_position), per_position=per_position)
