"""A copied log is never shifted by its modification time (issue #32, item 2): the zone of vLLM's
year- and zone-less stamps is learned from the file's mtime only where the file is the server's own
(born before its first line by at least the span of its lines: sources/written.py, clock.py
`copied_because`), and the report names the zone used and where it comes from.

The real seed-incident capture (tests/golden/vllm-0.26.0/seed-incident, a run at 12:47–13:08 UTC)
is the log; its copies are made the ways logs are copied."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from conftest import GOLDEN
from helpers import cli, free_port, wait_http
from waiting import wait_until

from exporter.report.formats import render_table

RUN = GOLDEN / "vllm-0.26.0" / "seed-incident" / "server.log"
STAMP = re.compile(r"(?:(?<=INFO )|(?<=WARNING )|(?<=ERROR )|(?<=DEBUG ))(\d\d-\d\d \d\d:\d\d:\d\d)")
UTC_ENV = {**os.environ, "TZ": "UTC"}


def stamps(text: str) -> list[str]:
    return STAMP.findall(text)


def as_utc(stamp: str, year: int) -> float:
    return datetime.strptime(f"{year}-{stamp}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()


def analyzed(path: Path) -> dict[str, Any]:
    done = subprocess.run(cli("analyze", "--format", "json", "--no-progress", str(path)), env=UTC_ENV, capture_output=True, text=True,
                          check=True, timeout=60)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def moved(text: str, to_end_at: datetime) -> tuple[str, float]:
    """The capture with every stamp moved so that its last is `to_end_at` (a run that ended then); its first spec line's time."""
    last = datetime.strptime(f"{to_end_at.year}-{stamps(text)[-1]}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    delta = to_end_at.replace(microsecond=0) - last

    def move(match: re.Match[str]) -> str:
        at = datetime.strptime(f"{to_end_at.year}-{match[1]}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC) + delta
        return at.strftime("%m-%d %H:%M:%S")

    out = STAMP.sub(move, text)
    first_spec = next(line for line in out.splitlines() if "SpecDecoding metrics" in line)
    return out, as_utc(stamps(first_spec)[0], to_end_at.year)


def test_a_copy_made_hours_after_the_run_is_read_on_its_own_stamps(tmp_path):
    """`git clone`, `cp`, `scp`: the copy is made (born and modified) five hours after the run's last
    line; that offset is a whole number of hours, which a zone learned from the mtime would take."""
    ended = datetime.now(UTC) - timedelta(hours=5, seconds=3)
    text, first = moved(RUN.read_text(), ended)
    copy = tmp_path / "server.log"
    copy.write_text(text)  # made now, in one go
    report = analyzed(copy)
    (series,) = report["series"]
    assert series["start"] is not None and abs(series["start"] - first) <= 10  # its own stamps (the first interval begins at its line), not 5 h off
    zone = report["sources"][0]["log_zone"]
    assert zone["from"] == "assumed" and "a copy" in zone["why"]
    table = render_table(report)
    assert "stamps read in local, UTC+00:00: assumed" in table and "--log-timezone" in table


def test_a_copy_that_kept_the_originals_time_is_read_on_its_own_stamps(tmp_path):
    """`cp -p`, `tar`, `kubectl cp`: the mtime is carried over; here it lands 4 h 15 min after the run's
    last line (a quarter-hour offset a learned zone would take as UTC−4:15)."""
    copy = tmp_path / "server.log"
    shutil.copy2(RUN, copy)
    last = as_utc(stamps(RUN.read_text())[-1], 2026)
    os.utime(copy, (last + 4.25 * 3600 + 2, last + 4.25 * 3600 + 2))
    report = analyzed(copy)
    (series,) = report["series"]
    first_spec = next(line for line in RUN.read_text().splitlines() if "SpecDecoding metrics" in line)
    assert abs(series["start"] - as_utc(stamps(first_spec)[0], 2026)) <= 10  # 12:49 UTC, as the run was
    assert report["sources"][0]["log_zone"]["from"] == "assumed" and "kept the original's time" in report["sources"][0]["log_zone"]["why"]


def test_serve_learns_no_zone_from_a_copy(tmp_path):
    """serve --from-start on the copy: neither its mtime nor its backlog (lines hours old, read in quick
    blocks) teaches a zone; the status says none is known (its backlog arrives now, as where no file tells)."""
    ended = datetime.now(UTC) - timedelta(hours=5, seconds=3)
    text, _ = moved(RUN.read_text(), ended)
    copy = tmp_path / "server.log"
    copy.write_text(text)
    port = free_port()
    process = subprocess.Popen(cli("serve", "--from-start", "--log", str(copy), "--listen", f"127.0.0.1:{port}"), env=UTC_ENV,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + "/-/healthy", process, "serve")
        lines = text.count("\n")

        def status() -> dict[str, Any] | None:
            report: dict[str, Any] = httpx.get(base + "/api/v1/status", timeout=30).json()
            return report if report["sources"] and report["sources"][0]["lines_read"] >= lines and report["series"] else None

        report = wait_until(status, "serve to read the copy", timeout=60, every=0.2)
    finally:
        process.terminate()
        process.wait(timeout=15)
    assert report["sources"][0]["log_zone"] == {"zone": "unknown", "utc_offset_seconds": None, "from": "not yet learned"}


def test_a_file_is_born_when_made_and_no_utime_moves_that(tmp_path):
    from exporter.sources.written import born_at

    path = tmp_path / "made.log"
    before = time.time()
    path.write_text("x\n")
    os.utime(path, (before - 86400, before - 86400))  # what a copy that keeps the original's time does
    with open(path, "rb") as handle:
        born = born_at(handle.fileno())
    assert born is not None and before - 1 <= born <= time.time() + 1


def test_the_evidence_rule():
    from exporter.intervals.clock import copied_because

    first, last, modified = 1000.0, 1000.0 + 3600, 1000.0 + 3600 + 1
    assert copied_because(first, last, modified, born=first - 20) is None  # the server's own file: born before its first line
    assert "a copy" in (copied_because(first, last, modified, born=modified - 0.2) or "")  # cp: born as it was modified
    assert "kept the original's time" in (copied_because(first, last, modified, born=modified + 600) or "")  # cp -p
    assert "birth time" in (copied_because(first, last, modified, born=None) or "")  # nothing tells: never learned
    assert "too little" in (copied_because(first, first + 1, modified, born=modified - 0.1) or "")
