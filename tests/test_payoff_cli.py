"""Pay-off at load end to end on real files: `calibrate` on a real plain vLLM's log, `analyze
--calibration` on a real speculating one, the gauges /metrics renders, and clear errors."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from exporter import metric_names as names
from exporter.cli.main import main
from exporter.cli.settings import SERVE_DEFAULTS, serve_settings
from exporter.config import DeriveSettings
from exporter.expose.metrics import MetricsRenderer
from exporter.judge.memory import health_memory
from exporter.records import Interval, SeriesKey, SourceHealth, SpecConfig
from exporter.report.calibrate import calibrate
from exporter.state.reference import ReferenceRule
from exporter.state.store import Store

GOLDEN = Path(__file__).resolve().parent / "golden"
PLAIN = GOLDEN / "vllm-0.26.0" / "plain-ladder-h200" / "run-2" / "server.log.gz"
SPECULATING = GOLDEN / "vllm-0.24.0" / "draft_model-noisy-k8" / "server.log"  # stats lines and spec lines, k = 8, 16 clients


def test_calibrate_then_analyze_gives_each_series_its_payoff(tmp_path):
    runner = CliRunner()
    made = runner.invoke(main, ["calibrate", str(PLAIN), "--out", str(tmp_path / "calibration.json")])
    assert made.exit_code == 0, made.output
    assert "plain decoding at 9 loads" in made.output
    report = runner.invoke(main, ["analyze", str(SPECULATING), "--calibration", str(tmp_path / "calibration.json"), "--format", "json"])
    assert report.exit_code == 0, report.output
    (series,) = json.loads(report.output)["series"]
    payoff = series["payoff"]
    assert payoff["reason"] is None and payoff["calibration"] == str(PLAIN)
    (band,) = payoff["by_load"]  # one steady load: 16 clients
    assert 13 <= band["running"] <= 17 and band["drafted_length"] == 8.0
    # the server's own tokens/s over the calibration's at that load, whatever their hardware (a tiny model on one GPU, an 8B on another)
    assert band["speedup"] == pytest.approx(band["tokens_per_second"] / band["plain_tokens_per_second"], rel=1e-3)
    assert payoff["num_speculative_tokens_per_batch_size"][0][0] == 1
    assert series["load"]["speculated_share"] > 0.95 and series["load"]["configured_k"] == 8
    table = runner.invoke(main, ["analyze", str(SPECULATING), "--calibration", str(tmp_path / "calibration.json")])
    assert "pay-off at load" in table.output and "num_speculative_tokens_per_batch_size" in table.output


def test_without_a_calibration_the_report_says_how_to_make_one():
    report = CliRunner().invoke(main, ["analyze", str(SPECULATING), "--format", "json"])
    (series,) = json.loads(report.output)["series"]
    assert "specdecode-exporter calibrate" in series["payoff"]["reason"] and series["payoff"]["by_load"] == []


def test_a_bad_calibration_is_a_usage_error_naming_the_flag(tmp_path):
    runner = CliRunner()
    for content, why in (("{", "not JSON"), ('{"kind": "other"}', "not a specdecode-exporter plain-decoding calibration")):
        path = tmp_path / "calibration.json"
        path.write_text(content)
        result = runner.invoke(main, ["analyze", str(SPECULATING), "--calibration", str(path)])
        assert result.exit_code == 2 and "--calibration" in result.output and why in result.output
    result = runner.invoke(main, ["analyze", str(SPECULATING), "--calibration", str(tmp_path / "missing.json")])
    assert result.exit_code == 2 and "cannot read" in result.output
    with pytest.raises(click.BadParameter, match="cannot read"):
        serve_settings(dataclasses.replace(SERVE_DEFAULTS, logs=("x.log",), calibration_path=str(tmp_path / "missing.json")))


def test_calibrate_says_why_it_cannot():
    result = CliRunner().invoke(main, ["calibrate", str(SPECULATING)])
    assert result.exit_code == 1 and "this server speculates" in result.output


def _loaded(key: SeriesKey, end: float, running: int) -> Interval:
    positions = (74, 55, 40, 29)
    return Interval(key=key, end=end, start=end - 5.0, seconds=5.0, draft_tokens=400, accepted_tokens=sum(positions), drafts=100,
                    accepted_per_position=positions, k=4, drafts_range=(100, 100), running=running, running_before=running,
                    generation_throughput=2000.0)


def test_metrics_carry_the_payoff_gauges_as_the_catalogue_documents():
    settings = DeriveSettings(calibration=calibrate([str(PLAIN)]))
    store = Store({"1m": 60.0, "5m": 300.0}, clock=lambda: 10_000.0, health=health_memory(settings, ReferenceRule(min_drafts=100), 300.0))
    key = SeriesKey("http://127.0.0.1:8000/metrics", "m", "0", "metrics")
    store.record_config(key.upstream, SpecConfig(method="draft_model", num_speculative_tokens=4))
    store.post_health(key.upstream, SourceHealth(up=True), kind="metrics")
    for step in range(6):  # quiet (speculation pays: one request) then busy (it does not): a break-even between
        store.record_interval(_loaded(key, 9_970.0 + 5 * step, 1 if step < 3 else 128))
    counts: Counter[str] = Counter()
    values = {}
    for family in text_string_to_metric_families(MetricsRenderer(store, settings).render()):
        for sample in family.samples:
            if sample.name.startswith(names.PREFIX) and sample.labels.get("model_name") == "m" and "upstream" in sample.labels:
                counts[sample.name] += 1
                values[sample.name] = sample.value
    documented = names.series_samples(4, payoff=True)
    speedup = names.EXPECTED_SPEEDUP.sample_name
    assert 1 <= counts.pop(speedup) <= documented.pop(speedup)
    assert documented == dict(counts)
    # 2000 tokens/s at ~65 running (the 1m window's mean) against plain decoding's ~10,000 there: slower, and the verdict says so
    assert values[names.PAYOFF_SPEEDUP.name] < 0.3 and values[names.PAYOFF_BEST_K.name] == 0
    assert 1 < values[names.BREAK_EVEN_RUNNING.name] < 128
    assert values[names.SPECULATED_SHARE.name] < 1.0
    info = {s.labels["reason"] for f in text_string_to_metric_families(MetricsRenderer(store, settings).render()) for s in f.samples
            if s.name == names.VERDICT_INFO.sample_name}
    assert info == {"slower_than_plain"}
