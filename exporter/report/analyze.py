"""`analyze`: the live pipeline in one-shot mode over whole log files, then a report.

Files are read in 4 MiB binary chunks (gzip by extension), so memory stays constant on any file
size; a progress bar shows on a TTY. Each PATH is its own upstream, so several files are read
at once by as many processes as there are cores. Log timestamps carry no year and no zone: the
year comes from each file's modification time, the zone from that time against the file's last
line (intervals/clock.py) where the file is the server's own — never a copy's (its birth time
tells, sources/written.py) —, unless `--log-timezone` says it; a copy, a .gz or stdin is read in
the zone analyze runs in, and the report says which zone and why. The report is written with
hindsight (judge/hindsight.py: the store keeps each series' stretches), the live verdict beside it.
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
from exporter.report.formats import nothing_to_report
from exporter.sources.written import born_at
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


@dataclass(frozen=True)
class FileNotes:
    """What the report says of one file beside its numbers: why its dates or zone are not known, and
    whether two servers seem to write it."""

    dates_unknown: str | None = None  # why the dates are not known (no year, or no stamp)
    year_known: bool = True
    zone_why: str | None = None  # why the zone is what it is, where it was not learned or set
    writers: str | None = None  # two servers seem to write this log (intervals/writers.py)


def feed_file(path: str, store: Store, options: AnalyzeOptions) -> FileNotes:
    """Push one whole file through a LogPipeline into `store`; what the report must say of it."""
    zone_why: str | None = None
    with open_log(path) as (reader, raw, size, mtime):
        pipeline = LogPipeline(
            store, path, log_format=options.log_format, clock="log", year_reference=mtime, zone=options.zone, model_name=options.model_name,
            max_line_bytes=options.max_line_bytes, batch=options.batch,
        )
        if options.zone is not None:
            zone_why = None
        elif reader is raw and path != "-":
            zone_why = pipeline.learn_written(_tail(raw, size), mtime, head=raw.read(TAIL_BYTES), born=born_at(raw.fileno()))
            raw.seek(0)
        else:
            zone_why = "stdin has no modification time" if path == "-" else "a compressed file's modification time is its archive's"
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
    writers = interpreter.writers.note
    if interpreter.unstamped:
        why = f"{interpreter.unstamped} spec lines carry no time stamp (message-only lines): their times are when they were read"
        return FileNotes(why, True, zone_why, writers)
    what = "the time it is read" if path == "-" else "the file's modification time"
    reason = None if interpreter.last_undated is None else year_unknown_reason(interpreter.last_undated, mtime, what)
    return FileNotes(reason, reason is None, zone_why, writers)


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
        snapshot, notes = _read((paths, settings, options))
        return _mark_files(snapshot_report(snapshot, settings), notes)
    # each file is its own upstream, so files share nothing until the report: one process per file
    # at a time, their snapshots merged (a week of a fleet's logs takes 1/cores of the time)
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    quiet = replace(options, progress=False)
    with ProcessPoolExecutor(jobs, mp_context=get_context("fork")) as pool, _files_bar(paths, options) as bar:
        snapshots, notes = [], {}
        for path, (snapshot, note) in zip(paths, pool.map(_read, [([path], settings, quiet) for path in paths]), strict=True):
            snapshots.append(snapshot)
            notes.update(note)
            bar.update(os.path.getsize(path))
    return _mark_files(snapshot_report(merged(snapshots), settings), notes)


def _read(work: tuple[list[str], DeriveSettings, AnalyzeOptions]) -> tuple[Snapshot, dict[str, FileNotes]]:
    paths, settings, options = work
    store = Store(health=health_memory(settings, options.reference, parse_duration(settings.health_window)), trace=True)
    notes = {path: feed_file(path, store, options) for path in paths}
    return store.snapshot(), notes


def _mark_files(report: dict[str, Any], notes: dict[str, FileNotes]) -> dict[str, Any]:
    """Say, per source and series, where the log's dates are not known (no year, or no stamp), why its
    zone is what it is, and where two servers seem to write one log."""
    for entry in (*report["sources"], *report["series"], *report["sampled"]):
        note = notes.get(entry["upstream"], FileNotes())
        entry["dates_unknown"], entry["year_known"] = note.dates_unknown, note.year_known
    for source in report["sources"]:
        note = notes.get(source["upstream"], FileNotes())
        source["two_writers"] = note.writers
        if source.get("log_zone") is not None:
            source["log_zone"]["why"] = _zone_why(source["log_zone"], note.zone_why)
    for series in report["series"]:
        writers = notes.get(series["upstream"], FileNotes()).writers
        if writers is not None:
            series["notes"].append(writers)
    report["nothing_to_report"] = nothing_to_report(report)  # why no series came out (an empty log, no spec line), else null
    return report


def _zone_why(zone: dict[str, Any], why: str | None) -> str:
    """Where the zone the stamps are read in comes from, in words."""
    how = zone["from"]
    if how == "flag":
        return "set by --log-timezone"
    if how == "file":
        return "learned from the file's last stamped line against its modification time (the file is the server's own, not a copy)"
    return f"assumed: the zone analyze runs in ({why or 'nothing told it'}); --log-timezone sets it"


def _files_bar(paths: list[str], options: AnalyzeOptions) -> Any:
    """Progress over all files in bytes, moved as each file is done (the workers show none)."""
    return _progress_bar(f"{len(paths)} files", sum(os.path.getsize(path) for path in paths), options)
