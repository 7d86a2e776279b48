"""SGLang's `Decode batch` lines (parse/sglang_log.py) → sampled values of its series.

SGLang prints the acceptance length and rate of its recent decode steps, not counts: they are
samples of a gauge, not intervals, and its own local date and time places them through the clock.
"""

from __future__ import annotations

from exporter.intervals.clock import UNRESOLVED
from exporter.intervals.log_state import LogState
from exporter.intervals.outcome import LineOutcome, refused
from exporter.parse.sglang_log import SglangDecodeLine
from exporter.records import RawLine, SampledValues


def read_sglang_decode(state: LogState, line: RawLine, parsed: SglangDecodeLine) -> LineOutcome:
    own = state.own_time(line, dated=parsed.time)
    at = state.clock.place(own, line.read_at)
    if at is None:
        return refused(state.upstream, line, UNRESOLVED)
    values = [("mean_acceptance_length", parsed.mean_acceptance_length)]
    if parsed.draft_acceptance_ratio is not None:
        values.append(("draft_acceptance_ratio", parsed.draft_acceptance_ratio))
    sample = SampledValues(key=state.series(parsed.engine), at=at, values=tuple(values), variant=parsed.variant)
    return LineOutcome(sample=sample, spec_line=True, variant=parsed.variant, problem=state.unresolved(line, own))
