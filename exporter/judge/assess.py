"""Assess a series over a span: derive once, pick its baseline, judge, and note caveats.

Shared by the report (analyze, /api/v1/status) and the collector, so both always say the same.
The baseline is the series' reference (state/reference.py: learned only while healthy, frozen
while degraded) when the store keeps one; a store without memory (a bare `Store()`) falls back to
the series' longest window.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from exporter.config import DeriveSettings
from exporter.intervals.draft_length import unknown_drafts_reason
from exporter.judge.derive import Derived, derive
from exporter.judge.memory import reference_baseline
from exporter.judge.payoff import Payoff, estimate
from exporter.judge.verdict import Baseline, Verdict, as_baseline, judge
from exporter.state.reference import HEALTHY, UNHEALTHY
from exporter.state.snapshot import SeriesSnapshot
from exporter.state.window import Totals
from exporter.vocabulary import verdict_state

SHORT_DRAFTS = 0.95  # drafts averaging under this share of k are "shortened"


@dataclass(frozen=True, slots=True)
class Assessment:
    span: str  # a window name, or "lifetime"
    totals: Totals
    derived: Derived | None
    baseline: Baseline | None
    verdict: Verdict
    notes: tuple[str, ...]
    k: int | None  # num_speculative_tokens: as configured, else as many as positions were reported
    period: Totals | None = None  # the current period's sums (state/periods.py), where the store keeps a memory
    period_derived: Derived | None = None
    period_verdict: Verdict | None = None  # the verdict, its ok/wasteful part (and so its k) from the current period
    payoff: Payoff | None = None  # speed-up over plain decoding by load (judge/payoff.py)


TREE_METHODS = ("ddtree", "tree")


def _notes(derived: Derived | None, k: int | None, method: str | None) -> tuple[str, ...]:
    notes: list[str] = []
    if method in TREE_METHODS:
        notes.append(
            "tree drafting: vLLM counts every tree node as drafted but only the accepted path as accepted, so the draft "
            "acceptance ratio is structurally low and the per-position rates are per depth — judge by L"
        )
    if derived is None or derived.mean_draft_length is None or not k:
        return tuple(notes)
    if derived.mean_draft_length < SHORT_DRAFTS * k and method not in TREE_METHODS:
        notes.append(
            f"drafts average {derived.mean_draft_length:.1f} of k = {k} tokens (n-gram or dynamic draft length): a position "
            "that was not drafted counts as rejected, so later positions — and the recommendation — understate what "
            "full-length drafts would reach"
        )
    return tuple(notes)


def baseline_for(series: SeriesSnapshot, span: str, settings: DeriveSettings) -> Baseline | None:
    if span == "lifetime" and series.recent is None:
        return None
    if series.memory is not None and series.reference_rule is not None:
        ready = series.memory.ready(series.reference_rule)
        return reference_baseline(ready) if ready is not None else None  # still learning: no relative verdict
    if not series.windows:
        return None
    longest = max(series.windows, key=lambda name: series.window_seconds.get(name, 0.0))
    if longest == span:
        return None
    return as_baseline(derive(series.windows[longest], settings.cost_for(series.config.method, series.key.model_name)), f"{longest} window")


def assess(series: SeriesSnapshot, settings: DeriveSettings, span: str = "lifetime") -> Assessment:
    totals = series.lifetime if span == "lifetime" else series.windows[span]
    derived = derive(totals, settings.cost_for(series.config.method, series.key.model_name))
    baseline = baseline_for(series, span, settings)
    k = series.config.num_speculative_tokens or (derived.num_speculative_tokens if derived else None)
    window = None if span == "lifetime" else span
    judged = derived
    if span == "lifetime" and series.recent is not None:
        # a whole log (analyze) is judged as the sidecar would have judged its end: the last health window
        judged = derive(series.recent, settings.cost_for(series.config.method, series.key.model_name))
        window = f"the last {settings.health_window}"
    notes = _notes(derived, k, series.config.method)
    if span == "lifetime" and len(series.runs) > 1:
        # k (or the drafter) changed: the lifetime pools runs of different configs, so a mean draft
        # length below the last k says nothing about shortened drafts; judge notes by the last run
        last = derive(series.runs[-1][1], settings.cost_for(series.config.method, series.key.model_name))
        notes = (
            f"the speculative config changed during the log ({len(series.runs)} runs, k = "
            f"{' → '.join(str(identity.k or '?') for identity, _ in series.runs)}): the lifetime figures pool the runs; "
            "each run has its own figures and reference",
            *_notes(last, k, series.config.method),
        )
    because = unknown_drafts_reason(series.config.method, series.config.server_version, k, series.config.variable_drafts)
    verdict = _held(judge(judged, baseline, settings.thresholds, window, because), series, window)
    period = series.memory.current_period() if series.memory is not None else None
    period_totals = period.totals(k) if period is not None and period.intervals else None
    period_derived = derive(period_totals, settings.cost_for(series.config.method, series.key.model_name)) if period_totals else None
    period_verdict = verdict
    if period_derived is not None and verdict.state in HEALTHY:
        # how many positions pay is a question for the whole current period, not for its last minutes: the
        # verdict's reason and the recommended k come from this one derivation
        by_period = judge(period_derived, None, settings.thresholds, "the current period")
        period_verdict = by_period if by_period.state in HEALTHY else verdict
    if span == "lifetime":  # analyze: the headline is the current period
        verdict = period_verdict
    now = series.recent if span == "lifetime" else totals
    payoff = estimate(series.load, now.load if now is not None else None, _rates(now), settings.calibration, k)
    verdict = slower_than_plain(verdict, payoff, settings)
    return Assessment(span, totals, derived, baseline, verdict, notes, k, period_totals, period_derived, period_verdict, payoff)


def _rates(totals: Totals | None) -> tuple[float, ...]:
    drafts = totals.known_drafts if totals is not None else None
    return tuple(count / drafts for count in totals.accepted_per_position) if totals is not None and drafts else ()


def slower_than_plain(verdict: Verdict, payoff: Payoff, settings: DeriveSettings) -> Verdict:
    """A drafter that works (ok, wasteful) can still cost more than it returns at this load: then the
    verdict says so, with the measured speed-up and the break-even load (never over broken or degraded)."""
    now = payoff.now
    if verdict.state not in ("ok", "wasteful") or now is None or now.speedup is None:
        return verdict
    if now.speedup >= 1.0 - settings.thresholds.wasteful_min_gain:
        return verdict
    where = f"; break-even ≈ {payoff.break_even_running:.0f} running" if payoff.break_even_running is not None else ""
    advice = " (speculate less at this load: see the k per batch size)" if now.best_k == 0 or now.best_k is None else f" (k = {now.best_k} would pay best here)"
    return Verdict(
        "wasteful", "slower_than_plain",
        f"speculation is slower than plain decoding at this load: ×{now.speedup:.2f} at {now.running:.0f} running requests{where}{advice}",
    )


def _held(verdict: Verdict, series: SeriesSnapshot, window: str | None = None) -> Verdict:
    """A degraded or broken series is healthy again only once its memory says the recovery held. A
    window whose numbers look healthy while the judged window has not (a longer one, pooling the
    traffic before the drop) is no recovery: it says the series is unhealthy since it turned."""
    memory, rule = series.memory, series.reference_rule
    if memory is None or rule is None or memory.state not in UNHEALTHY or verdict.state not in HEALTHY:
        return verdict
    if memory.recovering_since is None:
        since = f" since {time.strftime('%H:%M UTC', time.gmtime(memory.since))}" if memory.since is not None else ""
        over = f"{window} " if window else "this window "
        return Verdict(
            verdict_state(memory.state), "unhealthy_judged",
            f"{verdict.message} — but {over}pools the traffic before it turned {memory.state}{since}: still {memory.state} over the judged window",
        )
    return Verdict(
        verdict_state(memory.state), "recovering",
        f"{verdict.message} — but {memory.state} until that holds for {rule.recovery_seconds / 60:g} min",
    )


def judged_window(settings: DeriveSettings, window_seconds: Mapping[str, float]) -> str | None:
    """The window the verdict judges: the configured one if it exists, else the shortest."""
    if settings.health_window in window_seconds:
        return settings.health_window
    return min(window_seconds, key=window_seconds.__getitem__) if window_seconds else None
