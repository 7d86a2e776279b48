"""The smaller things a new user saw (issue #32, item 6): /api/v1/status's longer windows said
`recovering` during an ongoing drop; an empty log, or one without spec lines, exited 0 with no word
of why; `serve --log` with a path or glob that matches nothing said nothing."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from exporter.config import DeriveSettings
from exporter.intervals.pipeline import LogPipeline, pipelines_into
from exporter.judge.memory import health_memory
from exporter.judge.status import snapshot_report
from exporter.simulate.longlog import LongLog, Phase
from exporter.simulate.scenarios import SCENARIOS
from exporter.sources.logsource import LogSource
from exporter.state.reference import ReferenceRule
from exporter.state.store import Store

START = 1795000000.0
WINDOWS = {"1m": 60.0, "5m": 300.0, "1h": 3600.0}  # the demo's windows; it judges the 1m one


def test_longer_windows_never_say_recovering_during_an_ongoing_drop(tmp_path):
    """The demo's setup: health window 1m, windows 1m, 5m, 1h; the drop is 50 s old at the read."""
    drop_off = replace(SCENARIOS["drop-off"], drop_after=None)
    path = tmp_path / "vllm.log"
    LongLog([Phase(0, drop_off), Phase(3600.0, drop_off, factor=0.5)], hours=(3600 + 50) / 3600, start_time=START, log_interval=5.0).write(str(path))
    settings = DeriveSettings(health_window="1m")
    end = START + 3600 + 50
    store = Store(WINDOWS, clock=lambda: end, health=health_memory(settings, ReferenceRule(), 60.0))
    LogPipeline(store, str(path), clock="log", year_reference=end).consume(path.read_text().splitlines(), read_at=end)
    entries = {entry["window"]: entry for entry in snapshot_report(store.snapshot(), settings, WINDOWS)["series"]}
    assert entries["1m"]["health"] == "degraded"  # the judged window: the drop
    for name in ("5m", "1h"):  # they pool the hour before it: healthy numbers, but no recovery
        assert (entries[name]["health"], entries[name]["reason_code"]) == ("degraded", "unhealthy_judged"), entries[name]["reason"]
        assert "recovering" not in entries[name]["reason"] and "pools the traffic before it turned degraded" in entries[name]["reason"]


def analyze_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exporter", "analyze", "--no-progress", *args], capture_output=True, text=True, timeout=60)


def test_an_empty_log_and_one_without_spec_lines_say_why_and_exit_4(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("")
    done = analyze_cli(str(empty))
    assert done.returncode == 4 and f"{empty} is empty" in done.stderr and "is empty (no line was read)" in done.stdout
    quiet = tmp_path / "vllm.log"  # a server without --speculative-config: stats lines, access lines, no spec line
    quiet.write_text("(APIServer pid=7) INFO 12-01 10:00:10 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
                     "Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%\n"
                     'INFO:     127.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OK\n')
    done = analyze_cli("--format", "json", str(quiet))
    assert done.returncode == 4 and "none a speculative-decoding line" in done.stderr and "--speculative-config" in done.stderr
    assert "none a speculative-decoding line" in json.loads(done.stdout)["nothing_to_report"]


def test_a_pattern_that_matches_nothing_is_a_source_down_with_why_until_a_file_appears(tmp_path, caplog):
    store = Store({"5m": 300.0})
    pattern, missing = str(tmp_path / "logs" / "*.log"), str(tmp_path / "vllm.log")
    source = LogSource([pattern, missing], store, pipelines_into(store))
    with caplog.at_level(logging.WARNING, logger="exporter.sources.logsource"):
        source.poll_once()
        source.poll_once()
    said = {s.upstream: (s.up, s.last_error) for s in store.snapshot().sources}
    assert said == {pattern: (False, f"no file matches {pattern} (yet)"), missing: (False, f"no such file: {missing} (yet)")}
    warnings = [record.getMessage() for record in caplog.records]
    assert sum("no file matches the log pattern" in m for m in warnings) == 1 and sum("does not exist" in m for m in warnings) == 1
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text("")
    Path(missing).write_text("")
    source.poll_once()
    source.stop()
    assert {s.upstream: (s.up, s.last_error) for s in store.snapshot().sources} == {str(tmp_path / "logs" / "a.log"): (True, None),
                                                                                   missing: (True, None)}


def test_the_demos_healthy_period_and_reference_take_nothing_after_the_drop(tmp_path):
    """The demo (drop-off: EAGLE-3, k = 4, 80 drafts/s, stats every 5 s, acceptance halving at 120 s,
    a 1m judged window): its 'healthy before the drop' period and its reference took in about 35 s of
    post-drop data (`L fell from 2.98`, the healthy L was 3.37). Read as serve reads it."""
    scenario = replace(SCENARIOS["drop-off"], drop_after=None)
    drop, path = 120.0, tmp_path / "vllm.log"
    LongLog([Phase(0, scenario), Phase(drop, scenario, factor=0.5)], hours=300 / 3600, start_time=START, log_interval=5.0,
            drafts_per_second=80.0).write(str(path))
    lines = path.read_text().splitlines()
    before = [line for line in lines if "SpecDecoding" in line][: int(drop / 5.0) - 1]  # the intervals that end before the drop
    drafts = sum(int(line.split("Drafted: ")[1].split()[0]) // 4 for line in before)  # EAGLE-3 drafts k tokens: D = T/k
    accepted = sum(int(line.split("Accepted: ")[1].split()[0]) for line in before)
    healthy = 1 + accepted / drafts
    settings = DeriveSettings(health_window="1m")
    end = START + 300
    store = Store(WINDOWS, clock=lambda: end, health=health_memory(settings, ReferenceRule(), 60.0))
    LogPipeline(store, str(path), clock="log", year_reference=end).consume(lines, read_at=end)
    entry = {e["window"]: e for e in snapshot_report(store.snapshot(), settings, WINDOWS)["series"]}["1m"]
    assert entry["health"] == "degraded" and f"L fell from {healthy:.2f}" in entry["reason"]
    reference = entry["reference"]
    assert reference["end"] <= START + drop and reference["mean_acceptance_length"] == pytest.approx(healthy, abs=1e-6)
    (period,) = entry["earlier_periods"]  # healthy, up to the drop; the drop's intervals are the degraded period's
    assert period["health"] == "healthy" and period["end"] <= START + drop and period["mean_acceptance_length"] == pytest.approx(healthy, abs=1e-6)
    assert entry["current_period"]["start"] <= START + drop and entry["current_period"]["began_by"] == "health"
