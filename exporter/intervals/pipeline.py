"""One upstream's path through the stages: framing → interpreter → a record sink (the store).

`serve` (live) and `analyze` (one-shot) both push blocks of physical lines through a LogPipeline;
only the source and the clock differ. A plain-text block goes to the scanner, which hands over only
the lines holding a marker; container framing (docker, CRI) is unwrapped line by line first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from exporter.config import LogFormat
from exporter.intervals.clock import ClockMode, LogClock, LogZone
from exporter.intervals.from_log import LogInterpreter
from exporter.parse.container import FrameDecoder, FramingError, detect_format
from exporter.parse.envelope import parse_envelope
from exporter.parse.scan import LineScanner, might_matter
from exporter.records import RawLine, ReadCounts, RecordSink
from exporter.sources.linebuffer import DEFAULT_MAX_LINE_BYTES, LineBuffer, split_lines

BATCH_BLOCK_BYTES = 256 << 10  # a block this large is a catch-up (live following reads a few lines at a time)


class LogPipeline:
    """Feeds the physical lines of one upstream into a record sink (the store, in `serve` and `analyze`)."""

    def __init__(
        self,
        sink: RecordSink,
        upstream: str,
        *,
        log_format: LogFormat = "auto",
        clock: ClockMode = "live",
        year_reference: float | None = None,
        zone: LogZone | None = None,
        model_name: str | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        source_kind: str = "log",
        batch: bool | None = False,
    ) -> None:
        self.sink = sink
        self.buffer = LineBuffer(max_line_bytes)  # for byte input (analyze, stdin); followed files frame their own
        self.max_line_bytes = max_line_bytes
        self.scanner = LineScanner(max_line_bytes)
        self._split_too_long = 0  # over-long lines dropped while unwrapping container framing
        self.upstream = upstream
        self.decoder = FrameDecoder(log_format)
        self.clock = LogClock(clock, zone, year_reference)
        self.interpreter = LogInterpreter(upstream, clock=self.clock, model_name=model_name)
        # whole blocks through the batch path (exporter/intervals/batch.py): True for analyze; None
        # (serve) for blocks of a catch-up's size only — `--from-start`, a restart's backlog, a
        # burst — while the few lines of live following stay on the streaming path; False: never.
        # Both paths give the same Intervals (tests/test_batch_equivalence.py, tests/test_catchup.py).
        self.batch = batch
        self._zoned = source_kind == "log"  # plugin records carry exact times: no zone to show
        sink.count_read(upstream, ReadCounts(zone=self._zone(None)), kind=source_kind)

    def consume_block(self, block: bytes, read_at: float) -> int:
        """Process a block of complete lines (joined by b"\\n") read at `read_at`; return its line count."""
        decoder = self.decoder
        if decoder.format is None:
            stripped = block.lstrip()
            if not stripped:
                return self._interpret((), block.count(b"\n") + 1, read_at)  # blank lines: decide later
            first = stripped[:4096].split(b"\n", 1)[0]  # the first non-empty line decides
            decoder.format = detect_format(first.decode("utf-8", errors="replace"))
        if decoder.format != "plain":
            lines, dropped = split_lines(block, self.max_line_bytes)
            self._split_too_long += dropped
            return self.consume(lines, read_at) + dropped
        hits = self.scanner.scan(block)
        if self.batch or (self.batch is None and len(block) >= BATCH_BLOCK_BYTES):
            return self._interpret_block(hits, block.count(b"\n") + 1, read_at)
        return self._interpret([(text, None) for text in hits], block.count(b"\n") + 1, read_at)

    @property
    def too_long(self) -> int:
        """Lines over the cap dropped here (a followed file's line buffer counts the ones it cut off
        itself); the source that feeds this pipeline posts them with its health."""
        return self.buffer.too_long + self.scanner.too_long + self._split_too_long

    def consume(self, lines: Sequence[str], read_at: float) -> int:
        """Process physical lines read at `read_at`; return how many were read."""
        if self.decoder.format == "plain":
            return self._interpret([(line, None) for line in lines if might_matter(line)], len(lines), read_at)
        texts: list[tuple[str, str | None]] = []
        framing_errors = 0
        for physical in lines:
            try:
                texts.extend(self.decoder.decode(physical))
            except FramingError:
                framing_errors += 1
        return self._interpret(texts, len(lines), read_at, framing_errors)

    def _interpret(self, texts: Iterable[tuple[str, str | None]], count: int, read_at: float, framing_errors: int = 0) -> int:
        """Feed log lines (with their container time) to the interpreter; `count` physical lines were read."""
        spec = 0
        problems: Counter[str] = Counter()
        if framing_errors:
            problems["container_framing"] = framing_errors
        variants: Counter[str] = Counter()
        logged: float | None = None
        interpreter, upstream, sink = self.interpreter, self.upstream, self.sink
        for text, stamp in texts:  # the interpreter passes over lines without a marker at once
            outcome = interpreter.feed(RawLine(upstream, text, read_at, stamp))
            spec += outcome.deliver(sink, upstream, variants, problems)
            if outcome.interval is not None and outcome.interval.logged_at is not None and (logged is None or outcome.interval.logged_at > logged):
                logged = outcome.interval.logged_at  # the latest own time (the block path's columns come a series at a time)
        if count:
            sink.count_read(upstream, ReadCounts(lines=count, spec_lines=spec, problems=problems, variants=variants, read_at=read_at, logged=logged,
                                                 restarts=interpreter.restarts, zone=self._zone(read_at)))
        return count

    def _interpret_block(self, texts: list[str], count: int, read_at: float) -> int:
        """The batch path: what _interpret does, with runs of plain spec lines taken as columns."""
        from exporter.intervals.batch import MIN_SEGMENT, deliver, interpret_block  # numpy is imported only where blocks are batched

        result = deliver(interpret_block(self.interpreter, texts, read_at, MIN_SEGMENT), self.sink, self.upstream)
        if count:
            counts = ReadCounts(lines=count, spec_lines=result.spec_lines, problems=result.problems, variants=result.variants, read_at=read_at,
                                logged=result.last_logged(), restarts=self.interpreter.restarts, zone=self._zone(read_at))
            self.sink.count_read(self.upstream, counts)
        return count

    def consume_bytes(self, chunk: bytes, read_at: float) -> int:
        """Frame raw bytes into lines (an unfinished last line waits) and process them."""
        block = self.buffer.feed(chunk)
        return 0 if block is None else self.consume_block(block, read_at)

    def finish(self, read_at: float) -> None:
        """The input ended: its unfinished last line counts (over-long lines skipped: `too_long`)."""
        block = self.buffer.flush()
        if block is not None:
            self.consume_block(block, read_at)

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
                    self.sink.record_config(self.upstream, outcome.config)
        self.decoder.reset()
        self.interpreter.joined_mid_run()

    def learn_written(self, tail: bytes, modified: float, *, head: bytes = b"", born: float | None = None, opened: float | None = None) -> str | None:
        """Learn the log's zone from its last stamped line (in `tail`, the file's last bytes) and the
        file's modification time — when that line was written, where the file is the server's own:
        born (`born`, None: not known) before its first stamped line (in `head`, its first bytes)
        by at least the span of its lines (intervals/clock.py `copied_because`). The year of its
        stamps is the modification time's either way; `opened`: when serve opened the file
        (LogClock.learn_file). Returns why no zone was learned, if none was."""
        last = _first_stamp(reversed(tail.decode("utf-8", errors="replace").splitlines()))
        if last is None:
            self.clock.year_reference = modified
            why: str | None = "no stamped line near the file's end"
        else:
            why = self.clock.learn_file(_first_stamp(head.decode("utf-8", errors="replace").splitlines()), last, modified, born, opened)
        self.sink.count_read(self.upstream, ReadCounts(zone=self._zone(modified)))
        return None if self.clock.zone is not None and self.clock.zone.how != "assumed" else why

    def _zone(self, at: float | None) -> tuple[str, float | None, str] | None:
        """The zone the clock reads local stamps in, with its offset at `at`, for the source's status."""
        return self.clock.status(at) if self._zoned else None

    def file_replaced(self) -> None:
        """A new file took the path's place: its framing is detected afresh."""
        self.decoder.reset()


def _first_stamp(lines: Iterable[str]) -> str | None:
    """The `MM-DD HH:MM:SS` of the first line with an envelope among `lines`."""
    for raw in lines:
        envelope = parse_envelope(raw) if raw else None
        if envelope is not None and envelope.month_day_time:
            return envelope.month_day_time
    return None


def pipelines_into(
    sink: RecordSink, *, model_name: str | None = None, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, zone: LogZone | None = None,
) -> Callable[..., LogPipeline]:
    """The consumer factory the live sources are given: one pipeline per upstream on the live clock
    (a backlog on the log's own time, the live edge on arrival), in `zone` if forced."""

    def make(upstream: str, *, kind: str, log_format: LogFormat) -> LogPipeline:
        return LogPipeline(
            sink, upstream, log_format=log_format, clock="live", zone=zone, model_name=model_name, max_line_bytes=max_line_bytes,
            source_kind=kind,
            batch=None,  # a catch-up's blocks (the follower reads up to 1 MiB at a time) take the batch path
        )

    return make
