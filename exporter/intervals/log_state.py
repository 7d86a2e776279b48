"""What one log has said so far: the state its line readers share with the block path.

The readers of a log's lines (from_vllm.py, from_plugin.py, from_sglang.py) and the block path
(batch.py) move on one LogState, so a block read as columns leaves the same state as its lines read
one by one. This is the contract between them; only its public methods change it:
  * the speculative config and served model name from the startup lines (`take_config`, `series`);
  * which engine a V1 spec line belongs to — the `Engine 00N:` line that precedes it from the same
    pid (the spec line itself carries no engine index): `engine_of`, `set_engine`; that stats line's
    load (throughput, running requests) and the running count of the one before it belong to the
    spec line's interval: `set_engine(…, load)`, `take_load`;
  * where each series' last interval ended (the next one's start): `advance`;
  * each line's own time through the clock (`own_time`), and the latest time a year-less stamp
    resolved to (`saw_undated`, which analyze compares with the file's mtime).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from exporter.intervals.clock import UNRESOLVED, LogClock
from exporter.intervals.draft_length import DraftLength, draft_length
from exporter.intervals.writers import WriterWatch
from exporter.parse.timestamps import parse_rfc3339
from exporter.records import EngineLoad, ParseProblem, RawLine, SeriesKey, SpecConfig

UNKNOWN_MODEL = "unknown"
DEFAULT_ENGINE = "0"
KEPT = 65_536  # series ends and pids one log remembers, oldest forgotten first: a log of a million names stays bounded


@dataclass
class LogState:
    upstream: str
    clock: LogClock = field(default_factory=LogClock)  # what time each interval takes (intervals/clock.py)
    model_name: str | None = None  # forces model_name instead of the one found in the log
    config: SpecConfig = field(default_factory=SpecConfig)
    last_undated: float | None = None  # the latest time resolved from a stamp without a year (clock="log")
    unstamped: int = 0  # spec lines timed on arrival for want of a stamp of their own (clock="log": message-only lines)
    _engine_by_pid: dict[int | None, str] = field(default_factory=dict)
    _load_by_pid: dict[int | None, tuple[EngineLoad, int | None]] = field(default_factory=dict)  # not yet taken by a spec line
    _running_by_engine: dict[tuple[int | None, str], int] = field(default_factory=dict)  # each engine's last running count
    _last_end: dict[SeriesKey, float] = field(default_factory=dict)
    _writers: WriterWatch | None = None  # says so when two servers write this log (intervals/writers.py)

    def take_config(self, said: SpecConfig) -> SpecConfig:
        """What a startup line (or the plugin's config record, or V0's k) says, merged into the config."""
        self.config = self.config.merged(said)
        return self.config

    def model(self, printed: str | None = None) -> str:
        """The series' model name: forced, else what the line prints, else what the startup lines said."""
        return self.model_name or printed or self.config.served_model_name or self.config.model or UNKNOWN_MODEL

    def series(self, engine: str) -> SeriesKey:
        """The series of an engine's log intervals under what the log has said so far (model name)."""
        return SeriesKey(upstream=self.upstream, model_name=self.model(), engine=engine, source="log")

    def engine_of(self, pid: int | None) -> str:
        """The engine of the last `Engine NNN:` line of this pid (the default engine before any)."""
        return self._engine_by_pid.get(pid, DEFAULT_ENGINE)

    def set_engine(self, pid: int | None, engine: str, load: EngineLoad | None = None) -> None:
        _keep(self._engine_by_pid, pid, engine)
        if load is not None:
            _keep(self._load_by_pid, pid, (load, self._running_by_engine.get((pid, engine))))
            _keep(self._running_by_engine, (pid, engine), load.running)

    def take_load(self, pid: int | None) -> tuple[EngineLoad, int | None] | None:
        """The load of this pid's stats line since its last spec line, with the running count printed
        before it (the interval's start); None: no stats line came between (each is taken once)."""
        return self._load_by_pid.pop(pid, None)

    def pending_load(self, pid: int | None) -> tuple[EngineLoad, int | None] | None:
        """What take_load would give, left in place (the block path reads it before its own lines)."""
        return self._load_by_pid.get(pid)

    def last_running(self, pid: int | None, engine: str) -> int | None:
        """The running count of this engine's last stats line (written by this pid)."""
        return self._running_by_engine.get((pid, engine))

    def settle_loads(self, pid: int | None, pending: tuple[EngineLoad, int | None] | None, running: dict[str, int]) -> None:
        """Where a block's lines of this pid leave the loads: what set_engine and take_load, line by
        line, would have left (the stats line not yet taken, each engine's last running count)."""
        if pending is None:
            self._load_by_pid.pop(pid, None)
        else:
            _keep(self._load_by_pid, pid, pending)
        for engine, count in running.items():
            _keep(self._running_by_engine, (pid, engine), count)

    def spec_lines_from(self, pids: Iterable[int | None]) -> None:
        """The pids of the spec lines just read, in order, line by line or a block's at once."""
        watch = self.writers
        for pid in pids:
            watch.spec_line_from(pid)

    @property
    def writers(self) -> WriterWatch:
        """Who writes this log (intervals/writers.py): fed each V1 spec line's pid, engine and own time."""
        if self._writers is None:
            self._writers = WriterWatch(self.upstream)
        return self._writers

    def advance(self, key: SeriesKey, end: float) -> float | None:
        """The end of the series' previous interval (its next one's start); `end` is now the last."""
        previous = self._last_end.get(key)
        _keep(self._last_end, key, end)
        return previous

    def saw_undated(self, at: float) -> None:
        """A time was resolved from a year-less stamp (analyze asks whether the mtime dates it)."""
        if self.last_undated is None or at > self.last_undated:
            self.last_undated = at

    def draft_length(self) -> DraftLength:
        """Whether every draft holds k tokens under the config the log has announced so far."""
        return draft_length(self.config.method, self.config.server_version, self.config.variable_drafts)

    def own_time(self, line: RawLine, *, local: str | None = None, dated: str | None = None, exact: float | None = None) -> float | None:
        """The line's own time: the container's stamp (exact), else what the line prints — a plugin
        record's unix time, a dated stamp (JSON asctime, a log store's prefix; its own zone if it
        prints one), vLLM's local `MM-DD HH:MM:SS`, SGLang's local date and time."""
        if line.stream_stamp is not None:
            stamp = self.clock.not_future(parse_rfc3339(line.stream_stamp), line.read_at)
            if stamp is not None:
                self.saw_undated(stamp)
                return stamp
        if exact is not None:
            return self.clock.not_future(exact, line.read_at)  # a plugin record stamped in the future stayed in every window
        if dated is not None:
            return self.clock.not_future(self.clock.dated(dated), line.read_at)
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

    def unresolved(self, line: RawLine, own: float | None) -> ParseProblem | None:
        """serve placed a line whose stamp it could not resolve at its arrival: counted, never silent."""
        return ParseProblem(self.upstream, UNRESOLVED, line.text) if own is None and self.clock.local_known else None


K = TypeVar("K")
V = TypeVar("V")


def _keep(known: dict[K, V], key: K, value: V) -> None:
    """known[key] = value, the newest last; beyond KEPT entries the oldest is forgotten."""
    known.pop(key, None)
    known[key] = value
    if len(known) > KEPT:
        del known[next(iter(known))]
