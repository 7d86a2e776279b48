"""`analyze`: the live pipeline in one-shot mode over whole log files, then a report.

Files are read in 4 MiB binary chunks (gzip by extension), so memory stays constant on any file
size; a progress bar shows on a TTY. Each PATH is its own upstream, so several files are read
at once by as many processes as there are cores. Log timestamps carry no year and no zone: the
year comes from each file's modification time, the zone from that time against the file's last
line (intervals/clock.py), unless `--log-timezone` says it; a .gz or stdin is read in the zone
analyze runs in.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import IO, Any, Self, cast

from exporter.config import DeriveSettings, LogFormat, parse_duration
from exporter.intervals.clock import LogZone, year_unknown_reason
from exporter.intervals.pipeline import LogPipeline
from exporter.judge.memory import health_memory
from exporter.judge.status import snapshot_report
from exporter.records import SourceHealth
from exporter.state.reference import ReferenceRule
from exporter.state.snapshot import Snapshot, merged
from exporter.state.store import Store

CHUNK = 4 << 20  # a block per chunk: the batch path pays its fixed cost per block, so blocks are large
SAMPLE_NAME = "vllm-0.24.0-draft_model-noisy-k8.log"


def sample_log_path() -> str:
    """The real vLLM 0.24.0 log shipped with the package (the built-in default for `analyze`)."""
    from importlib import resources  # only here: it costs every analyze's start-up 15 ms (tempfile, shutil)

    return str(resources.files("exporter") / "samples" / SAMPLE_NAME)


@dataclass(frozen=True)
class AnalyzeOptions:
    log_format: LogFormat = "auto"
    model_name: str | None = None
    max_line_bytes: int = 1 << 20
    progress: bool | None = None  # None: only on a TTY
    reference: ReferenceRule = field(default_factory=ReferenceRule)  # the verdict's memory, run on the log's own clock
    batch: bool | None = True  # blocks of lines at once (exporter/intervals/batch.py); False: line by line, as live following
    jobs: int | None = None  # files read in parallel, each by its own process; None: one per core
    zone: LogZone | None = None  # the zone of the logs' local stamps (--log-timezone); None: learned per file


@contextlib.contextmanager
def open_log(path: str) -> Iterator[tuple[IO[bytes], IO[bytes], int, float]]:
    """(reader, raw file for progress, size, mtime) for a plain/gzip file or stdin."""
    if path == "-":
        yield sys.stdin.buffer, sys.stdin.buffer, 0, time.time()
        return
    raw = open(path, "rb")  # noqa: SIM115
    try:
        stat = os.fstat(raw.fileno())
        if path.endswith(".gz"):
            import gzip  # only for .gz files (start-up counts: analyze is compared with grep)

            reader = cast(IO[bytes], gzip.GzipFile(fileobj=raw))
        else:
            reader = raw
        yield reader, raw, stat.st_size, stat.st_mtime
    finally:
        raw.close()


def _read_ahead(reader: IO[bytes], depth: int = 2) -> Iterator[bytes]:
    """Chunks of `reader`, decompressed by a thread while the caller parses the one before: zlib
    lets go of the GIL while it inflates, so a .gz costs about its decompression, not that plus
    the parse. At most `depth` chunks wait, so memory stays flat."""
    chunks: queue.Queue[bytes | BaseException] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            while not stop.is_set():
                chunk = reader.read(CHUNK)
                chunks.put(chunk)
                if not chunk:
                    return
        except BaseException as error:  # handed to the reading thread, which raises it
            chunks.put(error)

    thread = threading.Thread(target=produce, name="analyze-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item = chunks.get()
            if isinstance(item, BaseException):
                raise item
            if not item:
                return
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # let a producer blocked on a full queue finish
            try:
                chunks.get_nowait()
            except queue.Empty:
                thread.join(0.01)


class _NoBar:
    """What feed_file needs of a progress bar, doing nothing."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def update(self, _bytes: int) -> None:
        pass


def _progress_bar(path: str, size: int, options: AnalyzeOptions) -> Any:
    """tqdm on a TTY (or when asked); otherwise nothing, and tqdm is not even imported (startup time)."""
    if not (options.progress if options.progress is not None else sys.stderr.isatty()):
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=size or None, unit="B", unit_scale=True, desc=os.path.basename(path), file=sys.stderr, leave=False)


def feed_file(path: str, store: Store, options: AnalyzeOptions) -> tuple[str, bool] | None:
    """Push one whole file through a LogPipeline into `store`; why its dates are not known, if they are not
    (and whether the year is what is missing)."""
    with open_log(path) as (reader, raw, size, mtime):
        pipeline = LogPipeline(
            store, path, log_format=options.log_format, clock="log", year_reference=mtime, zone=options.zone, model_name=options.model_name,
            max_line_bytes=options.max_line_bytes, batch=options.batch,
        )
        if reader is raw and path != "-":
            pipeline.learn_written(_tail(raw, size), mtime)
        read_at = time.time()
        with _progress_bar(path, size, options) as bar:
            position = 0
            for chunk in _read_ahead(reader) if path.endswith(".gz") else iter(lambda: reader.read(CHUNK), b""):
                pipeline.consume_bytes(chunk, read_at)
                if size:  # progress in bytes of the file on disk (compressed, for gzip)
                    now = raw.tell()
                    bar.update(now - position)
                    position = now
            pipeline.finish(read_at)
        store.post_health(path, SourceHealth(up=True, too_long=pipeline.too_long))  # analyze is this file's source
    interpreter = pipeline.interpreter
    if interpreter.unstamped:
        return f"{interpreter.unstamped} spec lines carry no time stamp (message-only lines): their times are when they were read", True
    what = "the time it is read" if path == "-" else "the file's modification time"
    reason = None if interpreter.last_undated is None else year_unknown_reason(interpreter.last_undated, mtime, what)
    return None if reason is None else (reason, False)


TAIL_BYTES = 64 << 10  # where the last stamped line of a file is looked for


def _tail(raw: IO[bytes], size: int) -> bytes:
    """The file's last bytes (its last whole lines), the read position left at the start."""
    raw.seek(max(0, size - TAIL_BYTES))
    tail = raw.read(TAIL_BYTES)
    raw.seek(0)
    return tail if size <= TAIL_BYTES else tail.split(b"\n", 1)[-1]


def analyze(paths: list[str], settings: DeriveSettings, options: AnalyzeOptions) -> dict[str, Any]:
    """Read every path and return the report (the `--format json` document)."""
    jobs = min(options.jobs or os.cpu_count() or 1, len(paths))
    if jobs <= 1 or "-" in paths:
        snapshot, years = _read((paths, settings, options))
        return _mark_years(snapshot_report(snapshot, settings), years)
    # each file is its own upstream, so files share nothing until the report: one process per file
    # at a time, their snapshots merged (a week of a fleet's logs takes 1/cores of the time)
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    quiet = replace(options, progress=False)
    with ProcessPoolExecutor(jobs, mp_context=get_context("fork")) as pool, _files_bar(paths, options) as bar:
        snapshots, years = [], {}
        for path, (snapshot, year) in zip(paths, pool.map(_read, [([path], settings, quiet) for path in paths]), strict=True):
            snapshots.append(snapshot)
            years.update(year)
            bar.update(os.path.getsize(path))
    return _mark_years(snapshot_report(merged(snapshots), settings), years)


def _read(work: tuple[list[str], DeriveSettings, AnalyzeOptions]) -> tuple[Snapshot, dict[str, tuple[str, bool]]]:
    paths, settings, options = work
    store = Store(health=health_memory(settings, options.reference, parse_duration(settings.health_window)))
    years = {}
    for path in paths:
        reason = feed_file(path, store, options)
        if reason is not None:
            years[path] = reason
    return store.snapshot(), years


def _mark_years(report: dict[str, Any], years: dict[str, tuple[str, bool]]) -> dict[str, Any]:
    """Say, per source and series, where the log's dates are not known: no year (timestamps.py), or no stamp."""
    for entry in (*report["sources"], *report["series"], *report["sampled"]):
        reason, year_known = years.get(entry["upstream"], (None, True))
        entry["dates_unknown"], entry["year_known"] = reason, year_known
    return report


def _files_bar(paths: list[str], options: AnalyzeOptions) -> Any:
    """Progress over all files in bytes, moved as each file is done (the workers show none)."""
    return _progress_bar(f"{len(paths)} files", sum(os.path.getsize(path) for path in paths), options)
