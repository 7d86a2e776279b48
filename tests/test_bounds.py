"""Counts bounded to what a counter can hold and per-position lists to a sane k (exporter/limits.py),
wherever they are read — log lines, plugin records, scraped bodies, the saved state — and every
entry of a hand-edited state file that is dropped is said in the log (issue 33).
"""

from __future__ import annotations

import json
import logging

import pytest

from exporter.config import DeriveSettings
from exporter.expose.metrics import MetricsRenderer
from exporter.intervals.from_log import LogInterpreter
from exporter.intervals.scrapes import ScrapeInterpreter
from exporter.limits import MAX_COUNT, MAX_POSITIONS
from exporter.plugin.records import RecordError, decode
from exporter.records import RawLine
from exporter.sources.position import FilePosition
from exporter.state.persist import restore_counters
from exporter.state.store import Store

HUGE = 10**400


def _record(**changes: object) -> str:
    record = {"specdecode_plugin": 1, "kind": "interval", "time": 1.8e9, "pid": 1, "engine": 0, "model_name": "m", "start": 1.8e9 - 1,
              "end": 1.8e9, "steps": 4, "drafts": 4, "draft_tokens": 8, "accepted_tokens": 3, "accepted_per_position": [2, 1],
              "draft_tokens_per_position": [4, 4], "errors": 0}
    return json.dumps({**record, **changes})


@pytest.mark.parametrize("changes", [
    {"drafts": HUGE, "draft_tokens": HUGE, "accepted_tokens": 3},  # the probe's 400-digit count
    {"draft_tokens": MAX_COUNT + 1},
    {"accepted_per_position": [0] * 100_000, "accepted_tokens": 0},  # the probe's 100,000 positions (284 MB of RSS)
])
def test_a_plugin_record_beyond_what_a_counter_holds_is_refused_as_bad_value(changes):
    with pytest.raises(RecordError) as refused:
        decode(_record(**changes))
    assert refused.value.reason == "bad_value"


def test_a_refused_record_leaves_metrics_and_status_answering():
    from exporter.intervals.pipeline import LogPipeline
    from exporter.judge.status import snapshot_report

    store = Store({"5m": 300})
    pipeline = LogPipeline(store, "plugin-dir", source_kind="plugin", log_format="plain")
    pipeline.consume_block("\n".join([_record(), _record(drafts=HUGE, draft_tokens=HUGE)]).encode(), 1.8e9)
    assert "specdecode_drafts_total{" in MetricsRenderer(store, DeriveSettings()).render()  # was OverflowError: 500, for good
    json.dumps(snapshot_report(store.snapshot(), DeriveSettings(), store.window_seconds, store.pairs))
    assert store.snapshot().sources[0].problems == {"bad_value": 1}


LINE = ("(APIServer pid=1) INFO 12-02 08:19:44 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.00, "
        "Accepted throughput: 1.00 tokens/s, Drafted throughput: 2.00 tokens/s, Accepted: {accepted} tokens, Drafted: {drafted} tokens, "
        "Per-position acceptance rate: {rates}, Avg Draft acceptance rate: 50.0%")


@pytest.mark.parametrize("numbers", [
    {"accepted": str(HUGE), "drafted": str(HUGE), "rates": "0.500, 0.500"},
    {"accepted": "10", "drafted": "20", "rates": ", ".join(["0.010"] * (MAX_POSITIONS + 1))},
])
def test_a_log_line_beyond_the_bounds_is_bad_value_on_both_paths(numbers):
    from exporter.intervals.batch import interpret_block

    line = LINE.format(**numbers)
    assert LogInterpreter("log").feed(RawLine("log", line, 1.8e9)).problem.reason == "bad_value"  # type: ignore[union-attr]
    batched = interpret_block(LogInterpreter("log"), [line], 1.8e9)
    assert [item.problem.reason for item in batched.items if item.problem] == ["bad_value"]  # type: ignore[union-attr]


def test_a_scraped_series_beyond_the_bounds_is_invalid_values():
    body = ('vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 1e300\n'
            'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 1e300\n'
            'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 1\n'
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="{MAX_POSITIONS}"}} 1\n')
    store = Store()
    interpreter = ScrapeInterpreter(store)
    for at in (1.0, 2.0):
        interpreter.accept("http://127.0.0.1:1/metrics", body, at)
    assert store.snapshot().series == () and store.snapshot().sources[0].problems == {"invalid_values": 2}


def test_a_saved_state_with_such_values_loads_with_a_warning_for_each_dropped_entry(caplog):
    key = {"upstream": "vllm.log", "model_name": "m", "engine": "0", "source": "log"}
    good = {"key": key, "totals": {"intervals": 1, "draft_tokens": 8, "accepted_tokens": 3, "drafts": 4, "accepted_per_position": [2, 1]}}
    saved = {
        "series": [
            good,
            {"key": {**key, "model_name": "huge"}, "totals": {**good["totals"], "drafts": HUGE}},
            {"key": {**key, "model_name": "text"}, "totals": {**good["totals"], "drafts": "many"}},
            {"key": {**key, "model_name": "negative"}, "totals": {**good["totals"], "accepted_tokens": -5}},
            {"key": {**key, "model_name": "wide"}, "totals": {**good["totals"], "accepted_per_position": [0] * (MAX_POSITIONS + 1)}},
            "not an entry",
        ],
        "sources": [{"upstream": "vllm.log", "lines": 10, "variants": {"V1-e": HUGE, "V1-d": 2}}, {"lines": 3}],
    }
    store = Store({"5m": 300})
    with caplog.at_level(logging.WARNING):
        assert restore_counters(store, saved) == 1
    said = [record.getMessage() for record in caplog.records]
    assert sum("saved series counters unusable" in message for message in said) == 5  # was: silently dropped
    assert any("saved format counts entry unusable" in message for message in said)
    assert any("saved source counters unusable" in message for message in said)
    assert "specdecode_drafts_total" in MetricsRenderer(store, DeriveSettings()).render()


@pytest.mark.parametrize("field, value", [("fingerprint_length", -1), ("fingerprint_length", 10**9), ("offset", -5), ("offset", True),
                                          ("fingerprint_length", 3.5)])
def test_a_saved_position_out_of_its_range_is_refused(field, value):
    entry = {"path": "vllm.log", "fingerprint": "0" * 64, "fingerprint_length": 4, "offset": 4, field: value}
    with pytest.raises(TypeError):  # was: -1 read the whole log into memory at the next resume
        FilePosition.from_json(entry)
