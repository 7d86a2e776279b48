"""The sample lines of one series, one source or the shared rest, written from a snapshot (pure).

A window with no drafts exports nothing for that window (absent, not zero, not NaN). What a
series exports beyond its counters and verdict is chosen by ExpositionSettings: by default the
derived gauges of the health window only (issue 19; README, "Lean by default").
"""

from __future__ import annotations

from exporter import metric_names as names
from exporter.config import ExpositionSettings
from exporter.expose.labels import clean
from exporter.expose.lines import Add, Info
from exporter.judge.assess import Assessment
from exporter.judge.derive import Derived
from exporter.judge.memory import health_since
from exporter.records import SeriesKey
from exporter.state.snapshot import SeriesSnapshot, Snapshot, SourceSnapshot


def series_labels(key: SeriesKey) -> list[str]:
    return [clean(key.upstream), clean(key.model_name), clean(key.engine), key.source]


def stale_upstreams(snapshot: Snapshot, grace_seconds: float) -> set[str]:
    """Upstreams whose source has been down for longer than the grace period."""
    return {
        source.upstream
        for source in snapshot.sources
        if not source.up and (source.last_success is None or snapshot.taken_at - source.last_success > grace_seconds)
    }


def counters(series: SeriesSnapshot, labels: list[str], add: Add) -> None:
    life = series.lifetime
    add(names.DRAFT_TOKENS, labels, life.draft_tokens)
    add(names.ACCEPTED_TOKENS, labels, life.accepted_tokens)
    if life.known_drafts is not None:
        add(names.DRAFTS, labels, life.known_drafts)
    for position, count in enumerate(life.accepted_per_position):
        add(names.ACCEPTED_PER_POSITION, [*labels, str(position)], count)
    for position, count in enumerate(life.draft_tokens_per_position):
        add(names.DRAFT_TOKENS_PER_POSITION, [*labels, str(position)], count)


def config_info(snapshot: Snapshot, info: Info) -> None:
    """One info sample per (upstream, model) whose drafter configuration is known."""
    seen = set()
    for series in snapshot.series:
        config = series.config
        key = (series.key.upstream, series.key.model_name)
        if key in seen or (config.method is None and config.num_speculative_tokens is None):
            continue
        seen.add(key)
        info(
            names.INFO,
            {
                "upstream": clean(series.key.upstream),
                "model_name": clean(series.key.model_name),
                "method": clean(config.method or ""),
                "num_speculative_tokens": str(config.num_speculative_tokens or ""),
                "draft_model": clean(config.draft_model or ""),
                "server_version": clean(config.server_version or ""),
            },
        )


def source_metrics(source: SourceSnapshot, add: Add, info: Info) -> None:
    upstream = clean(source.upstream)
    add(names.SOURCE_UP, [source.kind, upstream], 1.0 if source.up else 0.0)
    if source.last_success is not None:
        add(names.SOURCE_LAST_SUCCESS, [source.kind, upstream], source.last_success)
    add(names.SERVER_RESTARTS, [upstream], source.resets)
    if source.kind == "metrics":
        if source.scrape_duration is not None:
            add(names.SCRAPE_DURATION, [upstream], source.scrape_duration)
        for reason, count in sorted(source.problems.items()):
            add(names.SCRAPE_ERRORS, [upstream, reason], count)
        info(names.TARGET_INFO, {"upstream": upstream, **{k: clean(v) for k, v in sorted(source.extra_labels.items()) if k != "upstream"}})
        return
    add(names.LOG_LINES, [upstream], source.lines)
    for variant, count in sorted(source.variants.items()):
        add(names.LOG_SPEC_LINES, [upstream, variant], count)
    for reason, count in sorted(source.problems.items()):
        add(names.LOG_PARSE_ERRORS, [upstream, reason], count)
    if source.last_spec_line is not None:
        add(names.LAST_SPEC_LINE, [upstream], source.last_spec_line)
    add(names.LOG_ROTATIONS, [upstream], source.rotations)
    add(names.LOG_TRUNCATIONS, [upstream], source.truncations)


def memory_gauges(series: SeriesSnapshot, state: str, labels: list[str], add: Add) -> None:
    """When the current health began, and the reference it is judged against (once it judges)."""
    since = health_since(series.memory, state)
    if since is not None:
        add(names.HEALTH_SINCE, labels, since)
    if series.memory is None or series.reference_rule is None:
        return
    reference = series.memory.ready(series.reference_rule)
    if reference is None or reference.mean_acceptance_length is None:
        return
    add(names.REFERENCE_MEAN_ACCEPTANCE_LENGTH, labels, reference.mean_acceptance_length)
    for position, rate in enumerate(reference.position_acceptance):
        add(names.REFERENCE_POSITION_ACCEPTANCE, [*labels, str(position)], rate)


SAMPLED = {
    "mean_acceptance_length": names.SAMPLED_MEAN_ACCEPTANCE_LENGTH,
    "draft_acceptance_ratio": names.SAMPLED_DRAFT_ACCEPTANCE_RATIO,
    "system_efficiency_ratio": names.SAMPLED_SYSTEM_EFFICIENCY,
    "num_draft_tokens": names.SAMPLED_NUM_DRAFT_TOKENS,
}


def speedup_candidates(derived: Derived, every: bool) -> list[int]:
    """The k whose expected speed-up is exported: all of 0..k, or the recommended and the running one."""
    if every:
        return list(range(len(derived.speedup)))
    running = derived.num_speculative_tokens if derived.num_speculative_tokens is not None else len(derived.speedup) - 1
    chosen = {running, derived.recommended_speculative_tokens}
    return sorted(k for k in chosen if k is not None and 0 <= k < len(derived.speedup))


def window_gauges(derived: Derived, w: list[str], add: Add, exposition: ExpositionSettings, *, advise: bool = True) -> None:
    """A window's gauges; the recommended k only where `advise` (never from a degraded or broken drafter's curve)."""
    if derived.draft_acceptance_ratio is not None:
        add(names.DRAFT_ACCEPTANCE_RATIO, w, derived.draft_acceptance_ratio)
    if derived.seconds:
        add(names.WASTED_TOKENS_RATE, w, derived.wasted_draft_tokens / derived.seconds)
    if derived.mean_acceptance_length is None:
        return
    add(names.MEAN_ACCEPTANCE_LENGTH, w, derived.mean_acceptance_length)
    if derived.mean_draft_length is not None:
        add(names.MEAN_DRAFT_LENGTH, w, derived.mean_draft_length)
    for position, rate in enumerate(derived.position_acceptance):
        add(names.POSITION_ACCEPTANCE, [*w, str(position)], rate)
    if exposition.conditional:  # else the recording rules compute it from the per-position counters
        for position, conditional in enumerate(derived.conditional_acceptance):
            if conditional is not None:
                add(names.POSITION_CONDITIONAL, [*w, str(position)], conditional)
    if advise and derived.recommended_speculative_tokens is not None:
        add(names.RECOMMENDED_K, w, derived.recommended_speculative_tokens)
    for k in speedup_candidates(derived, exposition.speedup_all):
        add(names.EXPECTED_SPEEDUP, [*w, str(k)], derived.speedup[k])


def payoff_gauges(assessment: Assessment, labels: list[str], w: list[str], add: Add, *, advise: bool = True) -> None:
    """The judged window's pay-off at the server's load (judge/payoff.py) and how much of decoding
    speculated; each absent where it cannot be known (no calibration, no load printed)."""
    share = assessment.totals.load.speculated_share
    if share is not None:
        add(names.SPECULATED_SHARE, w, share)
    payoff = assessment.payoff
    if payoff is None:
        return
    now = payoff.now
    if now is not None and now.speedup is not None:
        add(names.PAYOFF_SPEEDUP, w, now.speedup)
        add(names.PAYOFF_RUNNING, w, now.running)
        if advise and now.best_k is not None:
            add(names.PAYOFF_BEST_K, w, now.best_k)
    if payoff.break_even_running is not None:
        add(names.BREAK_EVEN_RUNNING, labels, payoff.break_even_running)
