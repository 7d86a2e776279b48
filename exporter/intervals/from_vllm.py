"""vLLM's spec lines (text or JSON, every layout parse/vllm_log.py reads) → Interval records.

V1 lines count one interval each; V0's cumulative lines become intervals through v0_deltas.py.
The checks a V1 line must pass (`nan%`, A ≤ T, the printed rate against the counts) are written
once here, in arithmetic that takes a line's numbers or a block's arrays (batch.py calls it too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TypeVar

from exporter.intervals.clock import UNRESOLVED
from exporter.intervals.draft_length import drafts_from_tokens
from exporter.intervals.log_state import DEFAULT_ENGINE, LogState
from exporter.intervals.outcome import LineOutcome, refused
from exporter.intervals.reconstruct import reconstruct
from exporter.intervals.v0_deltas import V0Deltas
from exporter.records import Interval, ParsedSpecLine, RawLine, SeriesKey, SpecConfig

RATE_TOLERANCE_PERCENT = 0.05 + 1e-6  # V1 prints α with one decimal

N = TypeVar("N")  # a line's number, or a block's array of them (numpy broadcasts the same operators)


def inconsistent_counts(accepted: N, drafted: N, printed_percent: N) -> N:
    """More accepted than drafted, or a printed rate that the counts contradict (nan: none printed).
    For a line with T > 0, or elementwise over a block's arrays (under np.errstate where T = 0)."""
    rate_disagrees = (printed_percent == printed_percent) & (abs(100.0 * accepted / drafted - printed_percent) > RATE_TOLERANCE_PERCENT)  # type: ignore[operator]
    return (accepted > drafted) | rate_disagrees  # type: ignore[operator,no-any-return]


@dataclass
class VllmSpecReader:
    """Turns one log's vLLM spec lines into Intervals, on the log's shared state."""

    state: LogState
    v0: V0Deltas = field(default_factory=V0Deltas)

    def read(self, line: RawLine, pid: int | None, month_day_time: str, parsed: ParsedSpecLine, dated: str | None = None) -> LineOutcome:
        state = self.state
        drafts: int | None
        k: int | None
        drafts_range: tuple[int, int] | None
        emitted: int | None = None
        config: SpecConfig | None = None
        new_run = False
        state.spec_lines_from((pid,))
        load = None if parsed.cumulative else state.take_load(pid)  # every V1 spec line takes its stats line's load, used or not
        if parsed.cumulative:
            if parsed.accepted_tokens > parsed.draft_tokens:  # V0's totals: more accepted than ever drafted
                return refused(state.upstream, line, "inconsistent_counts")
            k_printed = parsed.num_speculative_tokens
            if k_printed and k_printed != state.config.num_speculative_tokens:
                # V0 prints k on every line: another k is another server run, with its own reference
                config = state.take_config(SpecConfig(num_speculative_tokens=k_printed))
            counts = self.v0.delta(pid, parsed)
            if counts is None:
                return LineOutcome(config=config, spec_line=True, variant=parsed.variant)
            if isinstance(counts, str):
                return replace(refused(state.upstream, line, counts), config=config)
            key: SeriesKey = state.series(DEFAULT_ENGINE)
            draft_tokens, accepted, drafts, k, emitted, new_run = counts
            positions: tuple[int, ...] = ()  # V0 never prints them: reported as null
            drafts_range = (drafts, drafts)
        else:
            if parsed.draft_tokens == 0:  # a `nan%` line: nothing was drafted
                return LineOutcome(spec_line=True, variant=parsed.variant)
            printed = parsed.draft_acceptance_percent
            if inconsistent_counts(parsed.accepted_tokens, parsed.draft_tokens, math.nan if printed is None else printed):
                return refused(state.upstream, line, "inconsistent_counts")
            key = state.series(state.engine_of(pid))
            draft_tokens, accepted = parsed.draft_tokens, parsed.accepted_tokens
            rates = parsed.position_rates
            k = (len(rates) if rates else None) or state.config.num_speculative_tokens
            rebuilt = reconstruct(accepted, draft_tokens, parsed.mean_acceptance_length, rates)
            if rebuilt is None and (rates or parsed.mean_acceptance_length is not None):
                return refused(state.upstream, line, "reconstruction_failed")
            pinned = drafts_from_tokens(draft_tokens, k, state.draft_length())
            if rebuilt is None:  # V1-a, V1-b: only A and T; D = T/k for a fixed-length drafter, else unknown
                drafts, positions = pinned, ()
                drafts_range = None if pinned is None else (pinned, pinned)
            elif pinned is not None and rebuilt.drafts == pinned:
                # a fixed-length drafter and T/k is among the D the printed numbers allow (reconstruct
                # prefers it when it is): the range closes on it; a T/k they rule out is not forced
                drafts, positions, drafts_range = pinned, rebuilt.accepted_per_position, (pinned, pinned)
            else:
                drafts, positions = rebuilt.drafts, rebuilt.accepted_per_position
                drafts_range = (rebuilt.drafts_low, rebuilt.drafts_high)
        own = state.own_time(line, local=month_day_time, dated=dated)
        end = state.clock.place(own, line.read_at)
        if end is None:
            return refused(state.upstream, line, UNRESOLVED)
        if not parsed.cumulative:
            state.writers.spec_line_at(pid, key.engine, own, _printed_seconds(accepted, parsed.accepted_throughput))
        previous = state.advance(key, end)
        start = None if new_run else previous  # a V0 run's first line counts from the server's start
        interval = Interval(
            key=key,
            end=end,
            start=start,
            seconds=_seconds(parsed, accepted, end, start),
            draft_tokens=draft_tokens,
            accepted_tokens=accepted,
            drafts=drafts,
            accepted_per_position=positions,
            k=k or state.config.num_speculative_tokens,
            drafts_range=drafts_range,
            variant=parsed.variant,
            emitted_tokens=emitted,
            logged_at=own,
            running=None if load is None else load[0].running,
            running_before=None if load is None else load[1],
            generation_throughput=None if load is None else load[0].generation_throughput,
        )
        return LineOutcome(interval=interval, config=config, spec_line=True, variant=parsed.variant, problem=state.unresolved(line, own))


def _printed_seconds(accepted: int, throughput: float | None) -> float | None:
    """vLLM's own interval length, A / accepted throughput, where the line prints it (and A > 0)."""
    return accepted / throughput if throughput is not None and 0 < throughput < math.inf and accepted > 0 else None


def _seconds(parsed: ParsedSpecLine, accepted: int, end: float, start: float | None) -> float | None:
    """The interval's length: vLLM's own (A / accepted throughput) when printed, else line spacing."""
    printed = None if parsed.cumulative else _printed_seconds(accepted, parsed.accepted_throughput)
    if printed is not None:
        return printed
    if start is not None and end > start:
        return end - start
    return None
