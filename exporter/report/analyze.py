"""`analyze`: the live pipeline in one-shot mode over whole log files, then a report.

Files are read in 1 MiB binary chunks (gzip by extension), so memory stays constant on any file
size; a progress bar shows on a TTY. Each PATH is its own upstream. Log timestamps carry no
year: it comes from each file's modification time.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from typing import IO, Any, cast

from tqdm import tqdm

from exporter.config import DeriveSettings, LogFormat, parse_duration
from exporter.intervals.pipeline import LogPipeline
from exporter.judge.memory import health_memory
from exporter.judge.status import snapshot_report
from exporter.state.reference import ReferenceRule
from exporter.state.store import Store

CHUNK = 1 << 20
SAMPLE_NAME = "vllm-0.24.0-draft_model-noisy-k8.log"


def sample_log_path() -> str:
    """The real vLLM 0.24.0 log shipped with the package (the built-in default for `analyze`)."""
    return str(resources.files("exporter") / "samples" / SAMPLE_NAME)


@dataclass(frozen=True)
class AnalyzeOptions:
    log_format: LogFormat = "auto"
    model_name: str | None = None
    max_line_bytes: int = 1 << 20
    progress: bool | None = None  # None: only on a TTY
    reference: ReferenceRule = field(default_factory=ReferenceRule)  # the verdict's memory, run on the log's own clock


@contextlib.contextmanager
def _open(path: str) -> Iterator[tuple[IO[bytes], IO[bytes], int, float]]:
    """(reader, raw file for progress, size, mtime) for a plain/gzip file or stdin."""
    if path == "-":
        yield sys.stdin.buffer, sys.stdin.buffer, 0, time.time()
        return
    raw = open(path, "rb")  # noqa: SIM115
    try:
        stat = os.fstat(raw.fileno())
        reader = cast(IO[bytes], gzip.GzipFile(fileobj=raw)) if path.endswith(".gz") else raw
        yield reader, raw, stat.st_size, stat.st_mtime
    finally:
        raw.close()


def feed_file(path: str, store: Store, options: AnalyzeOptions) -> None:
    """Push one whole file through a LogPipeline into `store`."""
    with _open(path) as (reader, raw, size, mtime):
        pipeline = LogPipeline(
            store, path, log_format=options.log_format, clock="log", year_reference=mtime, model_name=options.model_name,
            max_line_bytes=options.max_line_bytes,
        )
        read_at = time.time()
        with tqdm(
            total=size or None, unit="B", unit_scale=True, desc=os.path.basename(path), file=sys.stderr,
            disable=(not options.progress) if options.progress is not None else None, leave=False,
        ) as bar:
            position = 0
            while chunk := reader.read(CHUNK):
                pipeline.consume_bytes(chunk, read_at)
                if size:  # progress in bytes of the file on disk (compressed, for gzip)
                    now = raw.tell()
                    bar.update(now - position)
                    position = now
            pipeline.finish(read_at)
        store.update_source(path, lambda stats: setattr(stats, "up", True))


def analyze(paths: list[str], settings: DeriveSettings, options: AnalyzeOptions) -> dict[str, Any]:
    """Read every path and return the report (the `--format json` document)."""
    store = Store(health=health_memory(settings, options.reference, parse_duration(settings.health_window)))
    for path in paths:
        feed_file(path, store, options)
    return snapshot_report(store.snapshot(), settings)
