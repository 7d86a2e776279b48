"""One upstream's path through the stages: framing → interpreter → store.

`serve` (live) and `analyze` (one-shot) both push physical lines through a LogPipeline; only the
source and the clock differ.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from exporter.log_intervals import ClockMode, LogInterpreter, might_matter
from exporter.records import RawLine
from exporter.sources.container import FrameDecoder, FramingError, LogFormat
from exporter.sources.linebuffer import DEFAULT_MAX_LINE_BYTES, LineBuffer
from exporter.store import SourceStats, Store


class LogPipeline:
    """Feeds the physical lines of one upstream into the store."""

    def __init__(
        self,
        store: Store,
        upstream: str,
        *,
        log_format: LogFormat = "auto",
        clock: ClockMode = "arrival",
        year_reference: float | None = None,
        model_name: str | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self.store = store
        self.buffer = LineBuffer(max_line_bytes)  # for byte input (analyze, stdin); followed files frame their own
        self.upstream = upstream
        self.decoder = FrameDecoder(log_format)
        self.interpreter = LogInterpreter(upstream, clock=clock, year_reference=year_reference, model_name=model_name)
        store.update_source(upstream, lambda stats: None)

    def consume(self, lines: Sequence[str], read_at: float) -> int:
        """Process physical lines read at `read_at`; return how many were read."""
        spec = 0
        problems: Counter[str] = Counter()
        variants: Counter[str] = Counter()
        last_spec: float | None = None
        decoder, interpreter, upstream = self.decoder, self.interpreter, self.upstream
        for physical in lines:
            if decoder.format == "plain":  # the common case: no generator, no framing
                if not might_matter(physical):
                    continue
                decoded: Iterable[tuple[str, str | None]] = ((physical, None),)
            else:
                try:
                    decoded = list(decoder.decode(physical))
                except FramingError:
                    problems["container_framing"] += 1
                    continue
            for text, stamp in decoded:
                if not might_matter(text):
                    continue
                outcome = interpreter.feed(RawLine(upstream, text, read_at, stamp))
                if outcome.spec_line:
                    spec += 1
                    last_spec = read_at
                if outcome.variant is not None:
                    variants[outcome.variant] += 1
                if outcome.problem is not None:
                    problems[outcome.problem.reason] += 1
                if outcome.config is not None:
                    self.store.record_config(upstream, outcome.config)
                if outcome.interval is not None:
                    self.store.record_interval(outcome.interval)
                if outcome.sample is not None:
                    self.store.record_sample(outcome.sample)
        if lines:
            self.store.update_source(
                upstream, _add(len(lines), spec, problems, variants, read_at, last_spec, interpreter.restarts)
            )
        return len(lines)

    def consume_bytes(self, chunk: bytes, read_at: float) -> int:
        """Frame raw bytes into lines (an unfinished last line waits) and process them."""
        return self.consume(self.buffer.feed(chunk), read_at)

    def finish(self, read_at: float) -> None:
        """The input ended: its unfinished last line counts, and so do over-long lines skipped."""
        self.consume(self.buffer.flush(), read_at)
        self.count_problem("line_too_long", self.buffer.too_long)

    def learn_config(self, lines: Iterable[str]) -> None:
        """Take only the speculative config from `lines` (the head of a file joined mid-run)."""
        for physical in lines:
            try:
                decoded = list(self.decoder.decode(physical))
            except FramingError:
                continue
            for text, stamp in decoded:
                outcome = self.interpreter.feed(RawLine(self.upstream, text, 0.0, stamp))
                if outcome.config is not None:
                    self.store.record_config(self.upstream, outcome.config)
        self.decoder.reset()

    def count_problem(self, reason: str, n: int = 1) -> None:
        if n:
            self.store.update_source(self.upstream, lambda stats: stats.problems.update({reason: n}))

    def file_replaced(self) -> None:
        """A new file took the path's place: its framing is detected afresh."""
        self.decoder.reset()


def _add(  # type: ignore[no-untyped-def]
    count: int, spec: int, problems: Counter[str], variants: Counter[str], read_at: float, last_spec: float | None, restarts: int
):
    def update(stats: SourceStats) -> None:
        stats.up = True  # lines were just read from it
        stats.resets = max(stats.resets, restarts)
        stats.lines += count
        stats.spec_lines += spec
        stats.problems.update(problems)
        stats.variants.update(variants)
        stats.last_success = read_at
        if last_spec is not None:
            stats.last_spec_line = last_spec

    return update
