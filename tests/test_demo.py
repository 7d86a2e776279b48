"""`demo` as a user runs it: it prints where to look, serves data, and Ctrl-C stops everything."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import httpx
import pytest
from helpers import free_port, parse_samples, value, wait_http
from waiting import wait_until

pytestmark = pytest.mark.slow  # the demo command as a process


def test_demo_prints_urls_serves_both_sources_and_stops_cleanly_on_ctrl_c():
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "exporter", "demo", "--listen", f"127.0.0.1:{port}", "--log-interval", "1", "--speed", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        while not any("Ctrl-C" in line for line in lines):
            line = process.stdout.readline()
            assert line, "demo exited early:\n" + "".join(lines)
            lines.append(line)
        text = "".join(lines)
        assert f"http://127.0.0.1:{port}/" in text and "/api/v1/status" in text
        log_path = re.search(r"log: (\S+)", text).group(1)  # type: ignore[union-attr]
        wait_http(f"http://127.0.0.1:{port}/-/healthy", process, "demo")  # URLs are printed just before it binds

        def both_sources() -> bool:
            samples = parse_samples(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text)
            return bool(
                value(samples, "specdecode_mean_acceptance_length", source="log")
                and value(samples, "specdecode_mean_acceptance_length", source="metrics")
            )

        wait_until(both_sources, "data from both sources")
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=20)
    assert process.returncode == 0, output
    assert "demo stopped" in output
    assert not __import__("os").path.exists(log_path)  # its temporary files are gone
