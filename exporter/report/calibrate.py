"""`specdecode-exporter calibrate`: how fast this server decodes without speculation, by load, from
a plain run's (or a plain replica's) own log — the other half of the pay-off estimate
(judge/payoff.py), which a speculating server cannot tell about itself.

The log goes through the same pipeline as `analyze` (container framing, JSON records, colour,
prefixes); what is kept is each engine's stats lines (`Engine NNN: Avg prompt throughput: …,
Avg generation throughput: … tokens/s, Running: N reqs, …`): the running count before and after
each interval and the tokens per second over it. A log that speculates is refused: its steps
draft and verify, which is what the calibration must not contain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from exporter.config import LogFormat, PlainCalibration
from exporter.intervals.from_log import LogInterpreter
from exporter.intervals.pipeline import LogPipeline
from exporter.judge.calibration import CalibrationError, plain_points
from exporter.records import EngineLoad, Interval, ReadCounts, SampledValues, SpecConfig
from exporter.report.analyze import CHUNK, open_log

MIN_POINTS = 2  # a curve needs two loads at least; a ladder gives nine


@dataclass
class _Recorder(LogInterpreter):
    """The interpreter, keeping every stats line's load per (pid, engine) as it goes by."""

    samples: dict[tuple[int | None, str], list[tuple[int | None, int, float]]] = field(default_factory=dict)

    def set_engine(self, pid: int | None, engine: str, load: EngineLoad | None = None) -> None:
        if load is not None:
            before = self.last_running(pid, engine)
            self.samples.setdefault((pid, engine), []).append((before, load.running, load.generation_throughput))
        super().set_engine(pid, engine, load)


@dataclass
class _Counts:
    """A RecordSink that only counts what would have been recorded."""

    spec_lines: int = 0
    lines: int = 0
    config: SpecConfig = field(default_factory=SpecConfig)

    def record_interval(self, interval: Interval) -> None:
        pass

    def record_sample(self, sample: SampledValues) -> None:
        pass

    def record_config(self, upstream: str, config: SpecConfig) -> None:
        self.config = self.config.merged(config)

    def count_read(self, upstream: str, counts: ReadCounts, kind: str = "log") -> None:
        self.spec_lines += counts.spec_lines
        self.lines += counts.lines


def calibrate(paths: Sequence[str], log_format: LogFormat = "auto") -> PlainCalibration:
    """The plain-decoding calibration of the logs at `paths` (one server's); CalibrationError says
    why there is none (a log that speculates, no stats lines, too few steady loads)."""
    samples: list[tuple[int | None, int, float]] = []
    counts = _Counts()
    stats_lines = 0
    for path in paths:
        with open_log(path) as (reader, _raw, _size, mtime):
            pipeline = LogPipeline(counts, path, log_format=log_format, clock="log", year_reference=mtime, batch=False)
            recorder = _Recorder(path, clock=pipeline.clock)
            pipeline.interpreter = recorder
            for chunk in iter(lambda: reader.read(CHUNK), b""):
                pipeline.consume_bytes(chunk, 0.0)
            pipeline.finish(0.0)
        for rows in recorder.samples.values():
            stats_lines += len(rows)
            samples += rows
    names = ", ".join(paths)
    if counts.spec_lines:
        raise CalibrationError(
            f"{names}: {counts.spec_lines} spec-decode lines — this server speculates; calibrate needs a plain run's log "
            "(the same model and GPU, started without --speculative-config)"
        )
    if not stats_lines:
        raise CalibrationError(
            f"{names}: no stats lines (`Engine NNN: Avg prompt throughput: … Running: N reqs`); vLLM prints them every "
            "VLLM_LOG_STATS_INTERVAL seconds while it serves, unless --disable-log-stats"
        )
    points = plain_points(samples)
    if len(points) < MIN_POINTS:
        raise CalibrationError(
            f"{names}: {stats_lines} stats lines, steady at {len(points)} load(s); a calibration needs plain decoding at two loads "
            "or more (a ladder of concurrency, e.g. 1, 2, 4 … 256 requests, each held for three stats intervals or more)"
        )
    return PlainCalibration(points, source=names, model=counts.config.served_model_name or counts.config.model,
                            server_version=counts.config.server_version)
