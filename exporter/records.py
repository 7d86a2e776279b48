"""Typed, immutable records passed between the stages of the data path.

source → RawLine → parse → ParsedSpecLine / EngineMarker / SpecConfig → Interval → windows → derive
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class RawLine:
    """One physical log line, container framing already removed."""

    upstream: str  # the log path (or "-" for stdin) the line came from
    text: str
    read_at: float  # unix time the sidecar read it
    stream_stamp: str | None = None  # RFC 3339 time from container framing (docker/CRI), when present


@dataclass(frozen=True, slots=True)
class LogEnvelope:
    """The parts of a vLLM log line before the message."""

    process: str | None  # e.g. "APIServer", "EngineCore_DP0"
    pid: int | None
    level: str
    month_day_time: str  # "MM-DD HH:MM:SS" as printed: no year, no zone
    source_file: str  # "metrics.py", or a repo-relative path in DEBUG mode
    message: str
    dated: str | None = None  # ISO 8601 with the year (local time unless it has a zone): JSON asctime, a log store's stamp


@dataclass(frozen=True, slots=True)
class ParsedSpecLine:
    """The numbers one spec-decode log line prints, exactly as printed (nothing derived yet)."""

    variant: str  # "V0-a", "V0-b", "V1-a" … "V1-e"
    accepted_tokens: int  # A (V0: cumulative, *non-prefix* count as vLLM V0 defines it)
    draft_tokens: int  # T (V0: cumulative)
    cumulative: bool  # V0 counts are cumulative since start; V1 counts are per interval
    mean_acceptance_length: float | None = None  # M, printed with 2 decimals (V1-c…e)
    position_rates: tuple[float, ...] | None = None  # r_i, printed with 3 decimals (V1-c…e)
    draft_acceptance_percent: float | None = None  # printed α (consistency check only)
    num_speculative_tokens: int | None = None  # k, printed by V0 only
    emitted_tokens: int | None = None  # V0 only, cumulative
    accepted_throughput: float | None = None  # tokens/s since the previous printed line (V1-d/e)


@dataclass(frozen=True, slots=True)
class EngineLoad:
    """The load a stats line prints (`Avg prompt throughput: … Running: N reqs, Waiting: M reqs`):
    throughputs over the interval since the engine's last stats line, the request counts at its end."""

    prompt_throughput: float  # tokens/s
    generation_throughput: float  # tokens/s: every token the engine emitted, accepted drafts included
    running: int
    waiting: int


@dataclass(frozen=True, slots=True)
class EngineMarker:
    """An `Engine 00N:` (or `N Engines Aggregated:`) line: the next spec line of this pid is its.
    A stats line also carries the engine's load over the interval that spec line counts."""

    engine: str
    load: EngineLoad | None = None


@dataclass(frozen=True, slots=True)
class SpecConfig:
    """The speculative config a server announced at startup; any field may be unknown."""

    method: str | None = None
    num_speculative_tokens: int | None = None
    draft_model: str | None = None
    server_version: str | None = None
    served_model_name: str | None = None
    model: str | None = None
    # why drafts may be shorter than k whatever the method: dynamic k, dspark adaptive
    # verification, n-gram on the V1 model runner (docs/vllm-versions.md §6)
    variable_drafts: str | None = None

    def merged(self, newer: SpecConfig) -> SpecConfig:
        """Fields of `newer` that are known win; unknown ones keep what we had."""
        return SpecConfig(
            **{
                name: getattr(newer, name) if getattr(newer, name) is not None else getattr(self, name)
                for name in self.__dataclass_fields__
            }
        )


@dataclass(frozen=True, slots=True)
class SeriesKey:
    """What one series is: one server's model and engine, seen through one source."""

    upstream: str
    model_name: str
    engine: str
    source: str  # "log" | "metrics" | "plugin"


@dataclass(frozen=True, slots=True)
class Interval:
    """What one series did over one interval: the common currency of the stages (docs/architecture.md).

    `drafts` (D) and `accepted_per_position` (A_i) are reconstructed for log sources and may be
    estimates; `drafts_range` bounds the true D. `drafts` is None where no layout lets us know it.
    """

    key: SeriesKey
    end: float  # unix time: the line's own time while catching up, its arrival at the live edge (intervals/clock.py)
    draft_tokens: int  # T
    accepted_tokens: int  # A (accepted prefix tokens, as vLLM V1 counts them)
    drafts: int | None  # D
    accepted_per_position: tuple[int, ...] = ()  # A_i, i = 0..k-1
    k: int | None = None
    drafts_range: tuple[int, int] | None = None  # [D_lo, D_hi] that the printed numbers allow
    variant: str = ""
    start: float | None = None
    seconds: float | None = None  # how long the interval lasted, as the server measured it when printed
    draft_tokens_per_position: tuple[int, ...] = ()  # T_i, known only from the plugin's records
    emitted_tokens: int | None = None  # E, printed by V0 only: there A counts non-prefix acceptances, so L = E/D
    logged_at: float | None = None  # the line's own time (container stamp, vLLM's local stamp in the log's zone, plugin record); None: unknown
    # the server's load over the interval (its stats line, or the scrape's gauges and counters); None: not printed
    running: int | None = None  # requests running at the interval's end
    running_before: int | None = None  # … at its start (the engine's previous stats line): equal bands = a steady load
    generation_throughput: float | None = None  # tokens/s the engine emitted over the interval, plain and accepted alike


@dataclass(frozen=True, slots=True)
class SampledValues:
    """Values a server reports as snapshots of its last batch window (SGLang gauges and log lines,
    vLLM V0 gauges): not counts, so never summed into windows — exported as sampled, as they are."""

    key: SeriesKey
    at: float
    values: tuple[tuple[str, float], ...]  # (name, value): mean_acceptance_length, draft_acceptance_ratio, …
    variant: str = ""


@dataclass(frozen=True, slots=True)
class ParseProblem:
    """A line that looked like a spec-decode line but could not be used."""

    upstream: str
    reason: str
    text: str = field(repr=False, default="")


@dataclass(frozen=True, slots=True)
class SourceHealth:
    """Whether one upstream can be read: what its source (sources/) last said, posted whole.

    Only the source that reads an upstream writes this (a HealthBoard's `post_health`); what the
    lines or bodies it read contained is the interval stage's ReadCounts."""

    up: bool = False
    rotations: int = 0  # a followed file's
    truncations: int = 0
    too_long: int = 0  # lines over the cap dropped, by the source's line buffers and its consumer's, since start
    failures: Mapping[str, int] = field(default_factory=dict)  # scrapes that failed, by reason, since start
    last_error: str | None = None
    scrape_duration: float | None = None
    extra_labels: Mapping[str, str] = field(default_factory=dict)  # from a file_sd targets file


@dataclass(frozen=True, slots=True)
class ReadCounts:
    """What the interval stage made of one read of an upstream (a block of lines, one scraped body):
    added to the upstream's counts by the store (a RecordSink's `count_read`), nowhere else."""

    lines: int = 0
    spec_lines: int = 0
    problems: Mapping[str, int] = field(default_factory=dict)
    variants: Mapping[str, int] = field(default_factory=dict)
    read_at: float | None = None  # when it was read (None: nothing was, e.g. only the zone is told)
    logged: float | None = None  # the own time of its last interval; None: none known
    restarts: int | None = None  # server restarts seen so far (a log's startups, a scrape's counter resets)
    zone: tuple[str, float | None, str] | None = None  # the zone a log's local stamps are read in, its offset, whence


class HealthBoard(Protocol):
    """Where a source posts the health of its upstreams (the store, wired up by the CLI)."""

    def post_health(self, upstream: str, health: SourceHealth, kind: str = "log") -> None: ...

    def forget(self, upstream: str) -> None: ...


class RecordSink(Protocol):
    """Where the interval stage hands its records: the store, which an earlier stage never imports."""

    def record_interval(self, interval: Interval) -> None: ...

    def record_sample(self, sample: SampledValues) -> None: ...

    def record_config(self, upstream: str, config: SpecConfig) -> None: ...

    def count_read(self, upstream: str, counts: ReadCounts, kind: str = "log") -> None: ...
