"""A report written after the fact: each period labelled by its own numbers against the reference.

The live verdict (serve, and the memory analyze replays) judges the window that ends at each
interval, so it lags what happened: after a restart into a broken drafter the window still holds
the healthy life and says `ok` for minutes; a drop is a drop only once the window's pool fell far
enough; a recovery is believed only once it held for the recovery rule's time. A report read after
the log has ended can see what a live verdict could not (issue #32): from the series' stretches
(state/trace.py), cut where the server restarted or its config changed,

  1. each stretch is given its health class by its own numbers against the reference (the
     verdict's own rules, judge/verdict.py: broken, degraded, healthy; too few drafts: none, it
     goes with its neighbours);
  2. neighbours of one class form a period; a period shorter than the judged window (a few noisy
     stretches) — or a healthy one after unhealthy traffic shorter than the recovery rule (a
     recovery that did not hold) — is pooled into its longer neighbour and the pool judged
     again, until every period is long enough; the log's tail stays from a minute on: it is
     what is true now;
  3. each period's verdict is judge(derive(its sums), the reference): its own L, its own state;
  4. a healthy tail after unhealthy traffic that is shorter than the recovery rule is
     `recovering`: its numbers are back, the rule has not seen them hold yet;
  5. an unhealthy span runs from the first unhealthy period to where the numbers recovered.

Pure functions of the stretches, the memory's references and the settings.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from exporter.config import DeriveSettings, HealthThresholds, parse_duration
from exporter.intervals.draft_length import unknown_drafts_reason
from exporter.judge.derive import Derived, derive
from exporter.judge.memory import reference_baseline
from exporter.judge.verdict import Baseline, Verdict, below_floor, collapsed, dropped, judge
from exporter.state.reference import Profile, SeriesMemory, SpecIdentity
from exporter.state.snapshot import SeriesSnapshot
from exporter.state.trace import Stretch, joined
from exporter.state.window import Totals

HealthClass = Literal["healthy", "degraded", "broken", ""]  # "": too little to say
RECOVERING = "recovering"  # a report's word, never a verdict state: the numbers are back, the rule has not seen them hold
TAIL_SECONDS = 60.0  # an unhealthy tail this long is what is true now, however short against the judged window


@dataclass(frozen=True, slots=True)
class Period:
    """One period in hindsight: its sums, its own verdict (or `recovering`), what began it."""

    began_by: str  # "first_traffic" | "restart" | "config_change" | "health"
    identity: SpecIdentity
    totals: Totals
    health: str  # a verdict state, or RECOVERING
    verdict: Verdict
    derived: Derived | None
    baseline: Baseline | None

    @property
    def start(self) -> float | None:
        return self.totals.start

    @property
    def end(self) -> float | None:
        return self.totals.end


@dataclass(frozen=True, slots=True)
class Hindsight:
    periods: tuple[Period, ...]  # oldest first; the last is what is true now
    spans: tuple[tuple[float, float | None, str], ...]  # unhealthy spans: (start, where the numbers recovered or None, worst)
    since: float | None  # when the current health began


def health_class(totals: Totals, baseline: Baseline | None, thresholds: HealthThresholds) -> HealthClass:
    """The verdict's class of `totals` by the verdict's own rules: broken, degraded, healthy; "" below its evidence."""
    drafts = totals.known_drafts
    if not drafts or drafts < thresholds.min_drafts or totals.draft_tokens <= 0:
        return ""
    emitted = totals.known_emitted
    length = emitted / drafts if emitted is not None else 1.0 + totals.accepted_tokens / drafts
    position0 = totals.accepted_per_position[0] / drafts if totals.accepted_per_position else length - 1.0
    if collapsed(length, position0, thresholds):
        return "broken"
    if below_floor(length, thresholds) or (baseline is not None and dropped(length, baseline.mean_acceptance_length, baseline.drafts, thresholds)):
        return "degraded"
    return "healthy"


def _class_of(state: str) -> HealthClass:
    return "healthy" if state in ("ok", "wasteful", RECOVERING) else "broken" if state == "broken" else "degraded" if state == "degraded" else ""


@dataclass
class _Group:
    """Neighbouring stretches of one run pooled into one period, and its class."""

    totals: Totals
    health: HealthClass

    @property
    def seconds(self) -> float:
        start, end = self.totals.start, self.totals.end
        return 0.0 if start is None or end is None else max(0.0, end - start)


def _groups(stretches: list[Stretch], baseline: Baseline | None, thresholds: HealthThresholds, shortest: float, recovery: float,
            last_run: bool) -> list[_Group]:
    """One run's periods (steps 1 and 2 of the module's doc). A healthy period after unhealthy ones
    must last the recovery rule's time (a recovery that did not hold is none: the live verdict's
    rule, seen whole), any other the judged window; the run's tail stays from a minute on."""
    groups: list[_Group] = []
    for stretch in stretches:
        health = health_class(stretch.totals, baseline, thresholds)
        if groups and (not health or health == groups[-1].health or not groups[-1].health):
            pooled = joined(groups[-1].totals, stretch.totals)
            groups[-1] = _Group(pooled, groups[-1].health or health)
        else:
            groups.append(_Group(stretch.totals, health))
    while len(groups) > 1:
        short = [i for i, group in enumerate(groups) if group.seconds < _needed(groups, i, shortest, recovery, last_run)]
        if not short:
            break
        i = min(short, key=lambda index: groups[index].seconds)
        j = i - 1 if i == len(groups) - 1 or (i > 0 and groups[i - 1].seconds >= groups[i + 1].seconds) else i + 1
        first, second = sorted((i, j))
        pooled = joined(groups[first].totals, groups[second].totals)
        groups[first:second + 1] = [_Group(pooled, health_class(pooled, baseline, thresholds) or groups[j].health)]
        merged: list[_Group] = []  # neighbours of one class are one period
        for group in groups:
            if merged and merged[-1].health == group.health:
                merged[-1] = _Group(joined(merged[-1].totals, group.totals), group.health)
            else:
                merged.append(group)
        groups = merged
    return groups


def _needed(groups: list[_Group], i: int, shortest: float, recovery: float, last_run: bool) -> float:
    """How long group i must last to stand as a period of its own."""
    if last_run and i == len(groups) - 1:
        return min(TAIL_SECONDS, shortest)
    after_unhealthy = i > 0 and groups[i - 1].health in ("degraded", "broken")
    return max(shortest, recovery) if groups[i].health == "healthy" and after_unhealthy else shortest


def _reference(memory: SeriesMemory | None, identity: SpecIdentity, at: float | None, snapshot: SeriesSnapshot,
               known: dict[int, Profile | None]) -> tuple[int, Profile | None]:
    """The reference in force for traffic of this config at `at` — a retired one (another config's, or
    one a new normal replaced after `at`), else the current one —, and which it is (-1: the current);
    `known`: the judged profiles found so far, by which."""
    rule = snapshot.reference_rule
    if memory is None or rule is None:
        return -2, None
    which = -2
    for index, retired in sorted(enumerate(memory.retired), key=lambda pair: pair[1].at):
        if not retired.identity.conflicts(identity) and (memory.identity.conflicts(identity) or (at is not None and at < retired.at)):
            which = index
            break
    else:
        which = -1 if not memory.identity.conflicts(identity) else -2
    if which not in known:
        known[which] = None if which == -2 else memory.ready(rule) if which == -1 else memory.retired[which].profile.judged(rule)
    return which, known[which]


def hindsight(series: SeriesSnapshot, settings: DeriveSettings) -> Hindsight | None:
    """The series' periods and unhealthy spans in hindsight; None where no stretches are kept (serve)."""
    if not series.trace:
        return None
    shortest = parse_duration(settings.health_window)
    runs: list[list[Stretch]] = []
    for stretch in series.trace:
        if runs and runs[-1][0].run == stretch.run:
            runs[-1].append(stretch)
        else:
            runs.append([stretch])
    periods: list[Period] = []
    for number, whole in enumerate(runs):
        for part, (reference, run) in enumerate(_by_reference(whole, series)):
            periods += _periods(series, settings, run, reference, shortest, number == len(runs) - 1, part == 0)
    periods = _recovering(periods, series)
    return Hindsight(tuple(periods), _spans(periods), _since(periods))


def _by_reference(run: list[Stretch], series: SeriesSnapshot) -> list[tuple[Profile | None, list[Stretch]]]:
    """A run's stretches in parts judged against one reference each (a new normal taken mid-run starts a part)."""
    parts: list[tuple[int, Profile | None, list[Stretch]]] = []
    known: dict[int, Profile | None] = {}
    for stretch in run:
        which, reference = _reference(series.memory, stretch.identity, stretch.totals.start, series, known)
        if parts and parts[-1][0] == which:
            parts[-1][2].append(stretch)
        else:
            parts.append((which, reference, [stretch]))
    return [(reference, stretches) for _, reference, stretches in parts]


def _periods(series: SeriesSnapshot, settings: DeriveSettings, run: list[Stretch], reference: Profile | None, shortest: float,
             last_run: bool, first_part: bool) -> list[Period]:
    """One run's (or part's) periods, each with its own verdict."""
    thresholds, cost = settings.thresholds, settings.cost_for(series.config.method, series.key.model_name)
    identity = run[-1].identity
    baseline = reference_baseline(reference) if reference is not None else None
    periods = []
    recovery = series.reference_rule.recovery_seconds if series.reference_rule is not None else shortest
    for index, group in enumerate(_groups(run, baseline, thresholds, shortest, recovery, last_run)):
        k = identity.k or group.totals.k or len(group.totals.accepted_per_position) or None
        derived = derive(replace(group.totals, k=k), cost)
        because = unknown_drafts_reason(series.config.method, series.config.server_version, k, series.config.variable_drafts)
        verdict = judge(derived, baseline, thresholds, "the period", because)
        periods.append(Period(run[0].began_by if index == 0 and first_part else "health", identity, group.totals, verdict.state, verdict,
                              derived, baseline))
    return periods


def _recovering(periods: list[Period], series: SeriesSnapshot) -> list[Period]:
    """The healthy tail after unhealthy traffic, shorter than the recovery rule: `recovering`."""
    rule = series.reference_rule
    if rule is None or not periods or _class_of(periods[-1].health) != "healthy":
        return periods
    first = len(periods)
    while first > 0 and _class_of(periods[first - 1].health) == "healthy":
        first -= 1
    if first == 0 or not any(_class_of(p.health) in ("degraded", "broken") for p in periods[:first]):
        return periods
    start, end = periods[first].start, periods[-1].end
    if start is None or end is None or end - start >= rule.recovery_seconds:
        return periods
    held = (end - start) / 60
    out = list(periods)
    for i in range(first, len(periods)):
        p = periods[i]
        message = (f"{p.verdict.message} — healthy again for {held:.0f} min of the {rule.recovery_seconds / 60:g} min a recovery must hold "
                   "(the live verdict still says unhealthy)")
        out[i] = Period(p.began_by, p.identity, p.totals, RECOVERING, Verdict(p.verdict.state, RECOVERING, message), p.derived, p.baseline)
    return out


def _spans(periods: list[Period]) -> tuple[tuple[float, float | None, str], ...]:
    """Runs of unhealthy periods: from the first's start to where the numbers recovered (the next period's start)."""
    spans: list[tuple[float, float | None, str]] = []
    open_start: float | None = None
    worst = ""
    for period in periods:
        unhealthy = _class_of(period.health) in ("degraded", "broken")
        if unhealthy and period.start is not None:
            if open_start is None:
                open_start, worst = period.start, period.health
            elif period.health == "broken":
                worst = "broken"
        elif open_start is not None and _class_of(period.health) == "healthy":
            spans.append((open_start, period.start if period.start is not None else period.end, worst))
            open_start = None
    if open_start is not None:
        spans.append((open_start, None, worst))
    return tuple(spans)


def _since(periods: list[Period]) -> float | None:
    """When the current health began: the start of the tail of periods of the same state."""
    if not periods:
        return None
    first = len(periods) - 1
    while first > 0 and periods[first - 1].health == periods[-1].health:
        first -= 1
    return periods[first].start
