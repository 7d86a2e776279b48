"""Start the real sidecar (and helpers) as processes on loopback, and read their CPU and memory."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

_TICKS = os.sysconf("SC_CLK_TCK")
_SPEC_LINES = re.compile(r"^specdecode_log_spec_lines_total\{[^}]*\} (\S+)$", re.MULTILINE)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (from /proc, no sampling thread)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _status_bytes(pid: int, field: str) -> int:
    """A memory field of /proc/PID/status (kB there), in bytes; 0 when absent."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def rss_bytes(pid: int) -> int:
    return _status_bytes(pid, "VmRSS")


def peak_rss_bytes(pid: int) -> int:
    """The process's peak resident set so far (VmHWM)."""
    return _status_bytes(pid, "VmHWM")


@dataclass
class Sidecar:
    process: subprocess.Popen[bytes]
    url: str
    client: httpx.Client

    def metrics(self) -> str:
        return self.client.get(self.url + "/metrics").text

    def status(self) -> dict[str, Any]:
        return self.client.get(self.url + "/api/v1/status").json()  # type: ignore[no-any-return]

    def spec_lines(self) -> float:
        return sum(float(value) for value in _SPEC_LINES.findall(self.metrics()))


def wait_until(check, what: str, timeout: float = 60.0, every: float = 0.02) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.HTTPError:
            pass
        time.sleep(every)
    raise RuntimeError(f"timed out waiting for {what}")


def _stop(process: subprocess.Popen) -> None:  # type: ignore[type-arg]
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


@contextmanager
def sidecar(*args: str) -> Iterator[Sidecar]:
    """`specdecode-exporter serve ARGS` on a free loopback port, ready once /-/healthy answers."""
    port = free_port()
    command = [sys.executable, "-m", "exporter", "--log-level", "warning", "serve", "--listen", f"127.0.0.1:{port}", *args]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = httpx.Client(timeout=30.0)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_until(lambda: process.poll() is None and client.get(url + "/-/healthy").status_code == 200, "the sidecar to start")
        except RuntimeError:
            process.kill()
            raise RuntimeError("sidecar did not start: " + (process.communicate()[1] or b"").decode()[-2000:]) from None
        yield Sidecar(process, url, client)
    finally:
        client.close()
        _stop(process)


@contextmanager
def background(command: list[str], ready_line: str | None = None) -> Iterator[subprocess.Popen[str]]:
    """A helper process, optionally waited for until it prints `ready_line` (its output is discarded otherwise)."""
    output = subprocess.PIPE if ready_line is not None else subprocess.DEVNULL  # an unread pipe would block it
    process = subprocess.Popen(command, stdout=output, stderr=subprocess.DEVNULL, text=True)
    try:
        if ready_line is not None:
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            if line != ready_line:
                raise RuntimeError(f"{command[0]} did not start (said {line!r})")
        yield process
    finally:
        _stop(process)
