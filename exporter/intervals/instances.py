"""Which server answered a scrape: the instances behind one target URL, told apart.

A target may name a load balancer in front of several vLLM servers, and each scrape is answered by
one of them with its own counters. Read as one server, every switch looked like a counter reset (or,
switching to the one that counted more, like the difference counted again: 800,000 drafts for a real
growth of 4,100). Each answer is therefore compared with the last answer of the same instance:

  * an instance is its counters' `_created` (vLLM exports one per counter, set when the counter was
    made: at the server's start; tests/golden/vllm-0.24.0/*/metrics), else the process's
    `process_start_time_seconds` (prometheus_client's process collector, in the same captures);
  * `/version` cannot tell two servers of one release apart, so it is not used;
  * a body with neither is one instance: a fall is a restart, as without a load balancer.

A new instance starts a baseline and counts as a restart (it may be one; a server seen again later
shows it was another server, which is said once in the log: scrape each server, not the balancer).
A counter lower than before under the same instance is no restart (a restart makes new `_created`):
the answer is skipped, its baseline kept, and counted as `invalid_values`; only falls in
DRAINED_FALLS of the last FALLS_WINDOW answers mark the endpoint drained (not cumulative), so a
single dip no longer abandons a target.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from exporter.parse.exposition import CounterSet

Instance = tuple[str, float] | None  # ("created", t) or ("started", t); None: nothing tells servers apart
MAX_INSTANCES = 4  # per (model, engine) behind one target; the least recently seen is forgotten
FALLS_WINDOW, DRAINED_FALLS = 8, 3


def instance_of(counters: CounterSet, started: float | None) -> Instance:
    """The server a series' counters come from."""
    for name in ("drafts", "draft_tokens", "accepted_tokens"):
        created = counters.created.get((name, None))
        if created is not None:
            return ("created", created)
    return ("started", started) if started is not None else None


@dataclass(slots=True)
class Baseline:
    """An instance's last answer, and whether its recent answers fell (None: none has)."""

    counters: CounterSet
    at: float
    falls: deque[bool] | None = None

    def fell(self) -> bool:
        """Count a fall; True once falls are too frequent to be a dip (the endpoint is not cumulative)."""
        if self.falls is None:
            self.falls = deque(maxlen=FALLS_WINDOW)
        self.falls.append(True)
        return sum(self.falls) >= DRAINED_FALLS

    def rose(self) -> None:
        if self.falls is not None:
            self.falls.append(False)


class Instances:
    """The baselines of each (model, engine), one per instance, least recently seen first."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], dict[Instance, Baseline]] = {}  # insertion order: least recently seen first

    def of(self, key: tuple[str, str]) -> dict[Instance, Baseline]:
        known = self._by_key.get(key)
        if known is None:
            known = self._by_key[key] = {}
        return known

    def keep(self, key: tuple[str, str], instance: Instance, baseline: Baseline) -> None:
        known = self.of(key)
        known.pop(instance, None)
        known[instance] = baseline
        if len(known) > MAX_INSTANCES:
            del known[next(iter(known))]

    def items(self) -> list[tuple[tuple[str, str], Instance, Baseline]]:
        return [(key, instance, baseline) for key, known in self._by_key.items() for instance, baseline in known.items()]
