"""A simulated vLLM server's spec-decode state, written out as vLLM writes it: log lines and /metrics.

Drafts are drawn step by step from the scenario's acceptance model with a seeded generator, in
fixed ticks of simulated time, so a run is a function of its seed alone. The same draws feed the
cumulative counters behind /metrics and the per-interval sums behind each `SpecDecoding metrics`
line (reset after each printed line, as vLLM V1 does), so log and /metrics agree exactly as a real
server's do.
"""

from __future__ import annotations

import random
import threading
import time

from exporter.simulate import vllm_format
from exporter.simulate.engine import Counts, Engine
from exporter.simulate.layouts import Layout, minor
from exporter.simulate.scenarios import Scenario

NGRAM_FULL_FROM = (0, 32)
TICK_SECONDS = 0.1
STEPS_PER_TICK = 4  # iteration-detail lines: one is written per tick, numbered as if 4 steps ran


class SimulatedServer:
    """Advance with `advance(seconds)`; read `metrics_text()` and the log lines `advance` returns."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        engines: int = 1,
        seed: int = 0,
        start_time: float | None = None,
        log_interval: float = 10.0,
        log_format: str = "V1-e",
        layout: Layout | None = None,
        iteration_details: bool = False,
    ) -> None:
        if log_format not in vllm_format.LOG_FORMATS:
            raise ValueError(f"unknown log format {log_format!r} (known: {', '.join(vllm_format.LOG_FORMATS)})")
        self.scenario = scenario
        self.rng = random.Random(seed)
        self.start_time = time.time() if start_time is None else start_time
        self.elapsed = 0.0
        self.log_interval = log_interval
        self.log_format = log_format
        self.layout = layout or Layout()  # the newest supported vLLM, text logs
        self.iteration_details = iteration_details  # --enable-logging-iteration-details
        self.iterations = 0
        # n-gram drafts are shorter than k only up to vLLM 0.31; 0.32's Model Runner V2 fills all k slots
        ngram_full = scenario.method in ("ngram", "ngram_gpu") and minor(self.layout.version) >= NGRAM_FULL_FROM
        self.shortened_drafts = scenario.shortened_drafts and not ngram_full
        self.lock = threading.Lock()
        self.api_pid = 1000 + self.rng.randrange(60000)
        self.engine_pid = self.api_pid + 100
        self.engines = [Engine(i, scenario.k, self.start_time) for i in range(engines)]
        self._since_log = 0.0
        self._restarted = False
        self._pending: list[str] = vllm_format.startup_lines(self)

    @property
    def now(self) -> float:
        return self.start_time + self.elapsed

    def advance(self, seconds: float) -> list[str]:
        """Simulate `seconds` more (in ticks); return the log lines written meanwhile."""
        with self.lock:
            lines, self._pending = self._pending, []
            for _ in range(max(1, round(seconds / TICK_SECONDS))):
                self._tick(lines)
            return lines

    def _tick(self, lines: list[str]) -> None:
        self.elapsed += TICK_SECONDS
        scenario = self.scenario
        if scenario.restart_after is not None and not self._restarted and self.elapsed >= scenario.restart_after:
            self._restart(lines)
        conditional = scenario.conditional(self.elapsed)
        for engine in self.engines:
            for _ in range(self._draws(scenario.drafts_per_second * TICK_SECONDS)):
                length = self.rng.randint(1, scenario.k) if self.shortened_drafts else scenario.k
                accepted = 0
                while accepted < length and self.rng.random() < conditional[accepted]:
                    accepted += 1
                engine.total.add(length, accepted)
                engine.interval.add(length, accepted)
        self._since_log += TICK_SECONDS
        lines.extend(vllm_format.iteration_lines(self, STEPS_PER_TICK))
        if self._since_log >= self.log_interval - 1e-9:
            lines.extend(vllm_format.interval_lines(self, self._since_log))
            for engine in self.engines:
                engine.interval = Counts(per_position=[0] * scenario.k)
            self._since_log = 0.0

    def _draws(self, mean: float) -> int:
        """A whole number of drafts with the given mean (the fraction is drawn)."""
        whole = int(mean)
        return whole + (1 if self.rng.random() < mean - whole else 0)

    def _restart(self, lines: list[str]) -> None:
        self._restarted = True
        lines.extend(vllm_format.shutdown_lines(self))
        self.api_pid += 7
        self.engine_pid += 7
        for engine in self.engines:
            engine.reset_total(self.now)
            engine.interval = Counts(per_position=[0] * self.scenario.k)
        self._since_log = 0.0
        lines.extend(vllm_format.startup_lines(self))

    def totals(self) -> list[dict[str, object]]:
        """Exact counts per engine since the (last) start: the ground truth."""
        with self.lock:
            return [
                {
                    "engine": str(e.index),
                    "drafts": e.total.drafts,
                    "draft_tokens": e.total.draft_tokens,
                    "accepted_tokens": e.total.accepted,
                    "accepted_per_position": list(e.total.per_position),
                }
                for e in self.engines
            ]

    def metrics_text(self) -> str:
        """/metrics in the layout of the vLLM 0.24.0 capture (counters, then `_created` gauges)."""
        with self.lock:
            return vllm_format.exposition(self)
