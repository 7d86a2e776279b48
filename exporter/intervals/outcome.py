"""What one log line produced (LineOutcome), and how it becomes store writes: the readers' common result."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from exporter.records import Interval, ParseProblem, RawLine, RecordSink, SampledValues, SpecConfig


@dataclass(frozen=True, slots=True)
class LineOutcome:
    """What one line produced: at most one of each."""

    interval: Interval | None = None
    config: SpecConfig | None = None
    problem: ParseProblem | None = None
    spec_line: bool = False  # a spec-decode line was recognised (used or not)
    variant: str | None = None
    sample: SampledValues | None = None
    records: tuple[LineOutcome, ...] = ()  # the records of a line that held several (collapsed), in order

    def deliver(self, sink: RecordSink, upstream: str, variants: Counter[str], problems: Counter[str]) -> int:
        """Hand the line's records to `sink` and count its layout and problem; the spec lines it held.
        The one place both the streaming and the batch path turn an outcome into store writes."""
        if self.variant is not None:
            variants[self.variant] += 1
        if self.problem is not None:
            problems[self.problem.reason] += 1
        if self.config is not None:
            sink.record_config(upstream, self.config)
        if self.interval is not None:
            sink.record_interval(self.interval)
        if self.sample is not None:
            sink.record_sample(self.sample)
        return int(self.spec_line) + sum(record.deliver(sink, upstream, variants, problems) for record in self.records)


NOTHING = LineOutcome()


def refused(upstream: str, line: RawLine, reason: str) -> LineOutcome:
    """A spec line of `upstream` (recognised, so counted as one) that gives no record, for `reason`."""
    return LineOutcome(problem=ParseProblem(upstream, reason, line.text), spec_line=True)
