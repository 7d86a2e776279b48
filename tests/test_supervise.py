"""`supervise`: the sidecar's container keeps running whatever the sidecar does (issue 34).

Real processes: the supervisor runs the real `serve` (or a command that fails at once), is watched
from outside through its log and the child's pid, and is stopped with SIGTERM as kubelet stops it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from helpers import cli, free_port
from waiting import wait_until

pytestmark = pytest.mark.slow  # processes

STARTED = re.compile(r"started pid (\d+)")


def supervisor(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "supervise.log"
    with log.open("wb") as stderr:  # the child holds its own copy of the descriptor
        process = subprocess.Popen(cli("supervise", *args), stdout=subprocess.DEVNULL, stderr=stderr)
    return process, log


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def pids(log: Path) -> list[int]:
    return [int(p) for p in STARTED.findall(log.read_text(errors="replace"))]


def stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=30)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_sidecar_that_exits_is_restarted_and_the_container_keeps_running(tmp_path):
    process, log = supervisor(tmp_path, "--backoff-max", "1", "--", "serve", "--no-such-flag")
    try:
        wait_until(lambda: len(pids(log)) >= 3, "three starts of a sidecar that exits at once", timeout=30, every=0.2)
        assert process.poll() is None  # the container's process: still running, so the pod stays Ready
        assert "exited with 2" in log.read_text() and "restarting in" in log.read_text()
    finally:
        assert stop(process) == 0


def test_a_hung_sidecar_is_killed_and_started_again_and_sigterm_reaches_the_child(tmp_path):
    port = free_port()
    (tmp_path / "vllm.log").write_text("")
    process, log = supervisor(tmp_path, "--health-url", f"http://127.0.0.1:{port}/-/healthy", "--health-every", "0.5",
                              "--health-failures", "2", "--start-grace", "1", "--backoff-max", "1", "--stop-timeout", "2",
                              "--", "serve", "--log", str(tmp_path / "vllm.log"), "--listen", f"127.0.0.1:{port}")
    try:
        wait_until(lambda: answers(f"http://127.0.0.1:{port}/-/healthy"), "the sidecar answers", timeout=60, every=0.3)
        (first,) = pids(log)
        os.kill(first, signal.SIGSTOP)  # hung: alive, not answering
        wait_until(lambda: len(pids(log)) >= 2, "a second sidecar after the hung one", timeout=60, every=0.3)
        assert not alive(first) or Path(f"/proc/{first}/stat").read_text().split()[2] == "Z"
        assert "did not answer" in log.read_text()
        wait_until(lambda: answers(f"http://127.0.0.1:{port}/-/healthy"), "the new sidecar answers", timeout=60, every=0.3)
        second = pids(log)[-1]
        assert stop(process) == 0
        assert not alive(second)  # SIGTERM went to the child, which exited before the supervisor did
    finally:
        if process.poll() is None:
            process.kill()
