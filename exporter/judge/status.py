"""Per-series reports: the derived numbers and verdict of each series, as plain data.

Serves `analyze` (JSON/CSV/table) and the `/api/v1/status` endpoint. Unknown values are None
(JSON null), never invented.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from exporter.config import DeriveSettings
from exporter.judge.assess import Assessment, assess
from exporter.judge.crosscheck import cross_check
from exporter.judge.derive import Derived, derive
from exporter.judge.hindsight import Hindsight, hindsight
from exporter.judge.hindsight import Period as HindsightPeriod
from exporter.judge.memory import health_since
from exporter.judge.payoff import payoff_json
from exporter.state.load import LoadSums
from exporter.state.periods import Period, health_class
from exporter.state.reference import HEALTHY, Profile, ReferenceRule, SeriesMemory, SpecIdentity
from exporter.state.snapshot import SeriesSnapshot, Snapshot
from exporter.state.window import Totals


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


def _positions(values: Any) -> list[Any] | None:
    """Per-position values, or None (JSON null) when the format prints none (V0, V1-a, V1-b): never []."""
    return list(values) or None


def derived_fields(derived: Derived | None, totals: Totals) -> dict[str, Any]:
    """The derive layer's numbers for one span, JSON-ready."""
    if derived is None:
        return {
            "drafts": totals.known_drafts if totals.intervals else None,
            "draft_tokens": totals.draft_tokens,
            "accepted_tokens": totals.accepted_tokens,
            "wasted_draft_tokens": totals.draft_tokens - totals.accepted_tokens,
            "accepted_per_position": _positions(totals.accepted_per_position),
            "mean_acceptance_length": None,
            "draft_acceptance_ratio": None,
            "mean_draft_length": None,
            "position_acceptance": None,
            "conditional_acceptance": None,
            "expected_tokens_per_step": None,
            "speedup_estimate": None,
            "recommended_speculative_tokens": None,
            "seconds": None,
            "wasted_draft_tokens_per_second": None,
            "acceptance_length_histogram": None,
        }
    return {
        "drafts": derived.drafts,
        "draft_tokens": derived.draft_tokens,
        "accepted_tokens": derived.accepted_tokens,
        "wasted_draft_tokens": derived.wasted_draft_tokens,
        "accepted_per_position": _positions(totals.accepted_per_position),
        "mean_acceptance_length": _round(derived.mean_acceptance_length),
        "draft_acceptance_ratio": _round(derived.draft_acceptance_ratio),
        "mean_draft_length": _round(derived.mean_draft_length),
        "position_acceptance": _positions([_round(r) for r in derived.position_acceptance]),
        "conditional_acceptance": _positions([_round(c) for c in derived.conditional_acceptance]),
        "expected_tokens_per_step": _positions([_round(e) for e in derived.expected_tokens_per_step]),
        "speedup_estimate": _positions([_round(s) for s in derived.speedup]),
        "recommended_speculative_tokens": derived.recommended_speculative_tokens,
        "seconds": _round(derived.seconds, 3),
        "wasted_draft_tokens_per_second": _round(derived.wasted_draft_tokens / derived.seconds, 3) if derived.seconds else None,
        # share of drafts that accepted exactly j tokens, j = 0..k; null without per-position counts
        "acceptance_length_histogram": None if derived.acceptance_histogram is None else [_round(h) for h in derived.acceptance_histogram],
    }


def series_report(series: SeriesSnapshot, settings: DeriveSettings, *, span: str = "lifetime") -> dict[str, Any]:
    """One series over its lifetime (analyze) or over a named window, with its verdict. Over the
    lifetime of a series whose stretches are kept (analyze), the verdict, the current and earlier
    periods and the unhealthy spans are hindsight's (judge/hindsight.py), the live verdict's beside
    them under `live`; the top level's advice is its verdict's, the pooled figures are labelled."""
    assessment = assess(series, settings, span)
    current, totals = assessment.derived, assessment.totals
    now = current_period_fields(series, assessment, settings)
    fields = derived_fields(current, totals)
    if assessment.verdict.state in ("degraded", "broken"):  # no k advice from a failing curve, whatever the span
        fields["recommended_speculative_tokens"] = now["recommended_speculative_tokens"] if now else None
    report = _series_entry(series, settings, span, assessment, now, fields)
    seen = hindsight(series, settings) if span == "lifetime" else None
    if seen is not None and seen.periods:
        report.update(_in_hindsight(series, settings, seen, report))
    if span == "lifetime":  # one object, one derivation: the advice is the verdict's; the pooled figures say so
        pooled = derived_fields(current, totals)
        report["lifetime"] = {**pooled, "lines": totals.intervals, "start": totals.start, "end": totals.end}
        report["lifetime_recommended_speculative_tokens"] = pooled["recommended_speculative_tokens"]
        headline = report["current_period"]
        if headline is not None:
            report["recommended_speculative_tokens"] = headline["recommended_speculative_tokens"]
        report["recommendation_from"] = headline["recommendation_from"] if headline else None
        report["advice"] = headline["advice"] if headline else None
    return report


def _series_entry(series: SeriesSnapshot, settings: DeriveSettings, span: str, assessment: Assessment, now: dict[str, Any] | None,
                  fields: dict[str, Any]) -> dict[str, Any]:
    totals = assessment.totals
    return {
        "upstream": series.key.upstream,
        "source": series.key.source,
        "model_name": series.key.model_name,
        "engine": series.key.engine,
        "format": series.variant or None,
        "window": span,
        "current_period": now,  # the headline: what is true now
        "earlier_periods": [earlier_period_fields(p) for p in reversed(series.memory.periods)] if series.memory is not None else [],
        "lines": totals.intervals,
        **fields,
        "drafts_bounds": [totals.drafts_low, totals.drafts_high] if totals.intervals and not totals.drafts_unknown else None,
        "num_speculative_tokens": assessment.k,
        "method": series.config.method,
        "draft_model": series.config.draft_model,
        "server_version": series.config.server_version,
        "cost_model": settings.cost_for(series.config.method, series.key.model_name).describe(),
        "health": assessment.verdict.state,
        "reason_code": assessment.verdict.reason,
        "reason": assessment.verdict.message,
        "baseline": None if assessment.baseline is None else {
            "mean_acceptance_length": round(assessment.baseline.mean_acceptance_length, 6),
            "drafts": round(assessment.baseline.drafts, 1),
            "source": assessment.baseline.source,
        },
        "health_since": health_since(series.memory, assessment.verdict.state),
        **memory_fields(series.memory, series.reference_rule),
        "notes": list(assessment.notes),
        "timeline": [[round(at, 3), round(length, 4)] for at, length in series.timeline],
        "start": totals.start,
        "end": totals.end,
        "runs": runs_fields(series, settings) if span == "lifetime" else [],
        "load": load_fields(totals.load, assessment.k),
        "payoff": None if assessment.payoff is None else payoff_json(assessment.payoff, settings.calibration),
    }


def load_fields(load: LoadSums, k: int | None) -> dict[str, Any] | None:
    """The server's load over the span, where its lines printed it: how much of decoding speculated."""
    if not load.intervals:
        return None
    return {
        "intervals": load.intervals,
        "mean_running": _round(load.mean_running, 3),
        "tokens_per_second": _round(load.generation_rate, 2),
        "speculated_share": _round(load.speculated_share, 4),  # decode steps that drafted ÷ all decode steps
        "drafted_length": _round(load.drafted_length, 4),  # T/D: tokens a draft held
        "configured_k": k,
    }


def runs_fields(series: SeriesSnapshot, settings: DeriveSettings) -> list[dict[str, Any]]:
    """Each run of the series where its speculative config changed (empty for one run): its own counts and L."""
    if len(series.runs) < 2:
        return []
    cost = settings.cost_for(series.config.method, series.key.model_name)
    out = []
    for identity, totals in series.runs:
        derived = derive(totals, cost)
        out.append({
            **_identity(identity),
            "start": totals.start,
            "end": totals.end,
            "lines": totals.intervals,
            "drafts": totals.known_drafts if totals.intervals else None,
            "draft_tokens": totals.draft_tokens,
            "accepted_tokens": totals.accepted_tokens,
            "mean_acceptance_length": None if derived is None else _round(derived.mean_acceptance_length),
            "draft_acceptance_ratio": None if derived is None else _round(derived.draft_acceptance_ratio),
            "mean_draft_length": None if derived is None else _round(derived.mean_draft_length),
        })
    return out


CHECK_CONFIG = (
    "fix the drafter before tuning k: compare the drafter's config.json with the target's "
    "(specdecode-exporter check-config DRAFTER TARGET), and its curve with the reference's"
)


def current_period_fields(series: SeriesSnapshot, assessment: Assessment, settings: DeriveSettings) -> dict[str, Any] | None:
    """The headline: the traffic since the last config change, restart or health change, with its
    own numbers, verdict and advice. While the series is degraded or broken the advice is to fix
    the drafter, and any k advice comes from the reference, never from the failing curve."""
    memory, totals = series.memory, assessment.period
    if memory is None or totals is None:
        return None
    period, verdict = memory.current_period(), assessment.period_verdict or assessment.verdict
    k = assessment.k or len(totals.accepted_per_position) or None
    return period_fields(series, settings, began_by=period.began_by or "first_traffic", health=verdict.state, reason=verdict.message,
                         identity=memory.identity, totals=totals, derived=assessment.period_derived, k=k)


def period_fields(series: SeriesSnapshot, settings: DeriveSettings, *, began_by: str, health: str, reason: str, identity: SpecIdentity,
                  totals: Totals, derived: Derived | None, k: int | None) -> dict[str, Any]:
    """A period's own numbers, verdict and advice (the live current period's, or one in hindsight)."""
    fields = {"began_by": began_by, "health": health, "reason": reason, "start": totals.start, "end": totals.end, **_identity(identity),
              **derived_fields(derived, totals)}
    fields["recommendation_from"] = "current_period" if fields["recommended_speculative_tokens"] is not None else None
    fields["advice"] = None
    if health in ("degraded", "broken"):
        memory, rule = series.memory, series.reference_rule
        judged = memory.ready(rule) if memory is not None and rule is not None else None
        from_reference = derive(_profile_totals(judged, k), settings.cost_for(series.config.method, series.key.model_name)) if judged and k else None
        fields["recommended_speculative_tokens"] = from_reference.recommended_speculative_tokens if from_reference else None
        fields["recommendation_from"] = "reference" if from_reference else None
        fields["advice"] = CHECK_CONFIG + (f"; the reference's curve pays for k = {fields['recommended_speculative_tokens']}" if from_reference else "")
    return fields


def _in_hindsight(series: SeriesSnapshot, settings: DeriveSettings, seen: Hindsight, live: dict[str, Any]) -> dict[str, Any]:
    """The verdict, the periods and the unhealthy spans of a report written after the fact; the live ones under `live`."""
    now = seen.periods[-1]
    k = now.identity.k or now.totals.k or len(now.totals.accepted_per_position) or None
    return {
        "health": now.health,
        "reason_code": now.verdict.reason,
        "reason": now.verdict.message,
        "health_since": seen.since,
        "current_period": period_fields(series, settings, began_by=now.began_by, health=now.health, reason=now.verdict.message,
                                        identity=now.identity, totals=now.totals, derived=now.derived, k=k),
        "earlier_periods": [_hindsight_period(p) for p in reversed(seen.periods[:-1])],
        "unhealthy_spans": [{"start": start, "end": end, "ongoing": end is None, "worst": worst} for start, end, worst in seen.spans],
        "live": {name: live[name] for name in ("health", "reason_code", "reason", "health_since", "current_period", "earlier_periods",
                                                "unhealthy_spans")},
    }


def _hindsight_period(period: HindsightPeriod) -> dict[str, Any]:
    totals = period.totals
    drafts = totals.known_drafts
    return {
        "start": totals.start, "end": totals.end, "began_by": period.began_by, "health": health_class(period.health) or period.health,
        "state": period.verdict.state, **_identity(period.identity),
        "drafts": drafts, "mean_acceptance_length": None if period.derived is None else _round(period.derived.mean_acceptance_length),
        "position0_acceptance": _round(totals.accepted_per_position[0] / drafts) if totals.accepted_per_position and drafts else None,
        "reason": period.verdict.message,
    }


def _profile_totals(profile: Profile, k: int) -> Totals:
    return Totals(intervals=1, draft_tokens=profile.drafts * k, accepted_tokens=profile.accepted, drafts=profile.drafts, drafts_low=profile.drafts,
                  drafts_high=profile.drafts, accepted_per_position=profile.accepted_per_position, k=k)


def earlier_period_fields(period: Period) -> dict[str, Any]:
    method, k, draft_model = (*period.config, None, None, None)[:3]
    return {
        "start": period.start, "end": period.end, "began_by": period.began_by or "first_traffic", "health": period.health or None,
        "method": method, "num_speculative_tokens": k, "draft_model": draft_model, "drafts": None if period.drafts_unknown else period.drafts,
        "mean_acceptance_length": _round(period.mean_acceptance_length),
        "position0_acceptance": _round(period.accepted_per_position[0] / period.drafts)
        if period.accepted_per_position and period.drafts and not period.drafts_unknown else None,
    }


def _identity(identity: SpecIdentity) -> dict[str, Any]:
    return {"method": identity.method, "num_speculative_tokens": identity.k, "draft_model": identity.draft_model}


def profile_fields(profile: Profile) -> dict[str, Any]:
    """A reference as plain data: pooled L and per-position rates, and what they were pooled from."""
    return {
        "mean_acceptance_length": _round(profile.mean_acceptance_length),
        "position_acceptance": [_round(r) for r in profile.position_acceptance],
        "drafts": profile.drafts,
        "start": profile.start,
        "end": profile.end,
    }


def memory_fields(memory: SeriesMemory | None, rule: ReferenceRule | None) -> dict[str, Any]:
    """The reference the verdict judges against, the earlier ones, and the unhealthy spans."""
    if memory is None:
        return {"reference": None, "previous_references": [], "unhealthy_spans": [], "reference_adopted": None}
    judged = memory.ready(rule) if rule is not None else memory.reference
    return {
        "reference": {
            **profile_fields(judged or memory.reference),
            **_identity(memory.identity),
            # the best day of the lookback, not the pool of now: a decay since then is measured from it
            "best_day": judged is not None and judged is not memory.reference,
            "ready": judged is not None,
            "min_drafts": rule.min_drafts if rule else 0,
            "learning": (not memory.state or memory.state in HEALTHY) and memory.quiet_since is None,
        },
        "previous_references": [
            {**profile_fields((r.profile.judged(rule) if rule is not None else None) or r.profile), **_identity(r.identity),
             "retired": r.reason, "retired_at": r.at}
            for r in memory.retired
        ],
        "unhealthy_spans": [
            {"start": start, "end": end, "ongoing": end is None, "worst": worst} for start, end, worst in memory.spans
        ],
        "reference_adopted": None if memory.adopted is None else {"how": memory.adopted[0], "at": memory.adopted[1]},
    }


def snapshot_report(
    snapshot: Snapshot,
    settings: DeriveSettings,
    spans: Mapping[str, float] | None = None,
    pairs: Iterable[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """All series (over their lifetime, or over each window in `spans`) plus source counters."""
    names = ["lifetime"] if not spans else sorted(spans, key=spans.__getitem__)
    up = {source.upstream: source.up for source in snapshot.sources}
    series = [series_report(s, settings, span=name) for s in snapshot.series for name in names]
    for entry in series:
        entry["source_up"] = up.get(entry["upstream"])
    return {
        "series": series,
        "sampled": [
            {
                "upstream": sample.key.upstream,
                "source": sample.key.source,
                "model_name": sample.key.model_name,
                "engine": sample.key.engine,
                "format": sample.variant or None,
                "at": sample.at,
                "values": dict(sample.values),
                "note": "sampled: the server's own snapshot of its last batch window, not counts; never pooled",
            }
            for sample in snapshot.samples
        ],
        "cross_check": [
            {
                "reference_upstream": gap.reference_upstream,
                "compared_upstream": gap.compared_upstream,
                "reference_source": gap.reference_source,
                "compared_source": gap.compared_source,
                "model_name": gap.model_name,
                "engine": gap.engine,
                "window": gap.window,
                "window_seconds": snapshot.window_seconds.get(gap.window),
                "quantity": gap.quantity,
                "reference": round(gap.reference_value, 6),
                "compared": round(gap.compared_value, 6),
                "relative_difference": round(gap.relative_difference, 6),
                "agree": gap.agree,
            }
            for gap in cross_check(snapshot, pairs or ())
        ],
        "parse_errors": _merged(source.problems for source in snapshot.sources),
        "lines_read": sum(source.lines for source in snapshot.sources),
        "spec_lines": sum(source.spec_lines for source in snapshot.sources),
        "sources": [
            {
                "upstream": source.upstream,
                "kind": source.kind,
                "up": source.up,
                "lines_read": source.lines,
                "spec_lines": source.spec_lines,
                "formats": dict(source.variants),
                "parse_errors": dict(source.problems),
                "rotations": source.rotations,
                "truncations": source.truncations,
                "last_success": source.last_success,
                "last_spec_line": source.last_spec_line,
                # that line's own time: far behind last_spec_line (the read) while catching up a backlog
                "last_spec_line_logged": source.last_spec_line_logged,
                "last_error": source.last_error,
                "server_restarts": source.resets,
                "scrape_duration_seconds": source.scrape_duration,
                "labels": dict(source.extra_labels),
                "log_zone": None if source.log_zone is None else {
                    "zone": source.log_zone, "utc_offset_seconds": source.log_utc_offset, "from": source.log_zone_from,
                },
            }
            for source in snapshot.sources
        ],
        "series_dropped": snapshot.series_dropped,
    }


def _merged(counters: Any) -> dict[str, int]:
    merged: dict[str, int] = {}
    for counter in counters:
        for reason, count in counter.items():
            merged[reason] = merged.get(reason, 0) + count
    return dict(sorted(merged.items()))
