"""Turn the lines of one log upstream into Interval records: which reader each line goes to.

A log's lines are read by what they are: vLLM's spec lines, text or JSON (from_vllm.py, with V0's
cumulative counts turned into deltas by v0_deltas.py), our vLLM plugin's records (from_plugin.py),
SGLang's decode lines (from_sglang.py), and the startup, engine and banner lines that say what the
others belong to. What a single line cannot tell is kept per upstream in one LogState
(log_state.py), which the block path (batch.py) moves on too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from exporter.intervals.from_plugin import read_plugin_record
from exporter.intervals.from_sglang import read_sglang_decode
from exporter.intervals.from_vllm import VllmSpecReader
from exporter.intervals.log_state import LogState
from exporter.intervals.outcome import NOTHING, LineOutcome, refused
from exporter.parse.envelope import parse_bare, parse_envelope, split_records, strip_ansi
from exporter.parse.json_log import looks_like_json_record
from exporter.parse.scan import might_matter
from exporter.parse.sglang_log import parse_sglang_decode
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
from exporter.records import LogEnvelope, ParseProblem, RawLine, SpecConfig


@dataclass
class LogInterpreter(LogState):
    """Stateful line → Interval conversion for one upstream (one log path or stdin): `feed` sends each
    line to its reader; the state they share (LogState) is also what the block path moves on."""

    _spec: VllmSpecReader = field(init=False)

    def __post_init__(self) -> None:
        self._spec = VllmSpecReader(self)

    @property
    def restarts(self) -> int:
        """V0 server restarts seen without startup lines (counts that fell)."""
        return self._spec.v0.restarts

    def joined_mid_run(self) -> None:
        """Reading starts inside a running server's log: V0's next lines are baselines (v0_deltas.py)."""
        self._spec.v0.joined_mid_run()

    def feed(self, line: RawLine) -> LineOutcome:
        """The line's records, from the reader of what it is (a plugin record, collapsed records, SGLang, vLLM)."""
        text = line.text
        if not might_matter(text):
            return NOTHING
        if text.startswith(PLUGIN_RECORD):
            return read_plugin_record(self, line)
        records = split_records(text) if not looks_like_json_record(text) else None
        if records is not None:
            return self._collapsed(line, records)
        envelope = parse_envelope(text)
        if envelope is None:
            try:
                sglang = parse_sglang_decode(text) if "Decode batch" in text else None
            except SpecLineError as error:
                return refused(self.upstream, line, error.reason)
            if sglang is not None:
                return read_sglang_decode(self, line, sglang)
            envelope = parse_bare(text)
            if envelope is None:
                return self._unenveloped(line)
        return self._enveloped(line, envelope)

    def _enveloped(self, line: RawLine, envelope: LogEnvelope) -> LineOutcome:
        """A vLLM line (its envelope taken off): a spec line, an engine marker, a seen line, a startup line."""
        message = envelope.message
        try:
            parsed = parse_spec_message(message)
        except SpecLineError as error:
            return refused(self.upstream, line, error.reason)
        if parsed is not None:
            return self._spec.read(line, envelope.pid, envelope.month_day_time, parsed, envelope.dated)
        marker = parse_engine_marker(message)
        if marker is not None:
            self.set_engine(envelope.pid, marker.engine, marker.load)
            return NOTHING
        seen = seen_line(message)
        if seen is not None:
            return LineOutcome(variant=seen)  # counted as seen; not a spec line, never a series
        config = parse_config_message(message)
        return self._configured(config) if config is not None else NOTHING

    def _unenveloped(self, line: RawLine) -> LineOutcome:
        """A line with no envelope, bare or not: a spec line it cannot read, a version banner, or nothing."""
        text = line.text
        if looks_like_json_record(text) and any(marker in text for marker in SPEC_MARKERS):
            # a JSON record that does not parse: cut short, or some other JSON
            return refused(self.upstream, line, TRUNCATED if not text.rstrip().endswith("}") else "unknown_layout")
        if any(marker in text for marker in SPEC_MARKERS):
            return refused(self.upstream, line, "unknown_layout")
        banner = parse_version_banner(strip_ansi(text), bare=True)
        return self._configured(SpecConfig(server_version=banner)) if banner else NOTHING

    def _configured(self, config: SpecConfig) -> LineOutcome:
        """Take what a startup line says. A startup line means a server (re)start: V0's cumulative
        counts begin again at zero, so the next V0 line counts from zero."""
        merged = self.take_config(config)
        self._spec.v0.server_started()
        return LineOutcome(config=merged)

    def _collapsed(self, line: RawLine, records: list[str]) -> LineOutcome:
        """A physical line holding several records (the newlines were lost): each is read, and the
        line counts as a `collapsed_records` problem so the damage to the log stays visible."""
        outcomes = tuple(self.feed(RawLine(line.upstream, record, line.read_at, line.stream_stamp)) for record in records)
        if not any(outcome.spec_line for outcome in outcomes):
            return LineOutcome(records=outcomes)  # startup or engine lines run together: read, nothing lost to count
        return LineOutcome(problem=ParseProblem(self.upstream, "collapsed_records", line.text), records=outcomes)
