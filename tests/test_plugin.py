"""The vLLM plugin without vLLM: its accumulator, its record writer, and the sidecar reading its records.

tests/test_plugin_in_vllm.py runs the same plugin inside the real vLLM package.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from helpers import Rendered, running_exporter, value

from exporter.config import DeriveSettings
from exporter.expose.metrics import MetricsRenderer
from exporter.intervals.pipeline import LogPipeline
from exporter.plugin.accumulator import StepAccumulator
from exporter.plugin.records import RecordError, decode, encode
from exporter.plugin.writer import EngineSlot, RecordWriter
from exporter.state.store import Store

# (drafts, draft tokens, accepted, accepted per position, draft tokens per position) of scheduler steps, k = 3
STEPS = [
    (2, 6, 3, [2, 1, 0], [2, 2, 2]),
    (1, 2, 2, [1, 1, 0], [1, 1, 0]),  # a shortened draft (n-gram): 2 of 3 positions drafted
    (3, 9, 0, [0, 0, 0], [3, 3, 3]),
]


def test_accumulator_sums_steps_exactly_and_starts_the_next_interval():
    acc = StepAccumulator(100.0)
    for step in STEPS:
        acc.add(*step)
    record = acc.take(101.0)
    assert record == {
        "start": 100.0, "end": 101.0, "steps": 3, "drafts": 6, "draft_tokens": 17, "accepted_tokens": 5,
        "accepted_per_position": [3, 2, 0], "draft_tokens_per_position": [6, 6, 5],
    }
    assert acc.take(102.0) is None  # nothing drafted since: no record …
    acc.add(*STEPS[0])
    assert acc.take(103.0)["start"] == 102.0  # … but the next interval still starts where the last ended


def test_accumulator_grows_positions_when_k_is_longer_than_first_seen():
    acc = StepAccumulator(0.0)
    acc.add(1, 1, 1, [1], [1])
    acc.add(1, 3, 2, [1, 1, 0], [1, 1, 1])
    assert acc.take(1.0)["accepted_per_position"] == [2, 1, 0]


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_writer_appends_one_line_per_engine_interval_and_the_config_once(tmp_path):
    now = [1000.0]
    writer = RecordWriter(str(tmp_path), interval=3600, clock=lambda: now[0])
    slots = [EngineSlot(0, "target"), EngineSlot(1, "target")]
    for slot in slots:
        writer.register(slot)
    writer.start({"method": "ngram", "num_speculative_tokens": 3, "model_name": "target"})
    for step in STEPS:
        slots[1].accumulator.add(*step)
    now[0] = 1001.0
    writer.flush()  # engine 0 drafted nothing: only engine 1 writes
    writer.close()
    (config, interval) = records(tmp_path / os.path.basename(writer.path))
    assert config["kind"] == "config" and config["num_speculative_tokens"] == 3 and config["specdecode_plugin"] == 1
    assert interval["engine"] == 1 and interval["end"] == 1001.0
    assert (interval["drafts"], interval["draft_tokens"], interval["accepted_tokens"]) == (6, 17, 5)
    assert interval["draft_tokens_per_position"] == [6, 6, 5] and interval["errors"] == 0


def test_writer_rotates_by_size_and_never_splits_a_line(tmp_path):
    writer = RecordWriter(str(tmp_path), interval=3600, max_bytes=600)
    slot = EngineSlot(0, "m")
    writer.register(slot)
    writer.start({})
    for _ in range(10):
        slot.accumulator.add(*STEPS[0])
        writer.flush()
    writer.close()
    rotated = tmp_path / (os.path.basename(writer.path) + ".1")
    assert rotated.exists()
    for path in (rotated, tmp_path / os.path.basename(writer.path)):
        assert all(decode(line) is not None for line in path.read_text().splitlines())  # whole records only


def test_writer_errors_on_a_path_that_is_a_file_are_counted_and_swallowed(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    writer = RecordWriter(str(blocker), interval=3600)
    slot = EngineSlot(0, "m")
    writer.register(slot)
    writer.start({})
    slot.accumulator.add(*STEPS[0])
    writer.flush()
    writer.close()
    assert writer.errors == 2  # the config record and the interval record, both refused, nothing raised


@pytest.mark.parametrize(
    "line, reason",
    [
        ('{"specdecode_plugin":1,"kind":"interval","start":1,"end":2,"drafts":1,"draft_tokens":1,"accepted_tokens":2,"accepted_per_position":[2]}', "inconsistent_counts"),
        ('{"specdecode_plugin":1,"kind":"interval","start":1,"end":2,"drafts":-1,"draft_tokens":1,"accepted_tokens":0}', "bad_value"),
        ('{"specdecode_plugin":1,"kind":"interval","start":2,"end":1,"drafts":1,"draft_tokens":1,"accepted_tokens":0}', "bad_value"),
        ('{"specdecode_plugin":1,"kind":"interv', "unparsable_record"),
        ('{"specdecode_plugin":9,"kind":"interval"}', "unknown_record_version"),
    ],
)
def test_broken_records_are_errors_with_a_reason(line, reason):
    with pytest.raises(RecordError) as error:
        decode(line)
    assert error.value.reason == reason


def plugin_lines(base: float = 10.0) -> bytes:
    config = {"kind": "config", "time": base - 9, "pid": 7, "vllm_version": "0.24.0", "model_name": "target", "model": "/m",
              "method": "ngram", "num_speculative_tokens": 3, "draft_model": None, "draft_tensor_parallel_size": 1}
    intervals = [
        {"kind": "interval", "time": base + i, "pid": 7, "engine": 0, "model_name": "target", "start": base - 1 + i, "end": base + i,
         "steps": 3, "drafts": 6, "draft_tokens": 17, "accepted_tokens": 5, "accepted_per_position": [3, 2, 0],
         "draft_tokens_per_position": [6, 6, 5], "errors": 0}
        for i in range(4)
    ]
    return b"".join(encode(record) for record in [config, *intervals])


def test_records_become_exact_series_with_the_config_as_info():
    store = Store({"1h": 3600.0}, clock=lambda: 20.0)
    pipeline = LogPipeline(store, "/run/plugin", source_kind="plugin")
    pipeline.consume_bytes(plugin_lines() + b'{"specdecode_plugin":1,"kind":"something-new"}\n', read_at=20.0)
    rendered = Rendered(MetricsRenderer(store, DeriveSettings(health_window="1h")))
    labels = {"upstream": "/run/plugin", "model_name": "target", "engine": "0", "source": "plugin"}
    assert rendered.get_sample_value("specdecode_drafts_total", labels) == 24
    assert rendered.get_sample_value("specdecode_accepted_tokens_per_position_total", {**labels, "position": "1"}) == 8
    assert rendered.get_sample_value("specdecode_draft_tokens_per_position_total", {**labels, "position": "2"}) == 20
    assert rendered.get_sample_value("specdecode_mean_acceptance_length", {**labels, "window": "1h"}) == pytest.approx(1 + 20 / 24)
    info = {"upstream": "/run/plugin", "model_name": "target", "method": "ngram", "num_speculative_tokens": "3", "draft_model": "", "server_version": "0.24.0"}
    assert rendered.get_sample_value("specdecode_info", info) == 1
    assert rendered.get_sample_value("specdecode_source_up", {"source": "plugin", "upstream": "/run/plugin"}) == 1
    assert rendered.get_sample_value("specdecode_log_parse_errors_total", {"upstream": "/run/plugin", "reason": "unknown_record_version"}) is None


@pytest.mark.slow  # a running sidecar
def test_serve_follows_a_plugin_directory_and_cross_checks_a_log_against_it(tmp_path):
    """Plugin records and a log line of the same server: the log is compared with the exact records."""
    plugin_dir = tmp_path / "plugin"
    plugin_dir.mkdir()
    base = time.time() - 5  # recent records, so they are inside the windows
    (plugin_dir / "specdecode-host-7.jsonl").write_bytes(plugin_lines(base))
    log = tmp_path / "server.log"
    log.write_text(
        "(APIServer pid=7) INFO 12-02 08:19:44 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 1.83, "
        "Accepted throughput: 5.00 tokens/s, Drafted throughput: 17.00 tokens/s, Accepted: 20 tokens, Drafted: 68 tokens, "
        "Per-position acceptance rate: 0.500, 0.333, 0.000, Avg Draft acceptance rate: 29.4%\n"
    )
    with running_exporter("--vllm-plugin-dir", str(plugin_dir), "--log", str(log), "--from-start", "--model-name", "target") as exporter:
        samples = exporter.wait_for(
            lambda s: value(s, "specdecode_drafts_total", source="plugin") == 24 and value(s, "specdecode_drafts_total", source="log"),
            "both sources read",
        )
        checks = exporter.get_json("/api/v1/status")["cross_check"]
        mine = [c for c in checks if c["quantity"] == "mean_acceptance_length"]
        assert mine and all(c["reference_source"] == "plugin" and c["compared_source"] == "log" for c in mine)
        assert all(c["agree"] for c in mine)
        assert value(samples, "specdecode_source_up", source="plugin", upstream=str(plugin_dir)) == 1
        # a record appended later is followed like a log line
        with open(plugin_dir / "specdecode-host-7.jsonl", "ab") as out:
            out.write(plugin_lines(base + 1).splitlines(keepends=True)[-1])
        exporter.wait_for(lambda s: value(s, "specdecode_drafts_total", source="plugin") == 30, "the appended record")
