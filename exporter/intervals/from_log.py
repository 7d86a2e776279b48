"""Turn the lines of one log upstream into Interval records.

Our vLLM plugin's JSON records (exporter/plugin/records.py) arrive the same way, as lines of a
followed file, and become exact Intervals of source "plugin".

What a single line cannot tell, this keeps per upstream:
  * which engine a V1 spec line belongs to — the `Engine 00N:` line that precedes it from the same
    pid (the spec line itself carries no engine index);
  * V0 counts are cumulative since the server started — intervals are deltas between consecutive
    lines; a drop means a restart and starts a new baseline (never a negative or a spike);
  * the speculative config and served model name from the startup lines.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace

from exporter.intervals.clock import UNRESOLVED, LogClock
from exporter.intervals.draft_length import DraftLength, draft_length, drafts_from_tokens
from exporter.intervals.reconstruct import reconstruct
from exporter.intervals.writers import WriterWatch
from exporter.parse.envelope import parse_bare, parse_envelope, split_records, strip_ansi
from exporter.parse.json_log import looks_like_json_record
from exporter.parse.scan import might_matter
from exporter.parse.sglang_log import SglangDecodeLine, parse_sglang_decode
from exporter.parse.timestamps import parse_rfc3339
from exporter.parse.vllm_log import (
    SPEC_MARKERS,
    TRUNCATED,
    SpecLineError,
    parse_config_message,
    parse_engine_marker,
    parse_spec_message,
    parse_version_banner,
    seen_line,
)
from exporter.plugin.records import MARKER_TEXT as PLUGIN_RECORD
from exporter.plugin.records import VERSION as PLUGIN_RECORD_VERSION
from exporter.plugin.records import PluginConfig, RecordError
from exporter.plugin.records import decode as decode_plugin_record
from exporter.records import Interval, ParsedSpecLine, ParseProblem, RawLine, RecordSink, SampledValues, SeriesKey, SpecConfig

UNKNOWN_MODEL = "unknown"
PLUGIN_VARIANT = f"plugin-v{PLUGIN_RECORD_VERSION}"  # the `format` label of plugin records
DEFAULT_ENGINE = "0"
RATE_TOLERANCE_PERCENT = 0.05 + 1e-6  # V1 prints α with one decimal


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


_NOTHING = LineOutcome()


@dataclass
class LogInterpreter:
    """Stateful line → Interval conversion for one upstream (one log path or stdin)."""

    upstream: str
    clock: LogClock = field(default_factory=LogClock)  # what time each interval takes (intervals/clock.py)
    model_name: str | None = None  # forces model_name instead of the one found in the log
    config: SpecConfig = field(default_factory=SpecConfig)
    _engine_by_pid: dict[int | None, str] = field(default_factory=dict)
    _v0_baseline: dict[int | None, ParsedSpecLine] = field(default_factory=dict)  # the last V0 line of each process in this run
    _v0_joined: bool = False  # see joined_mid_run
    _last_end: dict[SeriesKey, float] = field(default_factory=dict)
    restarts: int = 0
    last_undated: float | None = None  # the latest time resolved from a stamp without a year (clock="log")
    unstamped: int = 0  # spec lines timed on arrival for want of a stamp of their own (clock="log": message-only lines)
    _writers: WriterWatch | None = None  # says so when two servers write this log (intervals/writers.py)

    def feed(self, line: RawLine) -> LineOutcome:
        text = line.text
        if not might_matter(text):
            return _NOTHING
        if text.startswith(PLUGIN_RECORD):
            return self._plugin(line)
        records = split_records(text) if not looks_like_json_record(text) else None
        if records is not None:
            return self._collapsed(line, records)
        envelope = parse_envelope(text)
        if envelope is None:
            sglang = parse_sglang_decode(text) if "Decode batch" in text else None
            if sglang is not None:
                return self._sglang(line, sglang)
            envelope = parse_bare(text)
            if envelope is None:
                if looks_like_json_record(text) and any(marker in text for marker in SPEC_MARKERS):
                    # a JSON record that does not parse: cut short, or some other JSON
                    reason = TRUNCATED if not text.rstrip().endswith("}") else "unknown_layout"
                    return self._problem(line, reason, spec_line=True)
                if any(marker in text for marker in SPEC_MARKERS):
                    return self._problem(line, "unknown_layout", spec_line=True)
                banner = parse_version_banner(strip_ansi(text))
                return self._configured(SpecConfig(server_version=banner)) if banner else _NOTHING
        message = envelope.message
        try:
            parsed = parse_spec_message(message)
        except SpecLineError as error:
            return self._problem(line, error.reason, spec_line=True)
        if parsed is not None:
            return self._spec(line, envelope.pid, envelope.month_day_time, parsed, envelope.dated)
        marker = parse_engine_marker(message)
        if marker is not None:
            self._engine_by_pid[envelope.pid] = marker.engine
            return _NOTHING
        seen = seen_line(message)
        if seen is not None:
            return LineOutcome(variant=seen)  # counted as seen; not a spec line, never a series
        config = parse_config_message(message)
        if config is not None:
            return self._configured(config)
        return _NOTHING

    def _configured(self, config: SpecConfig) -> LineOutcome:
        """Take what a startup line says. A startup line means a server (re)start: V0's cumulative
        counts begin again at zero, so the next V0 line counts from zero."""
        self.config = self.config.merged(config)
        self._v0_baseline.clear()
        self._v0_joined = False
        return LineOutcome(config=self.config)

    def joined_mid_run(self) -> None:
        """Reading starts inside a running server's log (its end, or a saved position): the first V0
        line of each process is only a baseline, since what it counts was counted before (or never)."""
        self._v0_baseline.clear()
        self._v0_joined = True

    def _collapsed(self, line: RawLine, records: list[str]) -> LineOutcome:
        """A physical line holding several records (the newlines were lost): each is read, and the
        line counts as a `collapsed_records` problem so the damage to the log stays visible."""
        outcomes = tuple(self.feed(RawLine(line.upstream, record, line.read_at, line.stream_stamp)) for record in records)
        if not any(outcome.spec_line for outcome in outcomes):
            return LineOutcome(records=outcomes)  # startup or engine lines run together: read, nothing lost to count
        return LineOutcome(problem=ParseProblem(self.upstream, "collapsed_records", line.text), records=outcomes)

    # --- helpers -----------------------------------------------------------------------------

    def _plugin(self, line: RawLine) -> LineOutcome:
        """A record of our vLLM plugin: exact counts, nothing to reconstruct."""
        try:
            record = decode_plugin_record(line.text)
        except RecordError as error:
            return self._problem(line, error.reason, spec_line=True)
        if isinstance(record, PluginConfig):
            self.config = self.config.merged(
                SpecConfig(
                    method=record.method, num_speculative_tokens=record.num_speculative_tokens, draft_model=record.draft_model,
                    server_version=record.vllm_version, served_model_name=record.model_name, model=record.model,
                )
            )
            return LineOutcome(config=self.config)
        if record is None:
            return _NOTHING  # a record kind from a newer plugin: skipped, not an error
        model = self.model_name or record.model_name or self.config.served_model_name or self.config.model or UNKNOWN_MODEL
        own = self._own_time(line, exact=record.end)
        end = self.clock.place(own, line.read_at)
        if end is None:
            return self._problem(line, UNRESOLVED, spec_line=True)
        # the record's start moves with its end: an interval keeps the length vLLM measured
        interval = Interval(
            key=SeriesKey(upstream=self.upstream, model_name=model, engine=record.engine, source="plugin"),
            end=end,
            start=record.start + (end - record.end),
            seconds=record.end - record.start,
            logged_at=own,
            draft_tokens=record.draft_tokens,
            accepted_tokens=record.accepted_tokens,
            drafts=record.drafts,
            accepted_per_position=record.accepted_per_position,
            draft_tokens_per_position=record.draft_tokens_per_position,
            k=self.config.num_speculative_tokens or len(record.accepted_per_position) or None,
            drafts_range=(record.drafts, record.drafts),
            variant=PLUGIN_VARIANT,
        )
        return LineOutcome(interval=interval, spec_line=True, variant=PLUGIN_VARIANT)

    def _unresolved(self, line: RawLine, own: float | None) -> ParseProblem | None:
        """serve placed a line whose stamp it could not resolve at its arrival: counted, never silent."""
        return ParseProblem(self.upstream, UNRESOLVED, line.text) if own is None and self.clock.local_known else None

    def _problem(self, line: RawLine, reason: str, *, spec_line: bool) -> LineOutcome:
        return LineOutcome(problem=ParseProblem(self.upstream, reason, line.text), spec_line=spec_line)

    # --- what the batch path (batch.py) reads and moves on, so both paths share one state ---------

    def series(self, engine: str) -> SeriesKey:
        """The series of an engine's log intervals under what the log has said so far (model name)."""
        model = self.model_name or self.config.served_model_name or self.config.model or UNKNOWN_MODEL
        return SeriesKey(upstream=self.upstream, model_name=model, engine=engine, source="log")

    def engine_of(self, pid: int | None) -> str:
        """The engine of the last `Engine NNN:` line of this pid (the default engine before any)."""
        return self._engine_by_pid.get(pid, DEFAULT_ENGINE)

    def set_engine(self, pid: int | None, engine: str) -> None:
        self._engine_by_pid[pid] = engine

    def advance(self, key: SeriesKey, end: float) -> float | None:
        """The end of the series' previous interval (its next one's start); `end` is now the last."""
        previous = self._last_end.get(key)
        self._last_end[key] = end
        return previous

    def saw_undated(self, at: float) -> None:
        """A time was resolved from a year-less stamp (analyze asks whether the mtime dates it)."""
        if self.last_undated is None or at > self.last_undated:
            self.last_undated = at

    def draft_length(self) -> DraftLength:
        """Whether every draft holds k tokens under the config the log has announced so far."""
        return draft_length(self.config.method, self.config.server_version, self.config.variable_drafts)

    def _own_time(self, line: RawLine, *, local: str | None = None, dated: str | None = None, exact: float | None = None) -> float | None:
        """The line's own time: the container's stamp (exact), else what the line prints — a plugin
        record's unix time, a dated stamp (JSON asctime, a log store's prefix; its own zone if it
        prints one), vLLM's local `MM-DD HH:MM:SS`, SGLang's local date and time."""
        if line.stream_stamp is not None:
            stamp = parse_rfc3339(line.stream_stamp)
            if stamp is not None:
                self.saw_undated(stamp)
                return stamp
        if exact is not None:
            return exact
        if dated is not None:
            return self.clock.dated(dated)
        if local is None:
            return None
        if not local:  # a message-only line with no stamp at all: its arrival is all there is (the report says so)
            self.unstamped += 1
            return line.read_at
        self.clock.learn_live(local, line.read_at)  # no file told its zone: a live line against its arrival
        stamp = self.clock.local(local, line.read_at)
        if stamp is not None:
            self.saw_undated(stamp)
        return stamp

    def _spec(self, line: RawLine, pid: int | None, month_day_time: str, parsed: ParsedSpecLine, dated: str | None = None) -> LineOutcome:
        drafts: int | None
        k: int | None
        drafts_range: tuple[int, int] | None
        emitted: int | None = None
        config: SpecConfig | None = None
        new_run = False
        if self._writers is None:
            self._writers = WriterWatch(self.upstream)
        self._writers.spec_line_from(pid)
        if parsed.cumulative:
            if parsed.accepted_tokens > parsed.draft_tokens:  # V0's totals: more accepted than ever drafted
                return self._problem(line, "inconsistent_counts", spec_line=True)
            k_printed = parsed.num_speculative_tokens
            if k_printed and k_printed != self.config.num_speculative_tokens:
                # V0 prints k on every line: another k is another server run, with its own reference
                self.config = config = self.config.merged(SpecConfig(num_speculative_tokens=k_printed))
            counts = self._v0_delta(pid, parsed)
            if counts is None:
                return LineOutcome(config=config, spec_line=True, variant=parsed.variant)
            if isinstance(counts, str):
                return replace(self._problem(line, counts, spec_line=True), config=config)
            key, (draft_tokens, accepted, drafts, k, emitted, new_run) = self.series(DEFAULT_ENGINE), counts
            positions: tuple[int, ...] = ()  # V0 never prints them: reported as null
            drafts_range = (drafts, drafts)
        else:
            if parsed.draft_tokens == 0:  # a `nan%` line: nothing was drafted
                return LineOutcome(spec_line=True, variant=parsed.variant)
            if parsed.accepted_tokens > parsed.draft_tokens or self._rate_disagrees(parsed):
                return self._problem(line, "inconsistent_counts", spec_line=True)
            key = self.series(self._engine_by_pid.get(pid, DEFAULT_ENGINE))
            draft_tokens, accepted = parsed.draft_tokens, parsed.accepted_tokens
            rates = parsed.position_rates
            k = (len(rates) if rates else None) or self.config.num_speculative_tokens
            rebuilt = reconstruct(accepted, draft_tokens, parsed.mean_acceptance_length, rates)
            if rebuilt is None and (rates or parsed.mean_acceptance_length is not None):
                return self._problem(line, "reconstruction_failed", spec_line=True)
            pinned = drafts_from_tokens(draft_tokens, k, self.draft_length())
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
        own = self._own_time(line, local=month_day_time, dated=dated)
        end = self.clock.place(own, line.read_at)
        if end is None:
            return self._problem(line, UNRESOLVED, spec_line=True)
        start = None if new_run else self._last_end.get(key)  # a V0 run's first line counts from the server's start
        interval = Interval(
            key=key,
            end=end,
            start=start,
            seconds=self._seconds(parsed, accepted, end, start),
            draft_tokens=draft_tokens,
            accepted_tokens=accepted,
            drafts=drafts,
            accepted_per_position=positions,
            k=k or self.config.num_speculative_tokens,
            drafts_range=drafts_range,
            variant=parsed.variant,
            emitted_tokens=emitted,
            logged_at=own,
        )
        self._last_end[key] = end
        return LineOutcome(interval=interval, config=config, spec_line=True, variant=parsed.variant, problem=self._unresolved(line, own))

    def _sglang(self, line: RawLine, parsed: SglangDecodeLine) -> LineOutcome:
        own = self._own_time(line, dated=parsed.time)
        at = self.clock.place(own, line.read_at)
        if at is None:
            return self._problem(line, UNRESOLVED, spec_line=True)
        values = [("mean_acceptance_length", parsed.mean_acceptance_length)]
        if parsed.draft_acceptance_ratio is not None:
            values.append(("draft_acceptance_ratio", parsed.draft_acceptance_ratio))
        sample = SampledValues(key=self.series(parsed.engine), at=at, values=tuple(values), variant=parsed.variant)
        return LineOutcome(sample=sample, spec_line=True, variant=parsed.variant, problem=self._unresolved(line, own))

    def _seconds(self, parsed: ParsedSpecLine, accepted: int, end: float, start: float | None) -> float | None:
        """The interval's length: vLLM's own (A / accepted throughput) when printed, else line spacing."""
        throughput = parsed.accepted_throughput
        if throughput is not None and 0 < throughput < math.inf and accepted > 0 and not parsed.cumulative:
            return accepted / throughput
        if start is not None and end > start:
            return end - start
        return None

    @staticmethod
    def _rate_disagrees(parsed: ParsedSpecLine) -> bool:
        printed = parsed.draft_acceptance_percent
        if printed is None or printed != printed:  # absent or nan
            return False
        return abs(100.0 * parsed.accepted_tokens / parsed.draft_tokens - printed) > RATE_TOLERANCE_PERCENT

    def _v0_delta(self, pid: int | None, parsed: ParsedSpecLine) -> tuple[int, int, int, int, int, bool] | str | None:
        """(T, A, D, k, E, first of its run) since the previous cumulative line of this process in the
        same run, None when nothing was drafted since, or a problem's reason.

        V0's counts are totals since the server started, so the first line of a run (after a startup
        line, or the first of a file read from its start) is a result, not only a baseline; counts
        that drop, or another k, mean the server restarted without its startup lines in the log:
        the line counts from zero again. V0 judges every drafted position, so its A counts accepted
        tokens after a rejection too: A is reported as logged (A/T is the rate V0 prints), D = T/k
        (V0 asserts T is a multiple of k, spec_decode/metrics.py in 0.6.3) and L = E/D with the
        emitted tokens E, at least one per draft.
        """
        joined = self._v0_joined and pid not in self._v0_baseline
        previous = self._v0_baseline.get(pid)
        self._v0_baseline[pid] = parsed
        k = parsed.num_speculative_tokens or 0
        if joined:
            return None  # joined mid-run: what this line counts was counted before, or never
        now = (parsed.draft_tokens, parsed.emitted_tokens or 0, parsed.accepted_tokens)
        before = (0, 0, 0) if previous is None else (previous.draft_tokens, previous.emitted_tokens or 0, previous.accepted_tokens)
        new_run = previous is None
        if previous is not None and (any(n < b for n, b in zip(now, before, strict=True)) or previous.num_speculative_tokens != parsed.num_speculative_tokens):
            self.restarts += 1
            before, new_run = (0, 0, 0), True  # a restart without startup lines: this line counts from zero
        draft_tokens, emitted, accepted = now[0] - before[0], now[1] - before[1], now[2] - before[2]
        if draft_tokens == 0 or k <= 0:
            return None
        drafts = draft_tokens // k  # V0 asserts draft tokens are a multiple of k
        if accepted > draft_tokens or (parsed.emitted_tokens is not None and emitted < drafts):
            return "inconsistent_counts"
        return draft_tokens, accepted, drafts, k, emitted, new_run
