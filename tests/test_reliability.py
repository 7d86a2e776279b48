"""Acceptance: the transitions of production lose nothing and count nothing twice; hostile input
cannot stall, exhaust or fool the sidecar (issue 26). Each test reproduces one finding against the
real sidecar process — real files rotated, real signals, loopback servers — and fails on the old code.

Run them alone with `pytest -m reliability`; they are `slow` too, so CI runs them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from helpers import cli, free_port, running_exporter, running_process, value
from waiting import wait_until
from workload import FILLER, SPEC_LINES, LogWriter, accepted_in

pytestmark = [pytest.mark.slow, pytest.mark.reliability]


class Tally:
    """Lines appended to a log, one spec line in `spec_every`, with what the sidecar must count."""

    def __init__(self, spec_every: int = 10) -> None:  # 0: access lines only
        self.lines = self.spec_lines = self.accepted = 0
        self.spec_every = spec_every

    def text(self, count: int) -> str:
        out = []
        for _ in range(count):
            if self.spec_every and self.lines % self.spec_every == 0:
                line = SPEC_LINES[self.spec_lines % len(SPEC_LINES)]
                self.spec_lines += 1
                self.accepted += accepted_in(line)
            else:
                line = FILLER  # access lines carry no time: files and copies of them start alike
            out.append(line + "\n")
            self.lines += 1
        return "".join(out)

    def append(self, path: Path, count: int) -> None:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(self.text(count))


def counted(exporter, upstream: str | None = None) -> float:  # type: ignore[no-untyped-def]
    labels = {"upstream": upstream} if upstream else {}
    return value(exporter.scrape(), "specdecode_log_lines_total", **labels) or 0.0


def settle(exporter, paths: list[Path], tally: Tally, upstream: str | None = None) -> dict:  # type: ignore[no-untyped-def, type-arg]
    """Wait until every line written is counted, then prove reading is past them: one more line is
    appended and counted, so the counts read now are final (a double count has happened by then)."""
    wait_until(lambda: counted(exporter, upstream) >= tally.lines, f"{tally.lines} lines counted", timeout=30,
               detail=lambda: f"counted {counted(exporter, upstream)}")
    with open(paths[0], "a", encoding="utf-8") as handle:  # a filler line: only the line count moves
        handle.write(FILLER + "\n")
    tally.lines += 1
    wait_until(lambda: counted(exporter, upstream) >= tally.lines, "the marker line counted", timeout=30)
    return exporter.scrape()


def assert_exact(samples, tally: Tally, upstream: str | None = None) -> None:  # type: ignore[no-untyped-def]
    labels = {"upstream": upstream} if upstream else {}
    assert value(samples, "specdecode_log_lines_total", **labels) == tally.lines
    assert (value(samples, "specdecode_log_spec_lines_total", **labels) or 0) == tally.spec_lines
    assert (value(samples, "specdecode_accepted_tokens_total", **labels) or 0) == tally.accepted


def saved_once_more(state: Path) -> None:
    """Wait for the state file to be written again (the follower saves after a pass, once a second)."""
    before = (state / "state.json").stat().st_mtime_ns if (state / "state.json").exists() else 0
    wait_until(lambda: (state / "state.json").exists() and (state / "state.json").stat().st_mtime_ns > before, "a save", timeout=15)


def serve(*args: str) -> tuple[list[str], str]:
    port = free_port()
    return cli("serve", "--listen", f"127.0.0.1:{port}", *args), f"http://127.0.0.1:{port}/-/healthy"


# --- (1) a clean stop keeps positions: the Kubernetes rollout --------------------------------------


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("restart_from_start", [False, True])
def test_a_clean_stop_resumes_exactly_where_it_stopped(tmp_path, stop, restart_from_start):
    log, state, tally = tmp_path / "vllm.log", tmp_path / "state", Tally()
    tally.append(log, 1000)
    command, ready = serve("--log", str(log), "--from-start", "--state-dir", str(state))
    with running_process(command, ready, "sidecar") as process:
        wait_until(lambda: counted_at(ready) >= 1000, "1,000 lines counted")
        process.send_signal(stop)
        assert process.wait(timeout=20) in (0, -stop)  # uvicorn re-raises the signal after its clean shutdown
    saved = json.loads((state / "state.json").read_text())
    assert [entry["path"] for entry in saved["files"]] == [str(log)]  # was: "files": [] after a clean stop
    tally.append(log, 500)  # written while the sidecar was down
    with running_exporter("--log", str(log), "--state-dir", str(state), *(["--from-start"] if restart_from_start else [])) as exporter:
        assert_exact(settle(exporter, [log], tally), tally)


def sample_at(ready: str, name: str, **labels: str) -> float:
    """A sample of the sidecar that answers at `ready` (summed over series; 0 if absent)."""
    import httpx
    from helpers import parse_samples

    return value(parse_samples(httpx.get(ready.replace("/-/healthy", "/metrics"), timeout=5).text), name, **labels) or 0.0


def counted_at(ready: str) -> float:
    return sample_at(ready, "specdecode_log_lines_total")


def test_sighup_reloads_and_saves_and_keeps_serving(tmp_path):
    log, state, tally = tmp_path / "vllm.log", tmp_path / "state", Tally()
    tally.append(log, 200)
    with running_exporter("--log", str(log), "--from-start", "--state-dir", str(state)) as exporter:
        wait_until(lambda: counted(exporter) >= 200, "200 lines counted")
        saved_once_more(state)
        os.utime(state / "state.json", ns=(0, 0))  # so that the save SIGHUP asks for shows
        exporter.process.send_signal(signal.SIGHUP)  # was: killed at once, nothing saved
        wait_until(lambda: (state / "state.json").stat().st_mtime_ns > 0, "the state saved on SIGHUP", timeout=10)
        assert exporter.process.poll() is None
        tally.append(log, 50)
        assert_exact(settle(exporter, [log], tally), tally)


def test_end_of_stdin_saves_the_counters(tmp_path):
    state, tally = tmp_path / "state", Tally()
    command, ready = serve("--log", "-", "--state-dir", str(state))
    read, write = os.pipe()
    with running_process(command, ready, "sidecar", stdin=read) as process:
        os.close(read)
        os.write(write, tally.text(300).encode())
        os.close(write)  # the end of input: the keeper saves now, not at its next minute
        wait_until(lambda: (state / "state.json").exists() and _saved_lines(state, "-") == 300, "the counters saved", timeout=15)
        assert process.poll() is None


def _saved_lines(state: Path, upstream: str) -> int:
    try:
        saved = json.loads((state / "state.json").read_text())
    except (OSError, ValueError):
        return -1
    return next((entry["lines"] for entry in saved["counters"]["sources"] if entry["upstream"] == upstream), -1)


# --- (6) kill -9 inside an over-long line -------------------------------------------------------


def test_kill_9_inside_an_over_long_line_never_reads_its_tail_as_a_line(tmp_path):
    log, state, tally = tmp_path / "vllm.log", tmp_path / "state", Tally(spec_every=1)
    tally.append(log, 12)
    command, ready = serve("--log", str(log), "--from-start", "--state-dir", str(state), "--max-line-bytes", "4096")
    with running_process(command, ready, "sidecar") as process:
        wait_until(lambda: counted_at(ready) >= 12, "12 lines counted")
        with open(log, "a") as handle:
            handle.write("x" * 20_000)  # an over-long line, unfinished
        wait_until(lambda: sample_at(ready, "specdecode_log_parse_errors_total", reason="line_too_long") >= 1, "the long line seen")
        saved_once_more(state)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    with open(log, "a") as handle:  # its end looks like a spec line: read from its middle, it would count as one
        handle.write(" " + SPEC_LINES[0] + "\n")
    with running_exporter("--log", str(log), "--state-dir", str(state), "--max-line-bytes", "4096") as exporter:
        samples = settle(exporter, [log], tally)
        assert value(samples, "specdecode_log_spec_lines_total") == tally.spec_lines == 12  # was 13




# --- (7) one writer per state dir ---------------------------------------------------------------


def test_a_second_sidecar_on_the_same_state_dir_stops_with_a_clear_error(tmp_path):
    log, state = tmp_path / "vllm.log", tmp_path / "state"
    Tally().append(log, 10)
    with running_exporter("--log", str(log), "--state-dir", str(state)) as first:
        command, _ = serve("--log", str(log), "--state-dir", str(state))
        second = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert second.returncode != 0
        assert f"in use by another sidecar (pid {first.process.pid})" in second.stderr
        assert first.process.poll() is None


# --- (2)(3)(4) a rotated file is the same file -------------------------------------------------


def copytruncate(log: Path, copy: Path) -> None:
    shutil.copyfile(log, copy)
    with open(log, "r+") as handle:
        handle.truncate(0)


def test_copytruncate_while_down_resumes_in_the_copy_that_holds_the_offset(tmp_path):
    # access lines only: every copy starts with the same bytes and ends with the same line
    log, state, tally = tmp_path / "vllm.log", tmp_path / "state", Tally(spec_every=0)
    tally.append(log, 600)
    command, ready = serve("--log", str(log), "--from-start", "--state-dir", str(state))
    with running_process(command, ready, "sidecar") as process:
        wait_until(lambda: counted_at(ready) >= 600, "600 lines counted")
        copytruncate(log, tmp_path / "vllm.log-20261130")  # live, read by the sidecar: an older look-alike copy
        wait_until(lambda: sample_at(ready, "specdecode_log_truncations_total") >= 1, "the truncation seen")  # the same bytes again would hide it
        tally.append(log, 600)
        wait_until(lambda: counted_at(ready) >= 1200, "1,200 lines counted")
        saved_once_more(state)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    for day in ("20261201", "20261202"):  # rotated twice while down
        tally.append(log, 300)
        copytruncate(log, tmp_path / f"vllm.log-{day}")
    tally.append(log, 300)
    with running_exporter("--log", str(log), "--state-dir", str(state)) as exporter:
        assert_exact(settle(exporter, [log], tally), tally)  # was: 4,200 lines for 2,700


def test_live_copytruncate_with_date_named_copies_reads_the_rest_from_the_new_copy(tmp_path):
    log, tally = tmp_path / "vllm.log", Tally(spec_every=0)  # the copies start alike and end alike
    log.touch()
    with running_exporter("--log", str(log), "--from-start", "--no-file-events", "--poll-interval", "1") as exporter:
        tally.append(log, 1000)
        wait_until(lambda: counted(exporter) >= 1000, "1,000 lines counted")
        copytruncate(log, tmp_path / "vllm.log-20261201")
        tally.append(log, 500)
        wait_until(lambda: counted(exporter) >= 1500, "1,500 lines counted")
        tally.append(log, 300)  # written and rotated away between two polls: only the copy holds them
        copytruncate(log, tmp_path / "vllm.log-20261202")
        assert_exact(settle(exporter, [log], tally), tally)  # was: 500 counted twice, 300 lost


def test_a_glob_over_rotated_files_reads_each_line_once(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "vllm.log"
    log.touch()
    writer = LogWriter(log, lines_per_second=2000, rotate_every=0.4, how="rename", keep=4)
    with running_exporter("--log", str(logs / "*"), "--from-start", "--poll-interval", "0.1") as exporter:
        wait_until(lambda: "specdecode_log_lines_total" in exporter.metrics_text(), "the glob followed")
        writer.start()
        writer.run_for(2.5)
        writer.stop()
        total = Tally()
        total.lines, total.spec_lines, total.accepted = writer.lines, writer.spec_lines, writer.accepted
        assert writer.rotations >= 3
        assert_exact(settle(exporter, [log], total), total)  # was: 5,600 lines for 2,000


# --- (10)(13) every input bounded ---------------------------------------------------------------


def test_request_bodies_are_capped_and_json_depth_is_bounded(tmp_path):
    import httpx

    log = tmp_path / "vllm.log"
    log.touch()
    with running_exporter("--log", str(log)) as exporter:
        url = exporter.base_url + "/api/v1/acknowledge"

        def endless():  # type: ignore[no-untyped-def]
            for _ in range(300):  # 300 MB, never declared: refused after the cap, not buffered whole
                yield b" " * (1 << 20)

        assert httpx.post(url, content=endless(), timeout=30).status_code == 413
        deep = httpx.post(url, content=b"[" * 20_000 + b"]" * 20_000, headers={"content-type": "application/json"}, timeout=30)
        assert deep.status_code == 400  # was 500 (RecursionError)
        assert exporter.process.poll() is None and rss_peak_mib(exporter.process.pid) < 256


def rss_peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_gzip_bomb_at_version_stays_within_the_pod_limit(tmp_path):
    import gzip

    from servers import http_server, send

    bomb = gzip.compress(b" " * (1 << 30), compresslevel=9)  # 1 GiB of spaces in ~1 MB

    from conftest import CAPTURE

    metrics = sorted((CAPTURE / "metrics").iterdir())[-1].read_bytes()  # a real vLLM 0.24.0 /metrics

    asked = {"version": 0}

    def answer(handler) -> None:  # type: ignore[no-untyped-def]
        if handler.path == "/version":
            asked["version"] += 1
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Encoding", "gzip")
            handler.send_header("Content-Length", str(len(bomb)))
            handler.end_headers()
            handler.wfile.write(bomb)
            return
        send(handler, 200, metrics, "text/plain; version=0.0.4")

    with http_server(answer) as base, running_exporter("--target", base + "/metrics", "--scrape-interval", "0.5") as exporter:
        exporter.wait_for(lambda s: value(s, "specdecode_source_up", upstream=base + "/metrics") == 1, "the target up")
        wait_until(lambda: asked["version"] >= 1, "/version asked")
        exporter.wait_for(lambda s: value(s, "specdecode_source_up", upstream=base + "/metrics") == 1, "a scrape after it")
        assert rss_peak_mib(exporter.process.pid) < 256  # was 1,318 MB: /version unpacked whole


class Output:
    """What a running process has written so far (its stdout, read without blocking)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        self.fd, self._seen = process.stdout.fileno(), b""
        os.set_blocking(self.fd, False)

    def text(self) -> str:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self._seen += chunk
        except BlockingIOError:
            pass
        return self._seen.decode("utf-8", "replace")


# --- (5)(9) counters never fall -----------------------------------------------------------------


def scrape_payloads() -> list[str]:
    from conftest import CAPTURE

    return [path.read_text() for path in sorted((CAPTURE / "metrics").glob("*.prom"))]


FINAL_ACCEPTED = 78455  # the capture's ground truth over its 13 snapshots (tests/test_scrape_e2e.py)


def test_scrape_counters_continue_across_a_kill_9_and_count_the_downtime_once(tmp_path):
    from servers import MetricsSequence, http_server

    state, sequence = tmp_path / "state", MetricsSequence(scrape_payloads())
    with http_server(sequence) as base:
        url = base + "/metrics"
        command, ready = serve("--target", url, "--state-dir", str(state), "--scrape-interval", "0.3")
        with running_process(command, ready, "sidecar") as process:
            wait_until(lambda: sequence.served >= 4, "four scrapes")
            saved_once_more(state)
            before = sample_at(ready, "specdecode_accepted_tokens_total", upstream=url)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
        with sequence.lock:
            sequence.served += 4  # the target counts on while the sidecar is down (its _created unchanged)
        with running_exporter("--target", url, "--state-dir", str(state), "--scrape-interval", "0.3") as exporter:
            first = value(exporter.scrape(), "specdecode_accepted_tokens_total", upstream=url) or 0
            assert first >= before  # was 1,197 → 394 for drafts: Prometheus read a reset
            samples = exporter.wait_for(lambda s: sequence.exhausted and value(s, "specdecode_accepted_tokens_total", upstream=url)
                                        == FINAL_ACCEPTED, "the ground truth")  # was: the downtime never counted
            assert value(samples, "specdecode_accepted_tokens_total", upstream=url) == FINAL_ACCEPTED


def test_an_emptied_and_restored_targets_file_changes_no_counter(tmp_path):
    from servers import MetricsSequence, http_server

    sequence, targets = MetricsSequence(scrape_payloads()), tmp_path / "targets.json"

    def write(groups: list[dict]) -> None:  # type: ignore[type-arg]
        (tmp_path / "next.json").write_text(json.dumps(groups))
        (tmp_path / "next.json").replace(targets)

    with http_server(sequence) as base:
        url = base + "/metrics"
        write([{"targets": [base.removeprefix("http://")]}])
        with running_exporter("--targets-file", str(targets), "--scrape-interval", "0.2") as exporter:
            exporter.wait_for(lambda s: (value(s, "specdecode_accepted_tokens_total", upstream=url) or 0) > 0, "counts")
            write([])  # a config-management rewrite: empty for a moment
            said = Output(exporter.process)
            wait_until(lambda: "targets reloaded" in said.text() and "targets=0" in said.text(), "the empty file read", timeout=15)
            during = value(exporter.scrape(), "specdecode_accepted_tokens_total", upstream=url)
            assert during is not None and during > 0  # was: every series dropped
            write([{"targets": [base.removeprefix("http://")]}])
            samples = exporter.wait_for(lambda s: sequence.exhausted and value(s, "specdecode_accepted_tokens_total", upstream=url)
                                        == FINAL_ACCEPTED, "the ground truth")
            assert value(samples, "specdecode_accepted_tokens_total", upstream=url) == FINAL_ACCEPTED


# --- (15)(16) sources that cannot be read, files that are gone ---------------------------------


def test_an_unreadable_log_is_down_and_its_warnings_do_not_wake_the_sidecar(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "vllm.log").mkdir()  # a directory where the log should be: it exists, it cannot be read
    stderr = logs / "sidecar.err"  # the sidecar's own log, in the watched directory
    port = free_port()
    with open(stderr, "wb") as sink:
        process = subprocess.Popen(cli("serve", "--listen", f"127.0.0.1:{port}", "--log", str(logs / "vllm.log")), stdout=sink, stderr=sink)
        try:
            from helpers import Exporter

            exporter = Exporter(process, f"http://127.0.0.1:{port}")
            wait_until(lambda: _up(exporter), "the sidecar up", timeout=30)
            exporter.wait_for(lambda s: value(s, "specdecode_source_up", upstream=str(logs / "vllm.log")) == 0, "source_up 0")  # was 1
            for index in range(5):  # wake-ups: each a pass over the unreadable path
                (logs / f"other-{index}").write_text("x")
                exporter.wait_for(lambda s: value(s, "specdecode_source_up", upstream=str(logs / "vllm.log")) == 0, "still down")
            assert stderr.read_text().count("cannot read log file") == 1  # said once; was 16 a second, each waking the next pass
        finally:
            process.terminate()
            process.wait(timeout=15)
    assert stderr.read_text().count("cannot read log file") == 1


def _up(exporter) -> bool:  # type: ignore[no-untyped-def]
    import httpx

    try:
        return httpx.get(exporter.base_url + "/-/healthy", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def test_deleted_glob_matched_files_are_closed_and_retired(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    paths = [logs / f"server-{index}.log" for index in range(40)]
    for path in paths:
        Tally().append(path, 5)
    with running_exporter("--log", str(logs / "*.log"), "--from-start", "--stale-after", "1s") as exporter:
        exporter.wait_for(lambda s: sum(1 for k in s if k[0] == "specdecode_source_up") == 40, "40 sources")
        for path in paths[:20]:
            path.unlink()
        pid = exporter.process.pid

        def open_deleted() -> int:
            return sum(1 for fd in os.listdir(f"/proc/{pid}/fd") if os.readlink(f"/proc/{pid}/fd/{fd}").endswith("(deleted)"))

        wait_until(lambda: open_deleted() == 0, "the deleted files closed (their disk freed)", timeout=15)
        samples = exporter.wait_for(lambda s: sum(1 for k in s if k[0] == "specdecode_source_up") == 20, "their sources retired")
        assert all(v == 1 for k, v in samples.items() if k[0] == "specdecode_source_up")  # no SourceDown for files deleted on purpose


# --- (17) a hand-edited state file, slow clients ------------------------------------------------


def test_a_state_file_with_wrong_types_starts_fresh_where_it_must_and_never_crash_loops(tmp_path):
    log, state, tally = tmp_path / "vllm.log", tmp_path / "state", Tally()
    tally.append(log, 100)
    state.mkdir()
    (state / "state.json").write_text(json.dumps({
        "version": 1,
        "files": {"not": "a list"},
        "counters": {"series": [{"key": {"upstream": str(log), "model_name": "m", "engine": "0", "source": "log"},
                                 "totals": {"drafts": "many"}, "variants": ["x"]}],
                     "sources": [{"upstream": str(log), "lines": "lots", "problems": [1, 2]}]},
        "scrapes": [1, 2, 3],
    }))
    with running_exporter("--log", str(log), "--from-start", "--state-dir", str(state)) as exporter:
        assert_exact(settle(exporter, [log], tally), tally)  # was: stopped at start, or raised every pass
        saved_once_more(state)
    assert json.loads((state / "state.json").read_text())["files"]


def test_a_client_that_never_finishes_its_headers_is_closed(tmp_path):
    import socket
    import time

    log = tmp_path / "vllm.log"
    log.touch()
    with running_exporter("--log", str(log)) as exporter:
        port = int(exporter.base_url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as slow:
            slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the rest
            started = time.monotonic()
            slow.settimeout(30)
            assert slow.recv(1024) == b""  # closed by the sidecar (was: held open for ever)
            assert time.monotonic() - started < 25


def test_a_hanging_target_does_not_slow_the_others(tmp_path):
    import threading

    from servers import MetricsSequence, http_server

    release, asked = threading.Event(), {"hanging": 0}

    def hanging(handler) -> None:  # type: ignore[no-untyped-def]
        asked["hanging"] += 1
        release.wait(30)

    sequence = MetricsSequence(scrape_payloads())
    try:
        with http_server(sequence) as good, http_server(hanging) as bad:
            args = ("--target", good + "/metrics", "--target", bad + "/metrics", "--scrape-interval", "0.2", "--scrape-timeout", "3")
            with running_exporter(*args) as exporter:
                exporter.wait_for(lambda s: sequence.exhausted and value(s, "specdecode_accepted_tokens_total", upstream=good + "/metrics")
                                  == FINAL_ACCEPTED, "every snapshot of the good target")  # was: one per 3 s timeout
                assert sequence.served >= 3 * asked["hanging"]  # was: each asked once per cycle, the same number of times
    finally:
        release.set()


# --- (8) two servers in one file ------------------------------------------------------------------


def test_two_servers_writing_one_log_are_called_out(tmp_path):
    log = tmp_path / "vllm.log"
    lines = []
    for index, line in enumerate(SPEC_LINES * 2):  # the spec lines of two API servers, interleaved
        lines.append(line.replace("pid=", "pid=7" if index % 2 else "pid=8", 1))
    log.write_text("\n".join(lines) + "\n")
    with running_exporter("--log", str(log), "--from-start") as exporter:
        said = Output(exporter.process)
        wait_until(lambda: "two vLLM servers seem to write one log" in said.text(), "the warning", timeout=20)
        assert said.text().count("two vLLM servers seem to write one log") == 1  # once, not per line


def test_a_state_dir_that_cannot_be_written_stops_the_sidecar_with_a_clear_error(tmp_path):
    """Issue 33 reversed issue 26's choice: a sidecar that runs on unlocked counts every line twice
    beside a second one (tests/test_reliability_second_probe.py holds the other ways a lock fails)."""
    log = tmp_path / "vllm.log"
    Tally().append(log, 20)
    (tmp_path / "a-file").write_text("")
    state = tmp_path / "a-file" / "state"  # cannot be created (ENOTDIR), as a read-only mount cannot be written (root ignores modes)
    command, _ = serve("--log", str(log), "--from-start", "--state-dir", str(state))
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "cannot hold the lock" in refused.stderr and "does not run unlocked" in refused.stderr
