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
from dataclasses import dataclass
from importlib import resources
from typing import IO, Any

from tqdm import tqdm

from exporter.config import DeriveSettings
from exporter.pipeline import LogPipeline
from exporter.report import snapshot_report
from exporter.sources.container import LogFormat
from exporter.store import Store

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
    batch: bool = True  # blocks of lines at once (exporter/intervals/batch.py); False: line by line, as live following


@contextlib.contextmanager
def _open(path: str) -> Iterator[tuple[IO[bytes], IO[bytes], int, float]]:
    """(reader, raw file for progress, size, mtime) for a plain/gzip file or stdin."""
    if path == "-":
        yield sys.stdin.buffer, sys.stdin.buffer, 0, time.time()
        return
    raw = open(path, "rb")  # noqa: SIM115
    try:
        stat = os.fstat(raw.fileno())
        reader: IO[bytes] = gzip.GzipFile(fileobj=raw) if path.endswith(".gz") else raw
        yield reader, raw, stat.st_size, stat.st_mtime
    finally:
        raw.close()


def feed_file(path: str, store: Store, options: AnalyzeOptions) -> None:
    """Push one whole file through a LogPipeline into `store`."""
    with _open(path) as (reader, raw, size, mtime):
        pipeline = LogPipeline(
            store, path, log_format=options.log_format, clock="log", year_reference=mtime, model_name=options.model_name,
            max_line_bytes=options.max_line_bytes, batch=options.batch,
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
    store = Store()
    for path in paths:
        feed_file(path, store, options)
    return snapshot_report(store.snapshot(), settings)
