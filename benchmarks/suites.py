"""The seven benchmarks. Each returns rows for the results table; each also checks its answer."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from benchmarks.inputs import ROOT, LogTruth, make_log, make_payload
from benchmarks.processes import Sidecar, background, cpu_seconds, peak_rss_bytes, rss_bytes, sidecar, wait_until
from exporter import metric_names as names

MTAIL_PROGRAMS = ROOT / "mtail"


@dataclass(frozen=True)
class Row:
    benchmark: str
    case: str
    measured: str  # the figure, with its unit
    baseline: str  # what it is compared with, measured in the same run
    ratio: str  # how it compares ("" when there is no baseline)
    target: str
    met: bool | None  # None: no target for this row


def _run(command: list[str]) -> tuple[float, int, bytes]:
    """(seconds, peak RSS in bytes, stdout) of one run: wait4 gives this child's own peak, not the largest so far."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    stdout = process.stdout.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, command)
    return seconds, usage.ru_maxrss * 1024, stdout


def _median_run(command: list[str], runs: int, check=None) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """(median seconds, largest peak RSS) over `runs` runs, checking each run's output."""
    times, peaks = [], []
    for _ in range(runs):
        seconds, peak, stdout = _run(command)
        times.append(seconds)
        peaks.append(peak)
        if check is not None:
            check(stdout)
    return statistics.median(times), max(peaks)


def _median_seconds(command: list[str], runs: int, check=None) -> float:  # type: ignore[no-untyped-def]
    return _median_run(command, runs, check)[0]


def _warm(path: Path) -> None:
    """Read the file once so every contender starts from a warm page cache."""
    with open(path, "rb") as handle:
        while handle.read(1 << 24):
            pass


def _check_analyze(truth: LogTruth):  # type: ignore[no-untyped-def]
    def check(stdout: bytes) -> None:
        report = json.loads(stdout)
        (series,) = report["series"]
        got = (report["spec_lines"], series["accepted_tokens"], series["draft_tokens"], report["lines_read"])
        want = (truth.spec_lines, truth.accepted_tokens, truth.draft_tokens, truth.lines)
        if got != want:
            raise AssertionError(f"analyze got (spec lines, A, T, lines) {got}, the generator wrote {want}")
    return check


def _check_mtail(truth: LogTruth):  # type: ignore[no-untyped-def]
    def check(stdout: bytes) -> None:
        metrics = json.loads(stdout)
        got = tuple(int(metrics[name][0]["LabelValues"][0]["Value"]["Value"]) for name in ("specdecode_spec_lines", "specdecode_accepted_tokens"))
        if got != (truth.spec_lines, truth.accepted_tokens):
            raise AssertionError(f"mtail counted {got}, the generator wrote {(truth.spec_lines, truth.accepted_tokens)}")
    return check


def mtail_binary() -> str | None:
    return shutil.which("mtail")


def _analyze(path: str) -> list[str]:
    return [sys.executable, "-m", "exporter", "analyze", "--format", "json", "--no-progress", path]


def offline(size: int, runs: int, mtail_runs: int) -> list[Row]:
    truth = make_log(size)
    _warm(truth.path)
    path = str(truth.path)
    grep = _median_seconds(["env", "LC_ALL=C", "grep", "-c", "SpecDecoding metrics", path], runs)
    floor = _median_seconds([sys.executable, "-c", _READ_LINES, path], runs)
    analyze, peak = _median_run(_analyze(path), runs, _check_analyze(truth))
    mib = truth.size / (1 << 20)
    label = f"{mib:,.0f} MiB, {truth.lines:,} lines"
    rows = [
        Row("offline scan", f"grep -c, {label}", f"{grep:.3f} s ({mib / grep:,.0f} MiB/s)", "", "", "", None),
        Row("offline scan", f"analyze vs grep, {label}", f"{analyze:.3f} s ({mib / analyze:,.0f} MiB/s), peak RSS {peak / 2**20:.0f} MiB",
            f"grep {grep:.3f} s", f"{grep / analyze:.3f}× grep", "≥ 0.3× grep (goal 0.5×)", grep / analyze >= 0.3),
        Row("offline scan", f"Python's floor: start, read in 4 MiB blocks, count lines, {label}", f"{floor:.3f} s ({mib / floor:,.0f} MiB/s)",
            f"grep {grep:.3f} s", f"{grep / floor:.3f}× grep", "", None),
    ]
    mtail = mtail_binary()
    if mtail is None:
        rows.append(Row("offline scan", f"analyze vs mtail, {label}", "mtail not installed (apt-get install mtail)", "", "", "≥ 20× mtail", None))
        return rows
    mtail_seconds = _median_seconds(
        [mtail, "--one_shot", "--one_shot_format", "json", "--progs", str(MTAIL_PROGRAMS), "--logs", path, "--logtostderr"],
        mtail_runs, _check_mtail(truth),
    )
    rows.append(Row("offline scan", f"analyze vs mtail, {label}", f"{analyze:.3f} s", f"mtail {mtail_seconds:.2f} s ({mtail_runs} run(s))",
                    f"{mtail_seconds / analyze:.1f}× mtail", "≥ 20× mtail", mtail_seconds / analyze >= 20))
    return rows


def _lifetime_tokens(body: str) -> tuple[float, float]:
    """(A, T) of every series together, from the exported counters: the lifetime. The status's windows
    hold the log's last minutes only (a backlog keeps its own hours), never the whole catch-up."""
    from prometheus_client.parser import text_string_to_metric_families

    total = {names.ACCEPTED_TOKENS.sample_name: 0.0, names.DRAFT_TOKENS.sample_name: 0.0}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name in total:
                total[sample.name] += sample.value
    return total[names.ACCEPTED_TOKENS.sample_name], total[names.DRAFT_TOKENS.sample_name]


def _check_counted(truth: LogTruth, running: Sidecar) -> None:
    """Every line and spec line counted once (the status), every token once (the counters; a /metrics body
    may be a second behind the status, so it is waited for)."""
    report, want_tokens = running.status(), (float(truth.accepted_tokens), float(truth.draft_tokens))
    with contextlib.suppress(RuntimeError):  # not there in time: the check below says what was counted
        wait_until(lambda: _lifetime_tokens(running.metrics()) == want_tokens, "the counters to hold the backlog", timeout=10)
    got = (report["spec_lines"], report["lines_read"], _lifetime_tokens(running.metrics()))
    want = (truth.spec_lines, truth.lines, want_tokens)
    if got != want:
        raise AssertionError(f"serve counted (spec lines, lines, (A, T)) {got}, the generator wrote {want}")


def catch_up(size: int, runs: int) -> list[Row]:
    """`serve --from-start` on an existing log: the time from starting the sidecar until its status
    counts every spec line, against `analyze` of the same file (the same work, offline)."""
    truth = make_log(size)
    _warm(truth.path)
    path = str(truth.path)
    analyze = _median_seconds(_analyze(path), runs, _check_analyze(truth))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        with sidecar("--log", path, "--from-start") as running:
            # /api/v1/status reads the store afresh (a scrape of /metrics may get a body a second old)
            wait_until(lambda running=running: running.status()["spec_lines"] >= truth.spec_lines, "the backlog to be counted",
                       timeout=600, every=0.05)
            times.append(time.perf_counter() - start)
            _check_counted(truth, running)
    seconds = statistics.median(times)
    mib = truth.size / (1 << 20)
    return [Row("catch-up", f"serve --from-start vs analyze, {mib:,.0f} MiB, {truth.spec_lines:,} spec lines",
                f"{seconds:.2f} s ({mib / seconds:,.0f} MiB/s), start-up included", f"analyze {analyze:.2f} s",
                f"{seconds / analyze:.2f}× analyze", "≤ 2.5× analyze", seconds / analyze <= 2.5)]  # serve's own start (FastAPI, uvicorn, the
    # first status poll) is about half a second more than analyze's: at 100 MiB it is the ratio's spread (1.4–2.1× in one day)


def offline_gzip(size: int, runs: int) -> list[Row]:
    """analyze on a .gz against decompressing it alone (Python's zlib, as analyze uses it): the parse
    should hide behind the decompression, not add to it."""
    truth = make_log(size)
    packed = truth.path.with_suffix(".log.gz")
    if not packed.exists() or packed.stat().st_mtime < truth.path.stat().st_mtime:
        subprocess.run(["sh", "-c", f"gzip -c -6 '{truth.path}' > '{packed}.tmp' && mv '{packed}.tmp' '{packed}'"], check=True)
    os.utime(packed, (truth.path.stat().st_mtime, truth.path.stat().st_mtime))  # written when its last line was: the stamps' year
    _warm(packed)
    path = str(packed)
    inflate = _median_seconds([sys.executable, "-c", _INFLATE, path], runs)
    analyze, peak = _median_run(_analyze(path), runs, _check_analyze(truth))
    mib = truth.size / (1 << 20)
    return [Row("offline scan", f"analyze .gz vs decompression alone, {mib:,.0f} MiB ({packed.stat().st_size / 2**20:,.1f} MiB gzip)",
                f"{analyze:.3f} s ({mib / analyze:,.0f} MiB/s), peak RSS {peak / 2**20:.0f} MiB", f"python gzip read {inflate:.3f} s",
                f"{analyze / inflate:.2f}× decompression", "≤ 1.5× decompression", analyze / inflate <= 1.5)]


# what any Python tool pays to see every line once, with no parsing: the bound on analyze's ratio to grep
_READ_LINES = "import sys\nlines = 0\nwith open(sys.argv[1], 'rb') as f:\n    while block := f.read(4 << 20): lines += block.count(b'\\n')\nprint(lines)"
_INFLATE = "import gzip, sys\nwith gzip.open(sys.argv[1], 'rb') as f:\n    while f.read(1 << 22): pass"


def exposition(repeats: int) -> list[Row]:
    from prometheus_client.parser import text_string_to_metric_families

    from exporter.parse.exposition import parse_exposition

    payload = make_payload()
    snapshot = parse_exposition(payload)
    if len(snapshot.counters) != 4 or any(len(c.accepted_per_position) != 15 for c in snapshot.counters.values()):
        raise AssertionError("the extraction missed engines or positions of the payload")

    def best_of(function) -> float:  # type: ignore[no-untyped-def]
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            function()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    full = best_of(lambda: list(text_string_to_metric_families(payload)))
    ours = best_of(lambda: parse_exposition(payload))
    size = f"{len(payload.encode()) / 1000:.0f} KB, 4 engines, k = 15"
    return [Row("exposition", f"spec-decode extraction, {size}", f"{ours * 1e3:.3f} ms", f"prometheus_client full parse {full * 1e3:.1f} ms",
                f"{full / ours:.0f}× faster", "≥ 50×", full / ours >= 50)]


_ENGINE = (
    "(APIServer pid=7) INFO 12-02 08:00:00 [loggers.py:273] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 120.0 tokens/s, "
    "Running: 16 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.4%, Prefix cache hit rate: 62.5%\n"
)
_SPEC = (
    "(APIServer pid=7) INFO 12-02 08:00:00 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.00, Accepted throughput: 10.00 tokens/s, "
    "Drafted throughput: 150.00 tokens/s, Accepted: 10 tokens, Drafted: 150 tokens, Per-position acceptance rate: "
    + ", ".join(["1.000"] + ["0.000"] * 14) + ", Avg Draft acceptance rate: 6.7%\n"
)
_ACCESS = '(APIServer pid=7) INFO:     127.0.0.1:40000 - "POST /v1/completions HTTP/1.1" 200 OK\n'


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def latency(lines: int, poll_interval: float) -> list[Row]:
    rows = []
    for mode, flags, target_ms, spread in (
        ("file events (inotify)", [], 100.0, 0.05),
        (f"polling every {poll_interval:g} s", ["--no-file-events"], poll_interval * 1000 + 50, poll_interval),
    ):
        with tempfile.TemporaryDirectory() as directory:
            log = Path(directory) / "server.log"
            log.write_text(_ACCESS)
            with sidecar("--log", str(log), "--poll-interval", str(poll_interval), *flags) as running, open(log, "a") as out:
                wait_until(lambda: 'specdecode_log_lines_total{upstream=' in running.metrics(), "the log to be followed")
                seen = running.spec_lines()
                samples = []
                rng = random.Random(1)
                for _ in range(lines):
                    time.sleep(rng.uniform(0.01, spread))  # writes land at random phases of the poll timer
                    out.write(_ENGINE + _SPEC)
                    out.flush()
                    written = time.perf_counter()
                    seen += 1
                    wait_until(lambda seen=seen: running.spec_lines() >= seen, "a spec line to show on /metrics", timeout=10, every=0.002)
                    samples.append((time.perf_counter() - written) * 1000)
        p50, p99 = _percentile(samples, 0.5), _percentile(samples, 0.99)
        rows.append(Row("live latency", f"{mode}, {lines} lines", f"p50 {p50:.1f} ms, p99 {p99:.1f} ms", "", "",
                        f"p99 < {target_ms:.0f} ms", p99 < target_ms))
    return rows


def _write_at_rate(path: Path, rate: float, seconds: float) -> int:
    """Append lines one write() each (as a logging handler does) at `rate` lines/s; return how many."""
    pattern = [_ACCESS] * 38 + [_ENGINE, _SPEC]
    written = 0
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        start = time.monotonic()
        while (elapsed := time.monotonic() - start) < seconds:
            due = int(elapsed * rate) + 1
            while written < due:
                os.write(fd, pattern[written % len(pattern)].encode())
                written += 1
            time.sleep(max(0.0, (written / rate) - (time.monotonic() - start)))
    finally:
        os.close(fd)
    return written


def _cpu_share(pid: int, during) -> float:  # type: ignore[no-untyped-def]
    before, start = cpu_seconds(pid), time.monotonic()
    during()
    return (cpu_seconds(pid) - before) / (time.monotonic() - start)


def follow(seconds: float, rates: tuple[int, ...] = (100, 1000), idle_files: int = 10) -> list[Row]:
    rows = []
    for rate in rates:
        with tempfile.TemporaryDirectory() as directory:
            log = Path(directory) / "server.log"
            log.write_text(_ACCESS)
            with background(["tail", "-F", "-n", "0", str(log)]) as tail:
                tail_share = _cpu_share(tail.pid, lambda log=log, rate=rate: _write_at_rate(log, rate, seconds))
            with sidecar("--log", str(log)) as running:
                wait_until(lambda: 'specdecode_log_lines_total{upstream=' in running.metrics(), "the log to be followed")
                before = running.spec_lines()
                share = _cpu_share(running.process.pid, lambda log=log, rate=rate: _write_at_rate(log, rate, seconds))
                expected = before + int(seconds * rate) // 40
                wait_until(lambda expected=expected: running.spec_lines() >= expected, "every written spec line to be counted", timeout=10)
        rows.append(Row("follow cost", f"one file growing at {rate:,} lines/s, {seconds:g} s", f"{share * 100:.2f}% of a core",
                        f"tail -F {tail_share * 100:.2f}%", f"{share / tail_share:.1f}× tail -F" if tail_share else "", "< 1%", share < 0.01))
    with tempfile.TemporaryDirectory() as directory:
        paths = [Path(directory) / f"idle-{i}.log" for i in range(idle_files)]
        for path in paths:
            path.write_text(_ACCESS)
        with sidecar(*[arg for path in paths for arg in ("--log", str(path))]) as running:
            wait_until(lambda: running.metrics().count('specdecode_log_lines_total{upstream=') == idle_files, "every file to be followed")
            share = _cpu_share(running.process.pid, lambda: time.sleep(seconds))
    rows.append(Row("follow cost", f"{idle_files} idle files, {seconds:g} s", f"{share * 100:.3f}% of a core", "", "", "< 0.1%", share < 0.001))
    return rows


def scale(targets: int, interval: float, seconds: float, renders: int, base: int = 21000) -> list[Row]:
    """`base` … base+targets-1 must be free loopback ports; the helper fails loudly otherwise."""
    with tempfile.TemporaryDirectory() as directory, background(
        [sys.executable, "-m", "benchmarks.targets", "--count", str(targets), "--port", str(base)], "ready"
    ):
        file_sd = Path(directory) / "targets.json"
        file_sd.write_text(json.dumps([{"targets": [f"127.0.0.1:{base + i}" for i in range(targets)]}]))
        with sidecar("--targets-file", str(file_sd), "--scrape-interval", str(interval), "--max-series", str(targets * 2)) as running:
            wait_until(lambda: running.metrics().count("specdecode_source_up{") == targets, "every target to be scraped", timeout=120, every=0.5)
            wait_until(lambda: running.metrics().count("specdecode_mean_acceptance_length{") >= targets, "every target's second scrape", timeout=120, every=0.5)
            pid = running.process.pid
            share = _cpu_share(pid, lambda: time.sleep(seconds))
            rss = rss_bytes(pid)
            times, size, wire = [], 0, 0
            for _ in range(renders):
                # as Prometheus asks (Accept-Encoding: gzip): the time until the whole body is received;
                # decompressing it is the scraper's work, done after the clock stops
                start = time.perf_counter()
                with running.client.stream("GET", running.url + "/metrics", headers={"Accept-Encoding": "gzip"}) as response:
                    raw = b"".join(response.iter_raw())
                times.append(time.perf_counter() - start)
                wire = len(raw)
                size = len(gzip.decompress(raw)) if response.headers.get("content-encoding") == "gzip" else wire
                time.sleep(interval / renders)
            up = running.metrics().count('specdecode_source_up{source="metrics"')
            if up != targets:
                raise AssertionError(f"{up} of {targets} targets exported")
    render = statistics.median(times) * 1000
    case = f"{targets:,} targets every {interval:g} s"
    return [
        Row("scale", f"{case}: CPU over {seconds:g} s", f"{share * 100:.1f}% of a core", "", "", "< 50%", share < 0.5),
        Row("scale", f"{case}: RSS", f"{rss / 1e6:.0f} MB", "", "", "< 150 MB", rss < 150e6),
        Row("scale", f"{case}: GET /metrics ({size / 1e6:.1f} MB of text)", f"median {render:.1f} ms over {renders}", "", "", "< 50 ms", render < 50),
        Row("scale", f"{case}: /metrics body on the wire (gzip)", f"{wire / 1e6:.2f} MB", "", "", "< 5 MB", wire < 5e6),
    ]


POD_LIMIT = 256 << 20  # deploy/kubernetes: the sidecar container's memory limit


def hostile(bombs: int, seconds: float) -> list[Row]:
    """Peak memory while `bombs` targets answer with gzip bombs (1 GiB of spaces, 1 MB on the wire; half
    at /metrics, half at /version), beside one good target; against the same sidecar with the good
    target alone. The answer checked: the good target stays up."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    packer, block = zlib.compressobj(9, zlib.DEFLATED, 31), b" " * (1 << 20)  # gzip, packed a MiB at a time
    bomb = b"".join(packer.compress(block) for _ in range(1024)) + packer.flush()
    good = make_payload(1, 8)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            # half the bombs at /metrics, half at /version (asked after a good /metrics, once per server start)
            port = self.server.server_address[1]
            at_version = ports.index(port) % 2 == 1
            hostile = port != good_port and (self.path == "/version") == at_version
            body = bomb if hostile else (b'{"version": "0.24.0"}' if self.path == "/version" else good.encode())
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if self.path == "/version" else "text/plain; version=0.0.4")
            if hostile:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the sidecar stopped reading at its cap: as it should

        def log_message(self, format: str, *args: object) -> None:
            pass

    servers = [ThreadingHTTPServer(("127.0.0.1", 0), Handler) for _ in range(bombs + 1)]
    ports = [server.server_address[1] for server in servers]
    good_port = ports[0]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        urls = [f"http://127.0.0.1:{server.server_address[1]}/metrics" for server in servers]
        peaks = []
        for targets in (urls[:1], urls):
            args = [part for url in targets for part in ("--target", url)]
            with sidecar(*args, "--scrape-interval", "0.5") as running:
                wait_until(lambda running=running: 'specdecode_source_up{source="metrics",upstream="' + urls[0] in running.metrics(),
                           "the good target scraped", timeout=60)
                time.sleep(seconds)  # scrape the bombs for a while: the peak is what is measured
                if 'specdecode_source_up{source="metrics",upstream="' + urls[0] + '"} 1' not in running.metrics():
                    raise AssertionError("the good target is not up beside the bombs")
                peaks.append(peak_rss_bytes(running.process.pid))
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    calm, attacked = peaks
    case = f"{bombs} gzip-bomb targets (/metrics or /version, 1 GiB each) + 1 good, {seconds:g} s"
    return [Row("hostile targets", f"{case}: peak RSS", f"{attacked / 2**20:.0f} MiB", f"{calm / 2**20:.0f} MiB (the good target alone)",
                f"{attacked / calm:.2f}×", f"< {POD_LIMIT >> 20} MiB (pod limit)", attacked < POD_LIMIT)]
