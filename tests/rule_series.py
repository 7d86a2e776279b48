"""Build days of raw vLLM counters (and sidecar gauges) at one-minute steps for `promtool test rules`.

A scenario is a list of phases; each minute of a phase has a draft rate and per-position rates
r_i = A_i / D, k = len(rates). The counters are what vLLM exports: drafts, draft tokens (D·k),
accepted tokens (Σ A_i, exact in vLLM) and one accepted counter per position, which exists only
while that position is drafted (k is read from the number of position series). A restart sets the
counters back to 0; a gap leaves minutes without a sample (the target is down).
"""

from __future__ import annotations

import math
import random
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from exporter import metric_names as names

MINUTES_PER_HOUR = 60


def geometric_rates(first: float, total: float, k: int) -> tuple[float, ...]:
    """Per-position rates first·q^i for i < k whose sum is `total` (L − 1), q found by bisection."""
    low, high = 0.0, 1.0
    for _ in range(100):
        q = (low + high) / 2
        low, high = (q, high) if sum(first * q**i for i in range(k)) < total else (low, q)
    return tuple(first * q**i for i in range(k))


# The server: k = 15, L ≈ 2.62, position 0 ≈ 0.72; degraded: every position × 0.6.
HEALTHY_K15 = geometric_rates(0.72, 1.62, 15)
DEGRADED_K15 = tuple(r * 0.6 for r in HEALTHY_K15)


@dataclass(frozen=True)
class Phase:
    minutes: int
    drafts_per_second: float
    rates: tuple[float, ...]
    restart: bool = False  # counters start again from 0 at this phase's first minute
    gap: int = 0  # minutes without any sample before the phase (the server is down)
    # minute index (from the scenario start), draft rate, rates → noisy draft rate and rates
    noise: Callable[[int, float, tuple[float, ...]], tuple[float, tuple[float, ...]]] | None = None


def realistic_noise(seed: int) -> Callable[[int, float, tuple[float, ...]], tuple[float, tuple[float, ...]]]:
    """Traffic with a daily cycle (±60%) and bursts; acceptance with a daily mix cycle (±6%) and
    per-minute jitter (±4% σ), i.e. what a fleet dashboard shows for a healthy server."""
    rng = random.Random(seed)

    def noisy(minute: int, drafts: float, rates: tuple[float, ...]) -> tuple[float, tuple[float, ...]]:
        day = 2 * math.pi * minute / (24 * MINUTES_PER_HOUR)
        traffic = max(0.05, 1 + 0.6 * math.sin(day) + rng.gauss(0, 0.15))
        mix = 1 + 0.06 * math.sin(day + 1.0) + rng.gauss(0, 0.04)
        return drafts * traffic, tuple(min(1.0, r * mix * (1 + rng.gauss(0, 0.02))) for r in rates)

    return noisy


@dataclass
class _Counters:
    drafts: list[str] = field(default_factory=list)
    draft_tokens: list[str] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    positions: dict[int, list[str]] = field(default_factory=dict)


def _minutes(phases: list[Phase]) -> Iterator[tuple[int, Phase, bool, bool]]:
    """(minute index, phase, first minute of the phase, missing) for every minute."""
    minute = 0
    for phase in phases:
        for _ in range(phase.gap):
            yield minute, phase, False, True
            minute += 1
        for offset in range(phase.minutes):
            yield minute, phase, offset == 0, False
            minute += 1


@dataclass(frozen=True)
class Minute:
    """One minute of a scenario: what vLLM counted in it (nothing when `missing`)."""

    index: int
    missing: bool
    restart: bool  # the counters start again from 0 with this minute
    drafts: int = 0
    accepted: tuple[int, ...] = ()  # A_i, one per drafted position (k = its length)


def minutes(phases: list[Phase]) -> Iterator[Minute]:
    """The counts of every minute, noise drawn: the one source of vllm_series and of a sidecar fed the same traffic."""
    for minute, phase, first, missing in _minutes(phases):
        if missing:
            yield Minute(minute, True, False)
            continue
        drafts, rates = phase.drafts_per_second, phase.rates
        if phase.noise is not None:
            drafts, rates = phase.noise(minute, drafts, rates)
        count = round(drafts * 60)
        yield Minute(minute, False, first and phase.restart, count, tuple(round(count * r) for r in rates))


def vllm_series(labels: str, phases: list[Phase]) -> list[dict[str, str]]:
    """The input_series of one vLLM engine: `labels` like 'job="vllm",instance="a:8000",model_name="m",engine="0"'."""
    max_k = max(len(p.rates) for p in phases)
    out = _Counters(positions={i: ["_"] for i in range(max_k)})
    totals = {"drafts": 0.0, "draft_tokens": 0.0, "accepted": 0.0}
    per_position = [0.0] * max_k
    out.drafts.append("0")
    out.draft_tokens.append("0")
    out.accepted.append("0")
    for i in range(len(phases[0].rates)):
        out.positions[i][0] = "0"
    for minute in minutes(phases):
        if minute.missing:  # a failed scrape: Prometheus marks every series of the target stale, then has nothing
            for column in (out.drafts, out.draft_tokens, out.accepted, *out.positions.values()):
                column.append("stale" if column[-1] not in ("_", "stale") else "_")
            continue
        if minute.restart:
            totals = dict.fromkeys(totals, 0.0)
            per_position = [0.0] * max_k
        count, accepted = minute.drafts, minute.accepted
        totals["drafts"] += count
        totals["draft_tokens"] += count * len(accepted)
        totals["accepted"] += sum(accepted)
        out.drafts.append(f"{totals['drafts']:g}")
        out.draft_tokens.append(f"{totals['draft_tokens']:g}")
        out.accepted.append(f"{totals['accepted']:g}")
        for position in range(max_k):
            if position < len(accepted):
                per_position[position] += accepted[position]
                out.positions[position].append(f"{per_position[position]:g}")
            else:  # a series gone from the scrape is marked stale once
                column = out.positions[position]
                column.append("stale" if column[-1] not in ("_", "stale") else "_")
    series = [
        {"series": f"{names.VLLM_DRAFTS.sample_name}{{{labels}}}", "values": " ".join(out.drafts)},
        {"series": f"{names.VLLM_DRAFT_TOKENS.sample_name}{{{labels}}}", "values": " ".join(out.draft_tokens)},
        {"series": f"{names.VLLM_ACCEPTED_TOKENS.sample_name}{{{labels}}}", "values": " ".join(out.accepted)},
    ]
    per_position_name = names.VLLM_ACCEPTED_PER_POSITION.sample_name
    for position, values in out.positions.items():
        series.append({"series": f'{per_position_name}{{{labels},position="{position}"}}', "values": " ".join(values)})
    return series


def clock(minutes: int) -> dict[str, str]:
    """A series with a sample at every minute: what "at every evaluation" is counted against."""
    return {"series": "clock", "values": f"1x{minutes}"}


def hours(value: float) -> str:
    """A promtool duration in whole minutes."""
    return f"{round(value * MINUTES_PER_HOUR)}m"


def rules_for(alerts: set[str], rule_files: list[str]) -> dict[str, list[dict[str, object]]]:
    """The committed groups cut down to `alerts` and the records they read, transitively.

    Same expressions, order, group names and intervals; only rules nothing here reads are left out,
    so days of one-minute steps evaluate in seconds rather than a minute.
    """
    groups = [group for path in rule_files for group in yaml.safe_load(Path(path).read_text(encoding="utf-8"))["groups"]]
    rules = [rule for group in groups for rule in group["rules"]]
    records = {rule["record"] for rule in rules if "record" in rule}
    needed: set[str] = set(alerts)
    frontier = [rule["expr"] for rule in rules if rule.get("alert") in alerts]
    while frontier:
        for token in re.findall(r"[a-z_]+:[a-z0-9_]+:[a-z0-9_]+", frontier.pop()):
            if token in records and token not in needed:
                needed.add(token)
                frontier.extend(rule["expr"] for rule in rules if rule.get("record") == token)
    kept = []
    for group in groups:
        chosen = [rule for rule in group["rules"] if rule.get("record", rule.get("alert")) in needed]
        if chosen:
            kept.append({**group, "rules": chosen})
    return {"groups": kept}


def gauge_values(points: list[tuple[int, str]]) -> str:
    """promtool values from (minutes, value) runs: [(120, "2.62"), (60, "1.97")] → '2.62x119 1.97x59'."""
    return " ".join(f"{value}x{minutes - 1}" if minutes > 1 else value for minutes, value in points)


def promtool_tests(documents: dict[str, dict[str, object]], directory: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """Each promtool unit-test document written to `directory` (rule files relative to it) and run by
    `promtool test rules` at once, one process each; each one's output read while it waits, so a long
    failure report never blocks its pipe."""
    tool = shutil.which("promtool")
    assert tool, "promtool missing: scripts/test installs Debian's prometheus"
    running = {}
    for index, (name, document) in enumerate(documents.items()):
        path = directory / f"scenario-{index}-test.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False, width=1 << 20), encoding="utf-8")
        running[name] = subprocess.Popen([tool, "test", "rules", path.name], cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    done = {}
    for name, process in running.items():
        output, _ = process.communicate(timeout=600)
        done[name] = subprocess.CompletedProcess(process.args, process.returncode, output, "")
    return done
