"""Time from skewed or silent clocks (issue 33): a stamp in the future is taken at the latest moment
its line can have been written; a restart's backlog whose log ends with health-probe lines (which
carry no time) lands on its own hours, so a recent collapse is not pooled away with the past.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from exporter.config import DeriveSettings
from exporter.intervals.clock import FUTURE_SLACK_SECONDS
from exporter.intervals.pipeline import LogPipeline, pipelines_into
from exporter.judge.memory import health_memory
from exporter.sources.logsource import LogSource
from exporter.state.reference import ReferenceRule
from exporter.state.store import Store


def _record(end: float, drafts: int = 100) -> str:
    return json.dumps({"specdecode_plugin": 1, "kind": "interval", "time": end, "pid": 1, "engine": 0, "model_name": "m",
                       "start": end - 1.0, "end": end, "steps": 10, "drafts": drafts, "draft_tokens": 4 * drafts, "accepted_tokens": 2 * drafts,
                       "accepted_per_position": [drafts, drafts // 2, drafts // 4, drafts - drafts // 2 - drafts // 4],
                       "draft_tokens_per_position": [drafts] * 4, "errors": 0})


def _memory_store() -> Store:
    return Store({"5m": 300}, health=health_memory(DeriveSettings(), ReferenceRule(), 300.0))


def test_a_record_stamped_a_day_ahead_is_taken_when_its_file_was_last_written():
    written = 1.8e9
    records = [_record(written - 600 + index) for index in range(600)]
    records[300] = _record(written + 86_400)  # a vLLM host whose clock ran a day ahead, once
    store = _memory_store()
    LogPipeline(store, "plugin-dir", clock="log", year_reference=written, source_kind="plugin").consume_block("\n".join(records).encode(), written)
    (series,) = store.snapshot().series
    assert series.memory is not None and series.memory.last_at is not None
    assert series.memory.last_at <= written + FUTURE_SLACK_SECONDS  # was a day ahead: the current period ended tomorrow
    assert series.lifetime.end is not None and series.lifetime.end <= written + FUTURE_SLACK_SECONDS


def _spec(stamp: float, accepted: int, rates: str, length: str) -> str:
    local = time.strftime("%m-%d %H:%M:%S", time.gmtime(stamp))  # the log's zone: UTC
    return (f"(APIServer pid=7) INFO {local} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: {length}, "
            f"Accepted throughput: {accepted / 10:.2f} tokens/s, Drafted throughput: 400.00 tokens/s, Accepted: {accepted} tokens, "
            f"Drafted: 4000 tokens, Per-position acceptance rate: {rates}, Avg Draft acceptance rate: {accepted / 40:.1f}%")


def test_a_backlog_ending_with_health_probes_keeps_its_hours_and_its_recent_collapse(tmp_path: Path, monkeypatch):
    """Two healthy hours, six minutes of a collapsed drafter, then eight minutes of health probes only
    (an idle server logs no stats): its last stamped line is minutes off a quarter hour before the
    file's last change, so no zone was learned and the whole backlog was pooled at its arrival: ok.
    The file is the server's own (born before its first line: a test cannot write it over two hours,
    so its birth time is set as the server's would be; a copy teaches no zone, issue 32)."""
    now = time.time()
    monkeypatch.setattr("exporter.sources.logsource.born_at", lambda fd: now - 3 * 3600)
    idle_from = now - 8 * 60
    lines = [_spec(idle_from - 7200 + 10 * index, 2000, "0.700, 0.500, 0.400, 0.400", "3.00") for index in range(684)]
    lines += [_spec(idle_from - 360 + 10 * index, 100, "0.100, 0.000, 0.000, 0.000", "1.10") for index in range(36)]
    lines += ['(APIServer pid=7) INFO:     10.0.0.1:43210 - "GET /health HTTP/1.1" 200 OK'] * 48
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(lines) + "\n")
    os.utime(log, (now, now))
    store = _memory_store()
    source = LogSource([str(log)], store, pipelines_into(store), from_start=True, file_events=False)
    source.poll_once()
    source.stop()
    (series,) = store.snapshot().series
    assert series.memory is not None and series.memory.state == "broken"  # was ok: two hours pooled as now
    assert series.memory.last_at is not None and abs(series.memory.last_at - (idle_from - 10)) < 60  # the collapse's own time
