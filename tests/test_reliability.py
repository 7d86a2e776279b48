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


def counted_at(ready: str) -> float:
    import httpx
    from helpers import parse_samples

    return value(parse_samples(httpx.get(ready.replace("/-/healthy", "/metrics"), timeout=5).text), "specdecode_log_lines_total") or 0.0


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
        wait_until(lambda: problems_at(ready, "line_too_long") >= 1, "the long line seen")
        saved_once_more(state)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    with open(log, "a") as handle:  # its end looks like a spec line: read from its middle, it would count as one
        handle.write(" " + SPEC_LINES[0] + "\n")
    with running_exporter("--log", str(log), "--state-dir", str(state), "--max-line-bytes", "4096") as exporter:
        samples = settle(exporter, [log], tally)
        assert value(samples, "specdecode_log_spec_lines_total") == tally.spec_lines == 12  # was 13


def truncations_at(ready: str) -> float:
    import httpx
    from helpers import parse_samples

    return value(parse_samples(httpx.get(ready.replace("/-/healthy", "/metrics"), timeout=5).text), "specdecode_log_truncations_total") or 0.0


def problems_at(ready: str, reason: str) -> float:
    import httpx
    from helpers import parse_samples

    samples = parse_samples(httpx.get(ready.replace("/-/healthy", "/metrics"), timeout=5).text)
    return value(samples, "specdecode_log_parse_errors_total", reason=reason) or 0.0


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
        wait_until(lambda: truncations_at(ready) >= 1, "the truncation seen")  # the same bytes again would hide it
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
            before = accepted_at(ready, url)
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


def accepted_at(ready: str, url: str) -> float:
    import httpx
    from helpers import parse_samples

    samples = parse_samples(httpx.get(ready.replace("/-/healthy", "/metrics"), timeout=5).text)
    return value(samples, "specdecode_accepted_tokens_total", upstream=url) or 0.0


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
